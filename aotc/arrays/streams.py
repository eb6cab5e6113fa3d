"""The streams one call touches: its own, where all its work is queued, and
the producers' it must wait for.

Fills of device results (the K = 0 result, zeroed gradients) are queued on the
call's stream through the backend (a host pattern copied with
``copy_to_device_async``, a ``memset_async``), the same way for every
framework: PyTorch, CuPy, pycuda, the emulator's arrays.

All the work of one call goes on the call's stream: allocations (through the
operands' framework, on that stream), fills, staging copies, the kernel and
the copies back. Before any of it reads an operand, the call's stream waits
for the operand's producer: the stream named by ``__cuda_array_interface__``
v3's ``stream`` (an event recorded there, waited for here), or, for a DLPack
array, the producer itself when asked with ``__dlpack__(stream=...)``.

Staging host arrays allocates and synchronizes, which a CUDA graph capture
forbids; so before staging, every stream the call could be captured on is
asked: its own and the current streams of the frameworks in use (inside
``torch.cuda.graph(g)``, PyTorch's current stream is the one captured).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

    from aotc.arrays.operands import Operand

__all__ = ["capture_candidates", "fill_on", "hold_until_done", "wait_for_producers", "zero_on"]

_LEGACY = 1  # CU_STREAM_LEGACY: the legacy default stream as CAI v3 and DLPack name it


def wait_for_producers(backend: Any, stream: int, ops: Any) -> None:
    """Order ``stream`` after the pending writes of every operand in ``ops``."""
    for op in ops:
        producer = op.producer if op is not None else None
        if producer is None:
            continue
        if producer == "dlpack":
            # __dlpack__() without a stream ordered the producer before the legacy stream.
            if stream not in (0, _LEGACY):
                _export_on(op.obj, stream)
            continue
        handle = 0 if producer == _LEGACY else producer
        if handle != (0 if stream == _LEGACY else stream):
            backend.order_after(stream, handle)


def _export_on(obj: Any, stream: int) -> None:
    """Ask a DLPack producer to order its work before ``stream``; the capsule is let go."""
    obj.__dlpack__(stream=stream)


def hold_until_done(ops: Any, stream: int) -> None:
    """Tell PyTorch's caching allocator that ``stream`` uses each CUDA tensor of
    ``ops`` (``record_stream``), where that is not the tensor's current stream:
    freed by its owner, the memory is not handed out again until ``stream`` is done."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    for op in ops:
        if op is None or op.kind != "torch" or op.on_host:
            continue
        device = op.obj.device
        if torch.cuda.current_stream(device).cuda_stream != stream:
            op.obj.record_stream(torch.cuda.ExternalStream(stream, device=device))


def capture_candidates(stream: int, device: int) -> tuple[int, ...]:
    """The streams a call on ``stream`` and ``device`` could be captured on: its own,
    PyTorch's current stream (once it has initialised CUDA) and CuPy's there."""
    found = [stream]
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    if cuda is not None and cuda.is_initialized():
        found.append(int(cuda.current_stream(device).cuda_stream))
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        from aotc.arrays.framework_streams import cupy_current_stream

        found.append(cupy_current_stream(cupy, device))
    return tuple(dict.fromkeys(found))


def zero_on(backend: Any, op: Operand, stream: int) -> None:
    """Zero the contiguous device array ``op`` on ``stream``."""
    count = 1
    for extent in op.shape:
        count *= extent
    backend.memset_async(op.pointer, 0, count * _ITEMSIZE[op.dtype], stream)


def fill_on(backend: Any, op: Operand, value: Any, stream: int) -> None:
    """Set every element of the contiguous device array ``op`` to ``value`` (a
    (value, count) pair along the last axis for counting) on ``stream``."""
    import numpy as np

    pattern = np.empty(op.shape, _NUMPY_NAMES[op.dtype])
    if isinstance(value, tuple):
        pattern[..., 0], pattern[..., 1] = value
    else:
        pattern[...] = value
    backend.copy_to_device_async(op.pointer, pattern, stream)


_ITEMSIZE = {"f32": 4, "f64": 8, "i32": 4, "i64": 8, "bool": 1}
_NUMPY_NAMES = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "bool": "bool"}
