"""Arrays users pass in, seen uniformly: pointer, dtype, shape, strides, device.

Supported: NumPy arrays; PyTorch tensors (CPU or CUDA); anything with
``__cuda_array_interface__`` (CuPy arrays, pycuda GPUArrays, Numba arrays);
anything with ``__dlpack__`` and ``__dlpack_device__`` on the CPU or a CUDA
device (JAX, TensorFlow; see ``aotc.arrays.dlpack``).
Strides are kept in elements; an operand that is not row-major with
contiguous rows is copied by its own library, never read wrongly.

Nothing here imports NumPy or PyTorch: an array's type tells which it is.
"""

from __future__ import annotations

import sys

from aotc.errors import ArgumentError, ArgumentTypeError, echo
from aotc.arrays.framework_streams import on_stream

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DATA_OFFSET",
    "Operand",
    "as_operand",
    "contiguous",
    "data_pointers",
    "direct_pointer",
    "empty_like_kind",
    "fill",
    "is_row_major",
    "is_writable",
    "meets",
    "numpy_pointer",
    "overlaps",
    "span",
    "zeros_like_kind",
]

DTYPE_NAMES = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool"}
# NumPy's dtype.name is computed in Python and costs microseconds: dtypes are
# looked up by the dtype object itself, which hashes in C.
_NUMPY_KINDS = {("f", 4): "f32", ("f", 8): "f64", ("i", 4): "i32", ("i", 8): "i64", ("b", 1): "bool"}
_numpy_dtypes: dict[Any, str] = {}
_TYPESTR = {"<f4": "float32", "<f8": "float64", "<i4": "int32", "<i8": "int64", "|b1": "bool"}
_ITEMSIZE = {"f32": 4, "f64": 8, "i32": 4, "i64": 8, "bool": 1}


class Operand:
    """One array argument. ``device`` is "cpu" or "cuda:N"; ``kind`` says which
    library made it ("numpy", "torch" or "cai"). A plain slotted class: one is
    made per argument per call, so it must cost next to nothing."""

    __slots__ = ("device", "dtype", "kind", "obj", "pointer", "producer", "shape", "strides")

    def __init__(
        self, obj: Any, kind: str, dtype: str, shape: tuple[int, ...], strides: tuple[int, ...], pointer: int, device: str,
        producer: Any = None,
    ) -> None:  # fmt: skip
        self.obj = obj
        # The stream whose pending work writes the data (CUDA array interface v3's
        # "stream"), "dlpack" for a DLPack array (asked again with the call's stream), or None.
        self.producer = producer
        self.kind = kind
        self.dtype = dtype  # aotc's dtype name ("f32"), or the foreign name when unsupported
        self.shape = shape
        self.strides = strides  # in elements
        self.pointer = pointer
        self.device = device

    @property
    def on_host(self) -> bool:
        return self.device == "cpu"


_torch_names: dict[Any, str] = {}  # torch dtypes and devices -> names; formatting them costs microseconds


def _torch_name(key: Any) -> str:
    name = _torch_names.get(key)
    if name is None:
        if hasattr(key, "is_floating_point"):  # a dtype
            text = str(key).removeprefix("torch.")
            name = DTYPE_NAMES.get(text, text)
        else:
            name = "cpu" if key.type == "cpu" else f"{key.type}:{key.index or 0}"
        _torch_names[key] = name
    return name


def _torch_operand(tensor: Any, name: str) -> Operand:
    return Operand(
        tensor, "torch", _torch_name(tensor.dtype), tuple(tensor.shape), tensor.stride(), tensor.data_ptr(),
        _torch_name(tensor.device),
    )  # fmt: skip


def _numpy_dtype(dt: Any) -> str:
    name = _numpy_dtypes.get(dt)
    if name is None:
        name = _numpy_dtypes[dt] = _NUMPY_KINDS.get((dt.kind, dt.itemsize)) or dt.name
    return name


