"""``aotc.load()``: a kernel library that reads its index at load and each kernel at first use.

Loading reads ``index.json`` and nothing else, and checks what the whole
library needs: its schema, its seal (the library's name and semirings) and
its toolkit. Each kernel's entry is validated, and its checksums recomputed,
at the first use of that kernel (``aotc.index.LibraryIndex``, ``lazy=True``),
so loading costs the same for 86 kernels or 1,000. The first kernel loaded
checks, once per library, that the backend's driver is new enough for the
toolkit the index names (``aotc.runtime.driver``). The first use of a kernel
chooses its image (``select_image`` against the device), opens only that
kernel's fatbin (or compiles only its source with NVRTC, through the disk
cache), loads it through the backend and keeps a Launcher. Every later use is
a dict lookup.

All of that is per device (``aotc.runtime.devices``): a kernel used on two
GPUs is loaded twice, once in each device's primary context, with the image
chosen for each device's arch. ``preload()`` does the loading up front, so a
call captured into a CUDA graph never has to.

Nothing here imports ``typing``, ``pathlib`` or ``dataclasses`` on the way to
a launch (``tests/test_import_time.py`` holds the list): a process pays for
what it imports before its first kernel runs.
"""

from __future__ import annotations

import os
from _thread import allocate_lock  # threading.Lock itself, without importing threading

