"""Loads an emulator shared library with ctypes and launches its kernels.

Arguments are ctypes values, one per kernel parameter:
``ctypes.c_void_p(array.ctypes.data)`` for a pointer, ``ctypes.c_int(M)``,
``ctypes.c_longlong(lda)``, and so on. Each is checked against the
parameter's size and kind (pointer, integer, floating point) before the
launch, so a wrong argument list fails with TypeError instead of reading
garbage.

How a block's threads run is chosen per library, by argument or else by the
environment: ``AOTC_EMULATOR_THREADING=fibers`` (the default: fibers on one
OpenMP worker per processor, or ``AOTC_EMULATOR_WORKERS``) or ``os-threads``
(one OpenMP thread per CUDA thread).

The order blocks run in is read from the environment at every launch, so a
test can change it between launches: ``AOTC_EMULATOR_BLOCK_ORDER`` unset or
``in-order`` (x fastest), ``reverse``, or ``shuffle[:SEED]`` (a permutation
drawn from SEED). A GPU fixes no order; results that depend on it show up.

The OpenMP runtime reads ``OMP_WAIT_POLICY`` once, when it is loaded. Loading
a library sets it to ``passive`` unless the environment already says
otherwise: spinning threads on a few cores run several times slower.
"""

from __future__ import annotations

import ctypes
import operator
import os
import tempfile
import weakref
from collections.abc import Sequence

from aotc.errors import ArgumentError, ArgumentTypeError, UnknownKernelError, echo
from aotc.runtime.emulator.faults import CHECK_STATUSES, check_failure, log_note

__all__ = [
    "ABI_VERSION",
    "THREADINGS",
    "EmulatorKernel",
    "EmulatorLibrary",
    "load_library",
    "load_library_bytes",
]

ABI_VERSION = 1
THREADINGS = ("fibers", "os-threads")  # index = the library's threading code
_MAX_PARAMETERS = 256
_LAUNCH_ARGTYPES = [
    ctypes.POINTER(ctypes.c_uint),
    ctypes.POINTER(ctypes.c_uint),
    ctypes.c_ulonglong,
    ctypes.POINTER(ctypes.c_void_p),
]
_POINTER_CODES = frozenset("PzZ")
_SIGNED_CODES = frozenset("bchilq")
_UNSIGNED_CODES = frozenset("BHILQ?")
_FLOAT_CODES = frozenset("fdg")
_KIND_NAMES = {"p": "a pointer", "i": "an integer", "f": "a floating-point value", "o": "a struct"}
_CTYPES_VALUES = (ctypes._SimpleCData, ctypes._Pointer, ctypes.Structure, ctypes.Union)  # noqa: SLF001


def _argument_kind(value: object) -> str:
    if isinstance(value, ctypes._Pointer):  # noqa: SLF001 - ctypes has no public base class
        return "p"
    code = getattr(type(value), "_type_", None)
    if isinstance(code, str):
        if code in _POINTER_CODES:
            return "p"
        if code in _SIGNED_CODES or code in _UNSIGNED_CODES:
            return "i"
        if code in _FLOAT_CODES:
            return "f"
    return "o"


def _dim3(value: int | Sequence[int], what: str) -> ctypes.Array[ctypes.c_uint]:
    try:
        dims = (operator.index(value),) if not isinstance(value, Sequence) else tuple(map(operator.index, value))
    except TypeError:
        dims = ()
    if not 1 <= len(dims) <= 3 or not all(0 <= d < 2**32 for d in dims):
        msg = f"{what} must be an int or 1 to 3 ints in [0, 2**32), got {value!r}"
        raise ArgumentError(msg)
    return (ctypes.c_uint * 3)(*dims, *(1,) * (3 - len(dims)))