# ``array.ctypes.data`` builds a helper object on every access (about 2 us on
# a slow host). The data pointer is PyArrayObject's first field after the
# object header, part of NumPy's C ABI; it is read directly once a probe has
# shown the offset right for this interpreter and NumPy, else never.
DATA_OFFSET = 16 if sys.maxsize > 2**32 else 8  # two pointers (ctypes is imported only when NumPy is in use)
_direct_pointer: bool | None = None


def direct_pointer() -> bool:
    """Whether NumPy data pointers are read at ``id(array) + DATA_OFFSET`` here."""
    global _direct_pointer  # noqa: PLW0603 - decided once per process
    if _direct_pointer is None:
        import ctypes

        import numpy as np

        probe = np.arange(3.0)[1:]
        _direct_pointer = ctypes.c_void_p.from_address(id(probe) + DATA_OFFSET).value == probe.ctypes.data
    return _direct_pointer


def data_pointers() -> Any:
    """A ctypes pointer ``pointers`` with ``pointers[id(array) >> 3]`` the data
    pointer of the NumPy array ``array`` (64-bit, and only where
    ``direct_pointer()`` holds): its base is DATA_OFFSET, so the index is the
    object's address in words. CPython objects are at least 8-byte aligned
    (malloc's guarantee), so the shift drops nothing. Indexing returns an int
    and makes no ctypes object: about half the cost of ``c_void_p.from_address``."""
    import ctypes

    return ctypes.cast(DATA_OFFSET, ctypes.POINTER(ctypes.c_size_t))


def numpy_pointer(array: Any) -> int:
    """The data pointer of the NumPy array ``array``."""
    if _direct_pointer or direct_pointer():
        import ctypes  # already imported by direct_pointer(): a dict lookup

        return ctypes.c_void_p.from_address(id(array) + DATA_OFFSET).value or 0
    return array.ctypes.data


