"""Where an array lives, which stream a call runs on, and which result arrays
a kernel may write.

``same`` checks that two operands share a dtype and a device; ``device_of``
names an operand's device as an ordinal (asking the driver where the array
does not say); ``stream_handle`` turns ``stream=`` (or the operands'
framework's current stream) into the int handle backends take; ``output``
checks ``out=`` or allocates the result on the call's stream.

Every check raises a one-line ArgumentError or ArgumentTypeError naming the
argument. Nothing here launches a kernel, and nothing imports NumPy or PyTorch.
"""

from __future__ import annotations

from aotc.arrays.kinds import as_operand, kind_of
from aotc.arrays.operands import Operand, overlaps
from aotc.errors import ArgumentError, ArgumentTypeError, echo

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

__all__ = ["device_of", "output", "same", "stream_handle"]


def same(a: Operand, other: Operand, name: str) -> None:
    """``other`` has ``a``'s dtype and device."""
    if other.dtype != a.dtype:
        msg = f"{name}: dtype {other.dtype} does not match a's {a.dtype}"
        raise ArgumentError(msg)
    if other.device != a.device:
        msg = f"{name}: on {other.device}, but a is on {a.device}"
        raise ArgumentError(msg)


def output(
    out: Any,
    name: str,
    like: Operand,
    shape: tuple[int, ...],
    dtype: str,
    inputs: tuple[tuple[Operand, str], ...],
    library: Any = None,
    stream: Any = None,
    fill: Any = None,
    like_name: str = "a",
) -> Operand:
    """The result array: ``out`` checked, or a new one like ``like``, allocated
    (and filled with ``fill`` where it is not None) on the call's ``stream``.
    ``out`` must be written in place, so it must be exactly what the kernel
    writes and share no memory with an input (or another result); it is not
    filled here (``fill`` is the caller's, on the call's stream, after every check)."""
    if out is None:
        return as_operand(like.kind.allocate(like, shape, dtype, stream, name, fill), name)
    kind = kind_of(out, name)
    if not kind.written_in_place:
        # DLPack says nothing of writability (JAX's arrays are immutable): never written in place.
        msg = f"{name}: a DLPack-only array is not written in place; pass a NumPy array, a tensor or a CUDA array"
        raise ArgumentError(msg)
    reason = kind.unwritable(out, name)
    if reason is not None:
        raise ArgumentError(reason)
    op = kind.read(out, name)
    if op.obj is not out:  # as_operand made a copy: the result would be written there and lost
        if not hasattr(out, "shape") or isinstance(out, (list, tuple)):
            msg = f"{name}: expected an array to write the result into, got {type(out).__name__}"
            raise ArgumentTypeError(msg)
        msg = f"{name}: must be a contiguous row-major array"
        raise ArgumentError(msg)
    if op.shape != shape or op.dtype != dtype:
        msg = f"{name}: expected shape {shape} and dtype {dtype}, got {op.shape} and {op.dtype}"
        raise ArgumentError(msg)
    if op.device == "cuda" and library is not None:
        device_of(op, name, library)  # a CUDA array that does not say its device
    if op.device != like.device:
        msg = f"{name}: on {op.device}, but {like_name} is on {like.device}"
        raise ArgumentError(msg)
    if not op.kind.row_major(op):
        msg = f"{name}: must be a contiguous row-major array"
        raise ArgumentError(msg)
    if not op.kind.writable(op):
        msg = f"{name}: is read-only; pass a writable array"
        raise ArgumentError(msg)
    for other, other_name in inputs:
        if overlaps(op, other):
            msg = f"{name}: shares memory with {other_name}; pass a separate array"
            raise ArgumentError(msg)
    return op


def device_of(op: Operand, name: str, library: Any) -> int:
    """The device ``op`` is on, as an ordinal: a tensor's or CUDA array's own device,
    the driver's answer for a CUDA array's pointer where the array does not say
    (``cuPointerGetAttribute``), else (and for host arrays) the current device."""
    device = op.device
    if device == "cpu":
        return library.current_device()
    ordinal = _ORDINALS.get(device)
    if ordinal is None:
        if device.startswith("cuda:") and device[5:].isdigit():
            ordinal = _ORDINALS[device] = int(device[5:])
        else:
            ordinal = library.backend.pointer_device(op.pointer)
            if ordinal is None:  # memory the driver does not know: CuPy's rule, the current device
                ordinal = library.current_device()
            op.device = f"cuda:{ordinal}"
    return ordinal


_ORDINALS: dict[str, int] = {}


def stream_handle(stream: Any, op: Operand) -> int:
    """The CUDA stream to launch on, as the int handle backends take: ``stream``
    (None, an int handle, or a torch, CuPy or pycuda stream), or the current
    stream of ``op``'s library on its device."""
    if stream is None:
        return op.kind.current_stream(op)
    if type(stream) is int:
        if stream < 0:
            msg = f"stream: a stream handle is a non-negative int, got {stream}"
            raise ArgumentError(msg)
        return stream
    for attribute in ("cuda_stream", "ptr", "handle"):  # torch, CuPy, pycuda
        value = getattr(stream, attribute, None)
        if type(value) is int:
            return value
    msg = f"stream: expected None, an int stream handle or a torch/CuPy/pycuda stream, got {echo(stream)}"
    raise ArgumentTypeError(msg)