class EmulatorKernel:
    """One kernel of a loaded emulator library."""

    __slots__ = ("_checked", "_launch", "kinds", "library", "max_threads", "sizes", "symbol")

    def __init__(self, library: EmulatorLibrary, symbol: str) -> None:
        try:
            self._launch = getattr(library.cdll, f"aotc_emu_launch__{symbol}")
            describe = getattr(library.cdll, f"aotc_emu_describe__{symbol}")
        except AttributeError:
            msg = f"{library.path}: no kernel {symbol!r} (was it in the symbol list at compile time?)"
            raise UnknownKernelError(msg) from None
        self._launch.argtypes = _LAUNCH_ARGTYPES
        self._launch.restype = ctypes.c_int
        sizes = (ctypes.c_ulonglong * _MAX_PARAMETERS)()
        kinds = ctypes.create_string_buffer(_MAX_PARAMETERS)
        max_threads = ctypes.c_uint()
        count = describe(sizes, kinds, _MAX_PARAMETERS, ctypes.byref(max_threads))
        self.library = library
        self.symbol = symbol
        self._checked = hasattr(library.cdll, "aotc_emu_note")  # built with AOTC_EMULATOR_CHECK
        self.sizes: tuple[int, ...] = tuple(sizes[:count])
        self.kinds: str = kinds.raw[:count].decode("ascii").replace("u", "i")
        self.max_threads: int = max_threads.value

    def _check_arguments(self, args: Sequence[ctypes._CData]) -> None:
        if len(args) != len(self.sizes):
            msg = f"kernel {self.symbol} takes {len(self.sizes)} arguments, got {len(args)}"
            raise ArgumentTypeError(msg)
        for index, (value, size, kind) in enumerate(zip(args, self.sizes, self.kinds)):
            if not isinstance(value, _CTYPES_VALUES):
                given = type(value).__name__
                msg = f"argument {index} of kernel {self.symbol} must be a ctypes value, got {given}"
                raise ArgumentTypeError(msg)
            given = _argument_kind(value)
            if ctypes.sizeof(value) != size or (kind != "o" and given != kind):
                msg = (
                    f"argument {index} of kernel {self.symbol}: the parameter takes {_KIND_NAMES[kind]} of "
                    f"{size} bytes, got {type(value).__name__} ({ctypes.sizeof(value)} bytes)"
                )
                raise ArgumentTypeError(msg)

    def launch(
        self,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        shared_bytes: int,
        args: Sequence[ctypes._CData],
    ) -> None:
        """Runs the kernel over ``grid`` blocks of ``block`` threads; returns when done."""
        self._check_arguments(args)
        params = (ctypes.c_void_p * max(len(args), 1))(*map(ctypes.addressof, args))
        self.launch_params(grid, block, shared_bytes, params)

    def check_geometry(self, grid: int | Sequence[int], block: int | Sequence[int], shared_bytes: int) -> None:
        """Raise the ValueError a launch of this shape would (the checks
        ``cuLaunchKernel`` makes before it queues anything); run nothing."""
        grid3, block3 = tuple(_dim3(grid, "grid")), tuple(_dim3(block, "block"))
        status = 0
        if 0 in block3 or block3[0] > 1024 or block3[1] > 1024 or block3[2] > 64:
            status = 1
        elif 0 in grid3 or grid3[0] > 2**31 - 1 or grid3[1] > 65535 or grid3[2] > 65535:
            status = 4
        elif block3[0] * block3[1] * block3[2] > 1024:
            status = 2
        elif block3[0] * block3[1] * block3[2] > self.max_threads:
            status = 3
        elif not 0 <= shared_bytes <= self.library.max_dynamic_shared_bytes:
            status = 5
        if status:
            raise self._launch_error(status, grid3, block3, shared_bytes)

    def launch_params(
        self,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        shared_bytes: int,
        params: ctypes.Array[ctypes.c_void_p],
    ) -> None:
        """Like :meth:`launch`, with cuLaunchKernel's ``kernelParams`` built by the
        caller: ``params[i]`` is the address of argument i. Nothing is checked."""
        grid3, block3 = _dim3(grid, "grid"), _dim3(block, "block")
        if not 0 <= shared_bytes < 2**64:
            msg = f"shared_bytes must be in [0, 2**64), got {shared_bytes}"
            raise ArgumentError(msg)
        status = self._launch(grid3, block3, shared_bytes, params)
        if self._checked:
            log_note(self)
        if status in CHECK_STATUSES:  # AOTC_EMULATOR_CHECK found a fault, or an assert() failed
            raise check_failure(self, status)
        if status != 0:
            raise self._launch_error(status, tuple(grid3), tuple(block3), shared_bytes)

    def _launch_error(
        self, status: int, grid: tuple[int, ...], block: tuple[int, ...], shared: int
    ) -> Exception:
        threads = block[0] * block[1] * block[2]
        bounds = f"__launch_bounds__({self.max_threads}) of {self.symbol}"
        shared_limit = self.library.max_dynamic_shared_bytes
        messages = {
            1: f"block {block} is invalid: each size must be at least 1, with x, y <= 1024 and z <= 64",
            2: f"block {block} has {threads} threads; CUDA allows at most 1024",
            3: f"block {block} has {threads} threads, more than {bounds}",
            4: f"grid {grid} is invalid: each size must be at least 1, with x < 2**31 and y, z <= 65535",
            5: f"{shared} bytes of dynamic shared memory exceed the emulator's {shared_limit}",
            6: (
                "OpenMP started fewer threads than requested: unset OMP_THREAD_LIMIT and OMP_DYNAMIC, "
                "and do not launch from inside an OpenMP parallel region"
            ),
            8: "cannot map the fibers' stacks (out of memory)",
            9: (
                "AOTC_EMULATOR_BLOCK_ORDER must be in-order, reverse, shuffle or shuffle:SEED (a whole number), "
                f"got {echo(os.environ.get('AOTC_EMULATOR_BLOCK_ORDER', ''))}"
            ),
            10: f"grid {grid} has more blocks than AOTC_EMULATOR_BLOCK_ORDER can reorder (2**24)",
            13: "a thread overflowed its 256 KiB fiber stack (deep recursion or a large local array)",
            14: (
                "lanes of a warp wait at a warp collective whose mask names a lane that waits elsewhere, "
                "where a GPU would hang (AOTC_EMULATOR_CHECK=sync names the lanes and lines)"
            ),
        }
        message = f"launching {self.symbol}: " + messages.get(status, f"status {status}")
        return RuntimeError(message) if status in (6, 8, 13, 14) else ValueError(message)


