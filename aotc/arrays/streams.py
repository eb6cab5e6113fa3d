"""The streams one call touches: its own, where all its work is queued, and
the producers' it must wait for.

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

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any


__all__ = ["capture_candidates", "hold_until_done", "wait_for_producers"]

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
    """Keep each operand's memory from being handed out again before ``stream``
    is done with it, where its library would (PyTorch's caching allocator)."""
    for op in ops:
        if op is not None:
            op.kind.hold(op, stream)


def capture_candidates(stream: int, device: int) -> tuple[int, ...]:
    """The streams a call on ``stream`` and ``device`` could be captured on: its own,
    and the current streams of the frameworks in use there (``kinds.current_streams``)."""
    from aotc.arrays.kinds import current_streams

    return tuple(dict.fromkeys((stream, *current_streams(device))))
