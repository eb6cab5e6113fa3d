"""Arrays that speak ``__cuda_array_interface__``: CuPy, pycuda's GPUArray,
Numba, and any library that exports the interface.

Any of them is read in place. Where the array's library is known (CuPy,
pycuda), a row-major copy and a result like it are made by that library, and
CuPy's current stream is the call's; an array of another library can be
neither copied nor made, so a call names its result (``out=``).

CuPy is asked for a device's current stream without making that device
current: its ``cudaSetDevice`` would replace a context other code made
current (RESULTS.md, "GPU suite").
"""

from __future__ import annotations

import sys

from aotc.arrays.kinds._base import ArrayKind
from aotc.arrays.operands import Operand
from aotc.dtypes import DTYPES, by_typestr, numpy_dtype, zero_bits
from aotc.errors import ArgumentError, ArgumentTypeError, echo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CUDA_ARRAY", "CudaArrayKind", "cuda_array_kind", "cupy_current_stream"]


def cuda_array_kind(obj: Any) -> ArrayKind:
    """The adapter of a CUDA array: its library's where aotc knows it."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(obj, cupy.ndarray):
        return CUPY
    gpuarray = sys.modules.get("pycuda.gpuarray")
    if gpuarray is not None and isinstance(obj, gpuarray.GPUArray):
        return GPUARRAY
    return CUDA_ARRAY


def _device(obj: Any) -> int | None:
    device = getattr(obj, "device", None)
    for attribute in ("id", "index"):
        value = getattr(device, attribute, None)
        if isinstance(value, int):
            return value
    return None


def _ints(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(type(v) is int for v in value)


def interface_of(obj: Any, name: str) -> dict[str, Any]:
    """``obj.__cuda_array_interface__``, checked for what a call reads of it: a
    malformed one is refused in one line, never read into a wrong launch."""
    interface = obj.__cuda_array_interface__
    problem = None
    if not isinstance(interface, dict):
        problem = f"is a {type(interface).__name__}, not a dict"
    elif not _ints(interface.get("shape")) or any(v < 0 for v in interface["shape"]):
        problem = f"shape {echo(interface.get('shape'))} is not a tuple of sizes"
    elif not isinstance(interface.get("typestr"), str) or len(interface["typestr"]) < 3:
        problem = f"typestr {echo(interface.get('typestr'))} is not a type string like '<f4'"
    elif not isinstance(interface.get("data"), (tuple, list)) or len(interface["data"]) != 2 or not isinstance(interface["data"][0], (int, type(None))):
        problem = f"data {echo(interface.get('data'))} is not (pointer, read_only)"
    elif interface.get("strides") is not None and (not _ints(interface["strides"]) or len(interface["strides"]) != len(interface["shape"])):
        problem = f"strides {echo(interface['strides'])} are not one integer per axis of shape {tuple(interface['shape'])}"
    elif type(interface.get("version", 0)) is not int:
        problem = f"version {echo(interface.get('version'))} is not an integer"
    if problem is not None:
        msg = f"{name}: its __cuda_array_interface__ {problem}"
        raise ArgumentTypeError(msg)
    return interface


class CudaArrayKind(ArrayKind):
    """Any ``__cuda_array_interface__`` array (v3's stream included)."""

    name = "cuda_array"

    def read(self, obj: Any, name: str) -> Operand:
        interface = interface_of(obj, name)
        shape = tuple(interface["shape"])
        typestr = interface["typestr"]
        found = by_typestr(typestr)
        itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 1
        strides = interface.get("strides")
        if strides is None:  # C-contiguous
            steps, step = [], 1
            for extent in reversed(shape):
                steps.append(step)
                step *= extent
            strides = tuple(reversed(steps))
        else:
            if any(s % itemsize for s in strides):
                msg = f"{name}: strides {tuple(strides)} are not whole elements"
                raise ArgumentError(msg)
            strides = tuple(s // itemsize for s in strides)
        pointer = interface["data"][0] or 0
        ordinal = _device(obj)
        # "cuda": the array does not say; the call asks the driver about its pointer.
        device = "cuda" if ordinal is None else f"cuda:{ordinal}"
        producer = interface.get("stream") if interface.get("version", 0) >= 3 else None
        if producer is not None and (type(producer) is not int or producer == 0):
            msg = f"{name}: __cuda_array_interface__ stream must be None or a stream handle other than 0, got {echo(producer)}"
            raise ArgumentError(msg)
        dtype = found.name if found is not None else typestr
        return Operand(obj, self, dtype, shape, strides, pointer, device, producer)

    def writable(self, op: Operand) -> bool:
        data = op.obj.__cuda_array_interface__.get("data") or (0, False)
        return not data[1]


class CupyKind(CudaArrayKind):
    name = "cupy"

    def contiguous(self, op: Operand, name: str) -> Operand:
        return self.read(sys.modules["cupy"].ascontiguousarray(op.obj), name)

    def allocate(self, like: Operand, shape: tuple[int, ...], dtype: str, stream: Any, name: str, fill: Any = None) -> Any:
        cupy = sys.modules["cupy"]
        numpy_name = numpy_dtype(DTYPES[dtype], name)
        with cupy.cuda.Device(like.obj.device.id), _CupyStream(cupy, like.obj.device.id, stream):
            if fill is None:
                return cupy.empty(shape, numpy_name)
            return cupy.zeros(shape, numpy_name) if zero_bits(fill) else cupy.full(shape, fill, numpy_name)

    def current_stream(self, op: Operand) -> int:
        return cupy_current_stream(sys.modules["cupy"], op.obj.device.id)


class GpuArrayKind(CudaArrayKind):
    """pycuda's GPUArray: allocated by pycuda, in the context pycuda has current."""

    name = "gpuarray"

    def allocate(self, like: Operand, shape: tuple[int, ...], dtype: str, stream: Any, name: str, fill: Any = None) -> Any:
        gpuarray = sys.modules["pycuda.gpuarray"]
        numpy_name = numpy_dtype(DTYPES[dtype], name)
        if fill is None:
            return gpuarray.empty(shape, numpy_name)
        if zero_bits(fill):
            return gpuarray.zeros(shape, numpy_name)
        array = gpuarray.empty(shape, numpy_name)
        array.fill(fill)
        return array


def cupy_current_stream(cupy: Any, device: int) -> int:
    """CuPy's current stream on ``device``, as an int handle, asked without making
    ``device`` current: ``cupy.cuda.Device`` calls ``cudaSetDevice``, which puts
    the device's primary context in place of whatever context the thread had
    current (``cuCtxCreate``'s, pycuda's), and does not put that one back."""
    try:
        return int(cupy.cuda.get_current_stream(device).ptr)  # CuPy keeps one per device
    except TypeError:  # a CuPy whose get_current_stream takes no device
        if cupy.cuda.runtime.getDevice() == device:
            return int(cupy.cuda.get_current_stream().ptr)
        with cupy.cuda.Device(device):
            return int(cupy.cuda.get_current_stream().ptr)


class _CupyStream:
    """On CuPy's current device, the stream ``handle`` made current (None: left as it is)."""

    def __init__(self, cupy: Any, device: int, handle: Any) -> None:
        self.cupy = cupy
        self.device = device
        self.handle = handle
        self.stream: Any = None

    def __enter__(self) -> None:
        if self.handle is None or cupy_current_stream(self.cupy, self.device) == self.handle:
            return
        # CuPy 14 deprecates ExternalStream for Stream.from_external, which
        # takes any object under the CUDA stream protocol, on the current device.
        from_external = getattr(self.cupy.cuda.Stream, "from_external", None)
        if from_external is not None:
            self.stream = from_external(_StreamHandle(self.handle))
        else:
            self.stream = self.cupy.cuda.ExternalStream(self.handle, self.device)
        self.stream.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self.stream is not None:
            self.stream.__exit__(*exc)


class _StreamHandle:
    """A raw stream handle under the CUDA stream protocol (``__cuda_stream__``)."""

    __slots__ = ("handle",)

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


CUDA_ARRAY = CudaArrayKind()
CUPY = CupyKind()
GPUARRAY = GpuArrayKind()
