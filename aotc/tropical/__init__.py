"""Tropical matrix products on the arrays you already have.

    from aotc import tropical
    c = tropical.matmul(a, b, "maxplus")              # C[i,j] = max_k A[i,k] + B[k,j]
    c, k = tropical.matmul_argmax(a, b, "minplus")    # and the k that won
    ga, gb = tropical.matmul_backward(gc, k, a, b, "maxplus")

Inputs are NumPy arrays, PyTorch tensors (CPU or CUDA), or anything with
``__cuda_array_interface__`` (CuPy, pycuda); the result is the same kind, on
the same device. JAX arrays run through ``jax.experimental.buffer_callback``,
eagerly and under ``jit``, ``grad`` and ``vmap``, and give JAX arrays
(``aotc.kernels._jax``). Other arrays that speak only DLPack (``__dlpack__``:
TensorFlow) are read in place too: on the CPU the result is a NumPy array; on
a CUDA device pass ``out=`` (a tensor or CUDA array), since aotc cannot make
an array of their kind. 3-D inputs run batched, and a 2-D operand broadcasts over the
batch. The dtype comes from the inputs; a counting semiring takes and returns
a trailing axis of length 2 (value, count). PyTorch tensors go through
custom ops, ``torch.ops.tropical.gemm_forward`` and kin (one per pass), with
autograd and fake implementations for ``torch.compile`` (``aotc.kernels``).

M, N or the batch 0 gives an empty result and launches nothing; K = 0
launches the kernels, which, with no term to fold, write the semiring zero
everywhere (argmax -1). ``out=`` and ``k_out=`` must be writable, contiguous,
of the result's shape, dtype and device, and share no memory with an input or
with each other. A tall matrix (more than 65,535 tiles of rows) or a batch
of more than 65,535 products passes CUDA's grid limit: it is launched in parts.

Bool matrices for an or/and semiring can also be packed 32 values to a word
(``pack_bool``) and multiplied packed (``matmul_packed``), which folds 32
terms with one AND; repeated products (reachability, ``R = R (x) A``) can stay
packed (``packed=True``). ``matmul(a, b, "andor")`` packs by itself when it
pays (see ``Tropical._packs``).

Host arrays are used in place on host-memory backends (the CPU emulator) and
copied to the device and back on GPU backends. Inputs whose rows are
contiguous are read where they lie; others (a transpose) are copied to
row-major first. Errors are one line naming the function called and the
argument (``tropical.matmul: b: dtype f64 does not match a's f32``).

A call runs on its operands' device (a tensor's device; a CUDA array's, or
failing that the driver's answer for its pointer), in that device's context,
on ``stream=`` or the framework's current stream there; host operands go to
the current device (``torch.cuda.set_device``). Operands on two devices are
refused. Before capturing calls into a CUDA graph, ``preload()`` their
kernels and pass device arrays: a call that would load a module or stage a
host array during capture raises ``CaptureError``.

The module's functions use the installed ``tropical`` library. Another
library built from the same templates (another project's manifest) has its
own handle, a ``Tropical``, with the same functions::

    lib = aotc.load("/path/to/otherlib")
    c = tropical.over(lib).matmul(a, b, "maxmin")

Handles share nothing but the backend, so any number of libraries are used
side by side; ``set_library`` changes which one the module's functions use.

The library is declared like any other (``kernels/manifest.yaml``), and its
products are bound by aotc's generated bindings (``aotc.kernels``): the
semiring layer over them is ``aotc.tropical._api``.
"""

from __future__ import annotations

import os
from _thread import allocate_lock

from aotc.kernels._traced import constant_when_traced, keep, made
from aotc.tropical._api import PACK_MIN_K as PACK_MIN_K  # the K from which 2-D NumPy bool operands pack
from aotc.tropical._api import REFUSALS, Tropical

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "PackedBool",
    "Tropical",
    "matmul",
    "matmul_argmax",
    "matmul_backward",
    "matmul_packed",
    "matmul_packed_argmax",
    "over",
    "pack_bool",
    "preload",
    "semirings",
    "set_library",
]

_shared: dict[str, Any] = {"api": None}  # the Tropical the module's functions use
_lock = allocate_lock()  # threading.Lock itself, without importing threading
# The key of a library's handle in ``Library.extensions``: the runtime keeps
# the handle for us without knowing what it is.
_EXTENSION = __name__


def over(library: Any) -> Tropical:
    """The ``Tropical`` handle over ``library`` (an ``aotc.load()`` result): the
    same handle on every call, so its bindings' call plans are reused."""
    from aotc.errors import ArgumentTypeError, echo

    extensions = getattr(library, "extensions", None)
    if not isinstance(extensions, dict) or not hasattr(library, "index"):
        msg = f"library: expected a kernel library (an aotc.load() result), got {echo(library)}"
        raise ArgumentTypeError(msg)
    api = extensions.get(_EXTENSION)
    if api is None:
        api = made(_make_handle(library))
    return api


@constant_when_traced  # made eagerly where a first use is traced by torch.compile (aotc.kernels._traced)
def _make_handle(library: Any) -> str:
    """Make ``library``'s handle (one, even under a race); returns its key in ``MADE`` (aotc.kernels._traced)."""
    from aotc.kernels._keys import made_key

    api = library.extensions.setdefault(_EXTENSION, Tropical(library))
    return keep(made_key("tropical", id(api)), api)