from aotc._locations import find_library
from aotc.errors import ArgumentError, ArgumentTypeError, DriverTooOldError, LibraryNotFoundError, echo
from aotc.index import INDEX_NAME
from aotc.index.library_index import LibraryIndex
from aotc.runtime.backends import get_backend
from aotc.runtime.devices import DeviceState, check_ordinal, current_device, refuse_while_capturing
from aotc.runtime.driver import check_driver, toolkit_of
from aotc.runtime.launcher import KernelSignature, Launcher, ProductGridLauncher, product_grid
from aotc.runtime.select import (
    ImageChoice,
    ImageKind,
    JitPolicy,
    KernelImages,
    Platform,
    explain_selection,
    jit_policy_from_env,
    select_image,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    from aotc.index import IndexKernel
    from aotc.runtime.backends import Backend
    from aotc.runtime.cache import DiskCache
    from aotc.runtime.driver import Toolkit

__all__ = ["Library", "installed_libraries", "kernel_images", "load", "resolve_library"]


def resolve_library(library: str | os.PathLike[str]) -> Path:
    """The folder of ``library``: an installed library's name, a folder, or an index.json path."""
    from pathlib import Path

    return Path(_library_folder(library))


def _library_folder(library: str | os.PathLike[str]) -> str:
    """``resolve_library``, as an absolute path string (no pathlib on the way to a launch)."""
    text = os.fspath(library) if isinstance(library, (str, os.PathLike)) else library
    if not isinstance(text, str) or not text.strip():
        msg = f"library: expected an installed library's name or a folder, got {echo(library)}"
        raise ArgumentError(msg)
    looks_like_path = isinstance(library, os.PathLike) or os.sep in text or "/" in text or text.startswith((".", "~"))
    if looks_like_path or os.path.isfile(os.path.join(text, INDEX_NAME)):
        path = os.path.realpath(os.path.expanduser(text))
        is_index = os.path.basename(path) == INDEX_NAME and os.path.isfile(path)
        return os.path.dirname(path) if is_index else path
    # aotc's own libraries first; a package's (its aotc.libraries entry point) only for other names.
    return find_library(text)


def installed_libraries() -> list[str]:
    """Names of the kernel libraries installed with aotc, and of those packages
    declare (``aotc.libraries`` entry points; see ``aotc._locations``)."""
    from aotc._locations import installed_libraries as names

    return names()


def kernel_images(index: LibraryIndex, name: str) -> KernelImages:
    """What ``select_image`` needs to know about one kernel of ``index``."""
    kernel = index.kernel(name)
    return KernelImages(kernel.sass, kernel.ptx, index.ptx_toolkit, name=name)


class Library:
    """One kernel library; see the module docstring. Thread-safe."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        backend: Backend | str | None = None,
        cache: DiskCache | None = None,
        device: Any = None,
    ) -> None:
        self.folder = os.fspath(directory)
        if not os.path.isfile(os.path.join(self.folder, INDEX_NAME)):
            from aotc.errors import listing

            known = listing(installed_libraries())
            msg = f"no kernel library at {self.folder} ({INDEX_NAME} not found; installed libraries: {known})"
            raise LibraryNotFoundError(msg)
        # The library-wide fields checked now; each kernel's entry at its first use,
        # its files then too (aotc.index.LibraryIndex, lazy).
        self.index = LibraryIndex.open(self.folder, lazy=True)
        self.name: str = self.index.name
        # None for indexes written before the build recorded its toolkit: no driver check.
        self.toolkit: Toolkit | None = toolkit_of(self.index)
        self._driver_checked = self.toolkit is None
        self._driver_problem: str | None = None
        self._backend_spec = backend if isinstance(backend, str) else None
        # A backend instance is one device's: the library then runs on that device only.
        self._fixed_backend: Backend | None = backend if not isinstance(backend, (str, type(None))) else None
        if self._fixed_backend is not None:
            fixed = getattr(self._fixed_backend, "ordinal", 0)
            if device is not None and check_ordinal(device) != fixed:
                msg = f"device: {echo(device)}, but the backend given is device {fixed}'s"
                raise ArgumentError(msg)
            device = fixed
        # None: each call runs on the current device (aotc.runtime.devices).
        self.device: int | None = None if device is None else check_ordinal(device)
        self._cache = cache
        self._mutex = allocate_lock()
        self._devices: dict[int, DeviceState] = {}
        self._asks_current: Backend | None = None  # the backend kind's device 0, asked which device is current
        # Per-library state of the packages built over the runtime, keyed by their
        # module name (an API keeps its handle here), so the runtime imports none of them.
        self.extensions: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<aotc.Library {self.name!r} at {self.folder}: {len(self)} kernels, {len(self.loaded)} loaded>"

    def __reduce__(self) -> Any:
        """Refused in one line: a library holds its loaded modules, device contexts and
        locks, which no other process can use. ``aotc.kernels.over`` and
        ``tropical.over`` handles hold one, so they are refused here too."""
        msg = f"an aotc library ({self.name!r} at {self.folder}) cannot be pickled: load it in the worker, aotc.load({self.folder!r})"
        raise ArgumentTypeError(msg)  # a TypeError, as pickle's own refusals are

    @property
    def directory(self) -> Path:
        """The library folder."""
        from pathlib import Path

        return Path(self.folder)

    def __len__(self) -> int:
        return len(self.index.kernels)

    def __iter__(self) -> Iterator[str]:
        return iter(self.index.kernels)

    def __contains__(self, name: object) -> bool:
        return name in self.index.kernels

    @property
    def loaded(self) -> tuple[str, ...]:
        """Names of the kernels prepared so far on any device, in load order."""
        names: dict[str, None] = {}
        for state in list(self._devices.values()):
            names.update(dict.fromkeys(state.launchers))
        return tuple(names)

    def loaded_on(self, device: Any = None) -> tuple[str, ...]:
        """Names of the kernels prepared so far on ``device`` (None: the current device)."""
        return tuple(self.on(device).launchers)

    @property
    def backend(self) -> Backend:
        """The backend of the library's device (the current device where it has none)."""
        return self.on(None).backend

    def backend_on(self, device: Any = None) -> Backend:
        """The backend instance that launches on ``device`` (None: the current device)."""
        return self.on(device).backend

    def current_device(self) -> int:
        """The device a call that names none runs on: the library's own, or the current one."""
        if self.device is not None:
            return self.device
        backend = self._asks_current
        if backend is None:
            backend = self._asks_current = get_backend(self._backend_spec)
        return current_device(backend)

    def on(self, device: Any = None) -> DeviceState:
        """What this library keeps on ``device``: its backend, its loaded kernels."""
        ordinal = self.current_device() if device is None else device
        state = self._devices.get(ordinal)  # type: ignore[arg-type]
        if state is None:
            ordinal = check_ordinal(ordinal)
            with self._mutex:
                state = self._devices.get(ordinal)
                if state is None:
                    state = self._devices[ordinal] = DeviceState(ordinal, self._backend_for(ordinal))
        return state

    def _backend_for(self, ordinal: int) -> Backend:
        fixed = self._fixed_backend
        if fixed is None:
            return get_backend(self._backend_spec, ordinal)
        if ordinal != self.device:
            msg = f"device: a call on device {ordinal}, but this library was loaded with device {self.device}'s backend"
            raise ArgumentError(msg)
        return fixed

    # -- the per-call surface ------------------------------------------------

    def kernel(self, name: str, device: Any = None, stream: Any = None) -> Launcher:
        """The launcher of kernel ``name`` on ``device`` (None: the current device),
        loading it on first use; refused if it is not loaded there yet while
        ``stream`` (None: no stream to ask) is being captured."""
        state = self.on(device)
        launcher = state.launchers.get(name)
        if launcher is None:
            refuse_while_capturing(state.backend, stream, f"loading kernel {name!r}")
            launcher = self._load(name, state)
        return launcher

    __getitem__ = kernel

    def launch(self, name: str, *args: int, stream: Any = 0, device: Any = None) -> None:
        """``lib.kernel(name, device, stream)(*args, stream=stream)``: refused while
        ``stream`` is being captured into a CUDA graph if the kernel is not loaded yet."""
        self.kernel(name, device, stream)(*args, stream=stream)

    def preload(self, kernels: Any = None, device: Any = None) -> tuple[str, ...]:
        """Load ``kernels`` (names; None: every kernel of the library) on ``device``
        (None: the current device) now, off the hot path: a CUDA graph captured
        later can then launch them. Returns the names loaded."""
        state = self.on(device)
        names = tuple(self.index.kernels) if kernels is None else _names(kernels)
        for name in names:
            if name not in state.launchers:
                self._load(name, state)
        return names

    # -- what doctor and tools ask -------------------------------------------

    def platform(self, *, with_nvrtc: bool = True, device: Any = None) -> Platform:
        """The device (None: the current one), as ``select_image`` sees it."""
        state = self.on(device)
        platform = state.platforms.get(with_nvrtc)
        if platform is None:
            info = state.backend.device()
            archs = None
            if with_nvrtc:
                from aotc.runtime.jit import nvrtc_info

                nvrtc = nvrtc_info()
                archs = nvrtc.archs if nvrtc is not None else None
            platform = state.platforms[with_nvrtc] = Platform(info.capability, info.driver_version, archs)
        return platform

    def images(self, name: str) -> KernelImages:
        return kernel_images(self.index, name)

    def choose(self, name: str, policy: JitPolicy | str | None = None, device: Any = None) -> ImageChoice:
        """The image ``select_image`` picks for ``name`` on ``device``; raises if none fits."""
        policy = jit_policy_from_env(os.environ) if policy is None else JitPolicy(policy)
        images = self.images(name)
        # NVRTC is only consulted when no SASS fits, so a supported GPU never loads libnvrtc.
        choice = explain_selection(images, self.platform(with_nvrtc=False, device=device), policy)
        if choice.kind in (ImageKind.SASS_EXACT, ImageKind.SASS_COMPATIBLE):
            return choice
        return select_image(images, self.platform(with_nvrtc=True, device=device), policy)

    def check_driver(self, backend: Backend | None = None) -> None:
        """Raise DriverTooOldError if the backend's driver is older than this library's
        toolkit needs. Asked of the backend once; the first kernel load calls it."""
        if not self._driver_checked:
            try:
                check_driver(self.toolkit, (backend or self.backend).driver_version(), library=self.name)
            except DriverTooOldError as exc:
                self._driver_problem = str(exc)
            self._driver_checked = True  # a race checks twice, with the same answer
        if self._driver_problem is not None:
            raise DriverTooOldError(self._driver_problem)

    # -- first use -------------------------------------------------------------

    def _load(self, name: str, state: DeviceState) -> Launcher:
        kernel = self.index.kernel(name)
        with self._mutex:
            lock = state.kernel_locks.setdefault(name, allocate_lock())
        with lock:
            launcher = state.launchers.get(name)
            if launcher is None:
                launcher = state.launchers[name] = self._prepare(kernel, state)
        return launcher

    def _prepare(self, kernel: IndexKernel, state: DeviceState) -> Launcher:
        name = kernel.name
        signature = KernelSignature.from_kernel(kernel)
        # Before any image is chosen or loaded: an old driver would otherwise fail
        # in cuModuleLoadData with an error that names neither it nor the fix.
        self.check_driver(state.backend)
        backend = state.backend
        # Files are verified once per kernel: the launcher is kept.
        if backend.image_format == "source":
            # The emulator compiles the shipped .cu itself; no GPU image applies.
            source = self.index.read_verified(kernel, "source")
            module = backend.load_module(source, name=name, symbols=(signature.symbol,))
            choice, image = None, f"{kernel.source.file} built by the {backend.name} backend for device {state.ordinal}"
        else:
            choice = self.choose(name, device=state.ordinal)
            if choice.kind is ImageKind.NVRTC_JIT:
                from aotc.runtime.jit import jit_cubin

                source = self.index.read_verified(kernel, "source")
                capability = self.platform(device=state.ordinal).capability
                result = jit_cubin(source, kernel.source.file, capability, self._cache)
                data = result.cubin
                how = "compiled now" if result.compiled else "from the disk cache"
                image = f"NVRTC cubin for sm_{choice.arch} ({how})"
            else:
                data = self.index.read_verified(kernel, "fatbin")
                image = f"{kernel.fatbin.file}: {choice.kind.value} {choice.arch}"
            module = backend.load_module(data, name=name, symbols=(signature.symbol,))
        function = backend.get_function(module, signature.symbol)
        kind = ProductGridLauncher if product_grid(signature) else Launcher
        return kind(signature, backend, module, function, choice=choice, image=image)


_loaded: dict[tuple[str, int, int], Library] = {}
_loaded_lock = allocate_lock()


def load(
    library: str | os.PathLike[str] = "tropical",
    *,
    backend: Backend | str | None = None,
    cache: DiskCache | None = None,
    device: Any = None,
) -> Library:
    """Open a kernel library by installed name or folder; reads only its index.json.

    ``device`` (an ordinal or "cuda:N") is the device calls run on when their
    operands do not say; None follows the current device. With the default
    backend, cache and device, loading the same unchanged library again returns
    the same Library, with its kernels already loaded.
    """
    directory = _library_folder(library)
    if backend is not None or cache is not None or device is not None:
        return Library(directory, backend=backend, cache=cache, device=device)
    try:
        st = os.stat(os.path.join(directory, INDEX_NAME))
    except OSError:
        return Library(directory)  # raises the one-line error
    key = (directory, st.st_mtime_ns, st.st_size)
    with _loaded_lock:
        found = _loaded.get(key)
        if found is None:
            found = _loaded[key] = Library(directory)
        return found


def _names(kernels: Any) -> tuple[str, ...]:
    if isinstance(kernels, str):
        return (kernels,)
    names = tuple(kernels)
    if not all(isinstance(n, str) for n in names):
        msg = f"kernels: expected kernel names, got {echo(kernels)}"
        raise ArgumentError(msg)
    return names