def _numpy_operand(array: Any, name: str) -> Operand:
    dt = array.dtype
    if not dt.isnative:
        # Kernels read native words: a big-endian input is read through a
        # swapped copy (``output`` refuses such an ``out``, which would be lost).
        array = array.astype(dt.newbyteorder("="))
        dt = array.dtype
    itemsize = dt.itemsize
    strides = array.strides
    if not array.flags.c_contiguous and any(s % itemsize for s in strides):
        array = array.copy()  # strides of part-elements (a record array's field): copy
        strides = array.strides
    if len(strides) == 2:  # the common case, spelled out: a comprehension costs more than the rest
        elements = (strides[0] // itemsize, strides[1] // itemsize)
    else:
        elements = tuple([s // itemsize for s in strides])
    return Operand(array, "numpy", _numpy_dtype(dt), array.shape, elements, numpy_pointer(array), "cpu")


def _cai_operand(obj: Any, name: str) -> Operand:
    interface = obj.__cuda_array_interface__
    shape = tuple(interface["shape"])
    typestr = interface["typestr"]
    dtype = _TYPESTR.get(typestr, typestr)
    itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 1
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], 1
        for extent in reversed(shape):
            strides.append(step)
            step *= extent
        strides = tuple(reversed(strides))
    else:
        if any(s % itemsize for s in strides):
            msg = f"{name}: strides {tuple(strides)} are not whole elements"
            raise ArgumentError(msg)
        strides = tuple(s // itemsize for s in strides)
    pointer = interface["data"][0] or 0
    ordinal = _cai_device(obj)
    # "cuda": the array does not say; the call asks the driver about its pointer.
    device = "cuda" if ordinal is None else f"cuda:{ordinal}"
    producer = interface.get("stream") if interface.get("version", 0) >= 3 else None
    if producer is not None and (type(producer) is not int or producer == 0):
        msg = f"{name}: __cuda_array_interface__ stream must be None or a stream handle other than 0, got {echo(producer)}"
        raise ArgumentError(msg)
    return Operand(obj, "cai", DTYPE_NAMES.get(dtype, dtype), shape, strides, pointer, device, producer)


def _cai_device(obj: Any) -> int | None:
    device = getattr(obj, "device", None)
    for attribute in ("id", "index"):
        value = getattr(device, attribute, None)
        if isinstance(value, int):
            return value
    return None


_READERS: dict[type, Any] = {}  # array type -> its reader, learnt on first sight


def as_operand(obj: Any, name: str) -> Operand:
    """The operand view of ``obj``; ``name`` is the argument's name for errors."""
    reader = _READERS.get(type(obj))
    if reader is not None:
        return reader(obj, name)
    module = type(obj).__module__.partition(".")[0]
    if module in ("torch", "numpy") and hasattr(obj, "shape"):
        reader = _READERS[type(obj)] = _torch_operand if module == "torch" else _numpy_operand
        return reader(obj, name)
    if hasattr(obj, "__cuda_array_interface__"):
        return _cai_operand(obj, name)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _dlpack_operand(obj, name)
    if hasattr(obj, "__array_interface__") or isinstance(obj, (list, tuple)):
        import numpy as np

        try:
            array = np.asarray(obj)
        except (ValueError, TypeError) as exc:  # ragged nesting, mixed objects
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            msg = f"{name}: NumPy cannot make an array of this {type(obj).__name__} ({reason})"
            raise ArgumentError(msg) from None
        return _numpy_operand(array, name)
    msg = f"{name}: expected a NumPy array, a PyTorch tensor, a CUDA array or a DLPack array, got {type(obj).__name__}"
    raise ArgumentTypeError(msg)


def _dlpack_operand(obj: Any, name: str) -> Operand:
    """A DLPack array: a NumPy view on the CPU, the capsule's tensor read in place on CUDA."""
    from aotc.arrays.dlpack import KDL_CPU, dlpack_device, read_capsule

    device_type, device_id = dlpack_device(obj, name)
    if device_type == KDL_CPU:
        import numpy as np

        try:
            view = np.from_dlpack(obj)
        except (BufferError, TypeError, ValueError, RuntimeError) as exc:
            msg = f"{name}: NumPy cannot read this DLPack array ({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__})"
            raise ArgumentError(msg) from None
        return _numpy_operand(view, name)
    # No stream: the producer orders its work before the legacy default stream
    # (DLPack's rule); a call on another stream asks again (streams.wait_for_producers).
    dtype, shape, strides, pointer, _ = read_capsule(obj.__dlpack__(), name)
    return Operand(obj, "dlpack", dtype, shape, strides, pointer, f"cuda:{device_id}", "dlpack")


def contiguous(operand: Operand, name: str) -> Operand:
    """A row-major contiguous copy, made by the operand's own library."""
    obj = operand.obj
    if operand.kind == "numpy":
        import numpy as np

        return _numpy_operand(np.ascontiguousarray(obj), name)
    if operand.kind == "torch":
        return _torch_operand(obj.contiguous(), name)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(obj, cupy.ndarray):
        return _cai_operand(cupy.ascontiguousarray(obj), name)
    msg = f"{name}: a strided {type(obj).__name__} cannot be copied here; pass a contiguous array"
    raise ArgumentError(msg)


def _allocate(like: Operand, shape: tuple[int, ...], dtype: str, *, zero: bool, stream: Any = None, name: str = "out") -> Any:
    numpy_name = next(k for k, v in DTYPE_NAMES.items() if v == dtype)
    if like.kind == "numpy":
        import numpy as np

        return (np.zeros if zero else np.empty)(shape, numpy_name)
    if like.kind == "torch":
        import torch

        with on_stream(like, stream):
            return (torch.zeros if zero else torch.empty)(shape, dtype=getattr(torch, numpy_name), device=like.obj.device)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(like.obj, cupy.ndarray):
        with cupy.cuda.Device(_cai_device(like.obj) or 0), on_stream(like, stream):
            return (cupy.zeros if zero else cupy.empty)(shape, numpy_name)
    gpuarray = sys.modules.get("pycuda.gpuarray")
    if gpuarray is not None and isinstance(like.obj, gpuarray.GPUArray):
        return (gpuarray.zeros if zero else gpuarray.empty)(shape, numpy_name)
    msg = f"{name}: cannot allocate a result like {type(like.obj).__name__}; pass {name}="
    raise ArgumentTypeError(msg)


def empty_like_kind(like: Operand, shape: tuple[int, ...], dtype: str, stream: Any = None, name: str = "out") -> Any:
    """A new uninitialised array of the same library and device as ``like``,
    allocated by that library on the CUDA stream ``stream`` (None: its current
    one); ``name`` is the result's argument, for the error where none can be made."""
    return _allocate(like, shape, dtype, zero=False, stream=stream, name=name)


def zeros_like_kind(like: Operand, shape: tuple[int, ...], dtype: str, stream: Any = None) -> Any:
    """The same, zeroed on ``stream``."""
    return _allocate(like, shape, dtype, zero=True, stream=stream)


def is_row_major(op: Operand) -> bool:
    """Whether ``op`` is contiguous in C order (extents of 1 may have any stride)."""
    step = 1
    for extent, stride in zip(reversed(op.shape), reversed(op.strides)):
        if extent > 1 and stride != step:
            return False
        step *= extent
    return True


def is_writable(op: Operand) -> bool:
    """Whether the kernel may write ``op``'s memory: a read-only NumPy array
    (``writeable=False``, a view of ``bytes``, a read-only mmap) or a CUDA array
    that declares itself read-only is not. Tensors are always writable."""
    if op.kind == "numpy":
        return bool(op.obj.flags.writeable)
    if op.kind == "cai":
        data = op.obj.__cuda_array_interface__.get("data") or (0, False)
        return not data[1]
    return True


def span(op: Operand, itemsize: int) -> tuple[int, int]:
    """[low, high) bytes that a non-empty ``op`` can touch, relative to its pointer."""
    low = high = 0
    for extent, stride in zip(op.shape, op.strides):
        reach = (extent - 1) * stride * itemsize
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high + itemsize


def meets(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
    """Bounds for the overlap test of two spans (``span``):
    y's bytes [py + y_low, py + y_high) meet x's [px + x_low, px + x_high)
    exactly when x_low - y_high < py - px < x_high - y_low. One subtraction a call."""
    return x[0] - y[1], x[1] - y[0]


def _byte_span(op: Operand) -> tuple[int, int]:
    """[first, last) byte that ``op`` can touch; empty arrays touch none."""
    if 0 in op.shape:
        return op.pointer, op.pointer
    low, high = span(op, op.obj.dtype.itemsize if op.kind == "numpy" else _ITEMSIZE.get(op.dtype, 8))
    return op.pointer + low, op.pointer + high


def overlaps(x: Operand, y: Operand) -> bool:
    """Whether ``x`` and ``y`` may share memory: NumPy decides exactly, for
    anything else intersecting byte ranges count as sharing."""
    if x.device != y.device:
        return False
    if x.kind == "numpy" and y.kind == "numpy" and x.obj is not y.obj and x.obj.base is None and y.obj.base is None:
        return False  # two arrays that each own their memory: the common case, decided without arithmetic
    x0, x1 = _byte_span(x)
    y0, y1 = _byte_span(y)
    if x1 <= y0 or y1 <= x0:
        return False
    if x.kind == "numpy" and y.kind == "numpy":
        import numpy as np

        return bool(np.shares_memory(x.obj, y.obj))
    return True


def fill(op: Operand, value: Any) -> None:
    """Set every element of the host result ``op`` (or of its last axis' ``[..., 0]``
    and ``[..., 1]`` when ``value`` is a (value, count) pair) in place. Device
    results are filled on the call's stream instead (``streams.fill_on``)."""
    obj = op.obj
    if isinstance(value, tuple):
        obj[..., 0], obj[..., 1] = value
    elif hasattr(obj, "__setitem__"):
        obj[...] = value
    else:  # pycuda's GPUArray has fill() and no item assignment
        obj.fill(value)