class EmulatorLibrary:
    """A loaded emulator shared library; its kernels by symbol."""

    __slots__ = ("__weakref__", "_kernels", "cdll", "max_dynamic_shared_bytes", "path", "threading")

    def __init__(
        self, path: str | os.PathLike[str], *, threading: str | None = None, workers: int | None = None
    ) -> None:
        threading = threading or os.environ.get("AOTC_EMULATOR_THREADING") or "fibers"
        if threading not in THREADINGS:
            msg = f"emulator threading must be one of {', '.join(THREADINGS)}, got {threading!r}"
            raise ArgumentError(msg)
        if workers is None:
            workers_text = os.environ.get("AOTC_EMULATOR_WORKERS") or "0"
            if not workers_text.isdigit():
                msg = f"AOTC_EMULATOR_WORKERS must be a whole number, got {workers_text!r}"
                raise ArgumentError(msg)
            workers = int(workers_text)
        if workers < 0:
            msg = f"workers must be 0 (one per processor) or more, got {workers}"
            raise ArgumentError(msg)
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        self.path = os.fspath(path)
        self.cdll = ctypes.CDLL(self.path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        abi = getattr(self.cdll, "aotc_emu_abi_version", None)
        version = abi() if abi is not None else None
        if version != ABI_VERSION:
            msg = f"{self.path} is not an aotc emulator library of ABI {ABI_VERSION} (found {version})"
            raise ArgumentError(msg)
        self.cdll.aotc_emu_max_dynamic_shared_bytes.restype = ctypes.c_ulonglong
        self.max_dynamic_shared_bytes: int = self.cdll.aotc_emu_max_dynamic_shared_bytes()
        if _forked:  # libgomp's pool is the parent's: one worker, as fibers (_after_fork)
            threading, workers = "fibers", 1
        self.cdll.aotc_emu_configure(THREADINGS.index(threading), workers)
        self.threading = threading
        self._kernels: dict[str, EmulatorKernel] = {}
        _loaded.add(self)

    def kernel(self, symbol: str) -> EmulatorKernel:
        """The kernel ``symbol``; KeyError if the library has no trampoline for it."""
        kernel = self._kernels.get(symbol)
        if kernel is None:
            kernel = self._kernels[symbol] = EmulatorKernel(self, symbol)
        return kernel

    def launch(
        self,
        symbol: str,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        shared_bytes: int,
        args: Sequence[ctypes._CData],
    ) -> None:
        """Runs kernel ``symbol``; see :meth:`EmulatorKernel.launch`."""
        self.kernel(symbol).launch(grid, block, shared_bytes, args)


# fork() copies OpenMP's (libgomp's) record of its worker threads, not the
# threads: in a child of a process that ran a kernel, a team of more than one
# waits for them for ever (a DataLoader's or a process pool's forked workers).
# So a forked child runs every launch on one worker, as fibers: the same
# results, one core. _forked stays set in the child's own children too.
_loaded: weakref.WeakSet[EmulatorLibrary] = weakref.WeakSet()
_forked = False


def _after_fork() -> None:
    global _forked  # noqa: PLW0603 - the process's own state, set once in a forked child
    if _loaded or _forked:
        _forked = True
        for library in list(_loaded):
            library.cdll.aotc_emu_configure(THREADINGS.index("fibers"), 1)
            library.threading = "fibers"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


# The dynamic loader hands back the library it already loaded under a path
# instead of opening the path again. These remember what each path held, and
# keep memory files open so that their /proc/self/fd names are never reused.
_LOADED_FILES: dict[str, tuple[int, int, int, int]] = {}
_PINNED_DESCRIPTORS: list[int] = []


def _file_identity(path: str) -> tuple[int, int, int, int]:
    stat = os.stat(path)
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def load_library(
    path: str | os.PathLike[str], *, threading: str | None = None, workers: int | None = None
) -> EmulatorLibrary:
    """Loads an emulator library from a file.

    Loading one path twice shares one library, its threading setting included.
    A path whose file changed since it was loaded is loaded afresh from its bytes.
    """
    path = os.path.abspath(os.fspath(path))
    identity = _file_identity(path)
    if _LOADED_FILES.setdefault(path, identity) != identity:
        with open(path, "rb") as handle:
            return load_library_bytes(handle.read(), threading=threading, workers=workers)
    return EmulatorLibrary(path, threading=threading, workers=workers)


def load_library_bytes(
    payload: bytes, *, threading: str | None = None, workers: int | None = None
) -> EmulatorLibrary:
    """Loads an emulator library from its bytes, with no cache file: through an
    anonymous memory file where the OS has one, else a temp file. Every call
    loads a separate copy."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("aotc-emulator")
        _PINNED_DESCRIPTORS.append(fd)
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        return EmulatorLibrary(f"/proc/self/fd/{fd}", threading=threading, workers=workers)
    with tempfile.NamedTemporaryFile(suffix=".so", delete=False) as handle:
        handle.write(payload)
    try:
        return EmulatorLibrary(handle.name, threading=threading, workers=workers)
    finally:
        os.unlink(handle.name)