def set_library(library: Any = None, *, backend: Any = None) -> Any:
    """Use ``library`` (a Library, an installed name or a folder) for the module's
    functions; None goes back to the installed tropical library. Returns the Library.

    This changes the process-wide default; to use a second library beside the
    default, use its own handle, ``tropical.over(aotc.load(folder))``, instead.
    """
    if isinstance(library, (str, os.PathLike)):
        from aotc.runtime.library import load

        library = load(library, backend=backend)
    api = None if library is None else over(library)
    with _lock:
        _shared["api"] = api
    return library


def _api() -> Tropical:
    api = _shared["api"]
    if api is None:
        api = made(_load_default())
    return api


@constant_when_traced  # loaded eagerly where a first use is traced by torch.compile (aotc.kernels._traced)
def _load_default() -> str:
    """Load the installed tropical library as the module functions' (where none
    is set); returns the key of its handle in ``MADE`` (aotc.kernels._traced)."""
    with _lock:
        if _shared["api"] is None:
            from aotc.runtime.library import load

            _shared["api"] = over(load("tropical"))
        api = _shared["api"]
    from aotc.kernels._keys import made_key

    return keep(made_key("tropical", id(api)), api)


def _library() -> Any:
    """The Library the module's functions use."""
    return _api().library


def semirings() -> tuple[str, ...]:
    """The semiring names the library has kernels for."""
    return _api().semirings()


def preload(semirings: Any = None, dtypes: Any = None, *, device: Any = None) -> tuple[str, ...]:
    """Load the kernels of ``semirings`` and ``dtypes`` (None: all) on ``device``
    (None: the current device) now, off the hot path, so that calls captured
    into a CUDA graph (``torch.cuda.graph``) load nothing. Returns their names."""
    return _api().preload(semirings, dtypes, device)


def matmul(a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, stream: Any = None) -> Any:
    """``C = A (x) B`` under ``semiring``; see the module docstring."""
    api = _shared["api"] or _api()
    # A plain semiring's product is its forward kernels' call: the guard of
    # a's type (the plan a full call left; aotc.kernels._entry), asked here a
    # call level less, else the entry. Anything else takes Tropical.matmul,
    # which checks and packs.
    if type(semiring) is str and semiring in api._plain:  # noqa: SLF001 - the handle's own table
        try:
            guard = api._forward_guards.get(id(type(a)))  # noqa: SLF001
            if guard is not None:
                result = guard(a, b, out=out, semiring=semiring, stream=stream)
                if result is not None:
                    return result
            return api._forward.entry(a, b, out=out, semiring=semiring, stream=stream)  # noqa: SLF001
        except REFUSALS as exc:
            exc.function = "tropical.matmul"
            raise
    return api.matmul(a, b, semiring, out=out, stream=stream)


def matmul_argmax(
    a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, k_out: Any = None, stream: Any = None
) -> tuple[Any, Any]:
    """``(C, k)``: the product and, per element, the k of its best term (ties
    to the smallest k; -1 where no term beats the semiring zero)."""
    api = _shared["api"] or _api()
    if type(semiring) is str and semiring in api._plain_argmax:  # noqa: SLF001 - as matmul's
        try:
            guard = api._argmax_guards.get(id(type(a)))  # noqa: SLF001
            if guard is not None:
                result = guard(a, b, out=out, k_out=k_out, semiring=semiring, stream=stream)
                if result is not None:
                    return result
            return api._argmax.entry(a, b, out=out, k_out=k_out, semiring=semiring, stream=stream)  # noqa: SLF001
        except REFUSALS as exc:
            exc.function = "tropical.matmul_argmax"
            raise
    return api.matmul_argmax(a, b, semiring, out=out, k_out=k_out, stream=stream)


def matmul_backward(grad_c: Any, k: Any, a: Any, b: Any, semiring: str = "maxplus", *, stream: Any = None) -> tuple[Any, Any]:
    """``(grad_a, grad_b)`` from ``grad_c`` and the ``k`` that ``matmul_argmax``
    returned; see ``Tropical.matmul_backward``."""
    return (_shared["api"] or _api()).matmul_backward(grad_c, k, a, b, semiring, stream=stream)


def matmul_packed(pa: Any, pb: Any, semiring: str = "andor", *, packed: bool = False, out: Any = None, stream: Any = None) -> Any:
    """Packed bool product; see ``Tropical.matmul_packed``."""
    return (_shared["api"] or _api()).matmul_packed(pa, pb, semiring, packed=packed, out=out, stream=stream)


def matmul_packed_argmax(
    pa: Any, pb: Any, semiring: str = "andor", *, out: Any = None, k_out: Any = None, stream: Any = None
) -> tuple[Any, Any]:
    """``(C, k)`` for packed operands; see ``Tropical.matmul_packed_argmax``."""
    return (_shared["api"] or _api()).matmul_packed_argmax(pa, pb, semiring, out=out, k_out=k_out, stream=stream)


def pack_bool(a: Any, axis: int = 1) -> Any:
    """``a`` (a 2-D NumPy bool array) packed 32 values to a uint32 word along
    ``axis``: 1 for a left operand (each row), 0 for a right one (each column).
    Returns a ``PackedBool``; its ``unpack()`` gives the bool matrix back."""
    from aotc.tropical._packed import pack_bool as pack

    return pack(a, axis)


def __getattr__(name: str) -> Any:
    if name == "PackedBool":  # imported on first use, like NumPy itself
        from aotc.tropical._packed import PackedBool

        return PackedBool
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
