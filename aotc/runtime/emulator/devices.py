"""The devices the emulator presents, and what the driver would know about them.

``AOTC_EMULATOR_DEVICES=N`` presents N devices; ``AOTC_EMULATOR_ARCHS=80,90``
gives device ``i`` compute capability 8.0, 9.0 (the last repeats; unset: 0.0,
no GPU arch). The rest stands in for driver state, so the multi-device and
CUDA-graph paths run as they do on GPUs:

- memory the emulator allocated for device ``i`` answers ``owner(pointer) == i``,
  as ``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)`` does;
- ``set_device(i)`` makes ``i`` this thread's current device (``cudaSetDevice``);
- ``capture(stream)`` marks a stream as being captured into a graph
  (``cuStreamBeginCapture`` .. ``cuStreamEndCapture``), in global mode by
  default, as ``torch.cuda.graph`` captures: while it lasts, the calls a GPU
  forbids during a global capture (an allocation, a free, a synchronous copy,
  a synchronize) fail and invalidate it (``capture_refusal``).
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from aotc.errors import ConfigurationError, NoDeviceError, echo

__all__ = [
    "capability", "capture", "capture_refusal", "captured", "count", "current", "invalidated", "is_capturing", "owner",
    "set_device", "tag", "untag",
]  # fmt: skip

_lock = threading.Lock()
_starts: list[int] = []  # sorted allocation starts
_allocations: dict[int, tuple[int, int]] = {}  # start -> (end, ordinal)
_capturing: dict[int, str] = {}  # stream -> capture mode ("global", "thread_local", "relaxed")
_invalidated: set[int] = set()  # captured streams a forbidden call invalidated
_local = threading.local()


def count() -> int:
    """How many devices ``AOTC_EMULATOR_DEVICES`` presents (default 1)."""
    text = os.environ.get("AOTC_EMULATOR_DEVICES", "1").strip() or "1"
    if not text.isdigit() or int(text) < 1:
        msg = f"AOTC_EMULATOR_DEVICES={echo(text)} is not a device count (an int >= 1)"
        raise ConfigurationError(msg)
    return int(text)


def capability(ordinal: int) -> tuple[int, int]:
    """Device ``ordinal``'s compute capability, from ``AOTC_EMULATOR_ARCHS``."""
    devices = count()
    if ordinal >= devices:
        msg = f"no emulated device {ordinal}: AOTC_EMULATOR_DEVICES={devices}"
        raise NoDeviceError(msg, hint=False)  # already on the emulator
    text = os.environ.get("AOTC_EMULATOR_ARCHS", "").strip()
    if not text:
        return (0, 0)
    archs = [a.strip().removeprefix("sm_") for a in text.split(",")]
    arch = archs[min(ordinal, len(archs) - 1)]
    if not arch.isdigit() or len(arch) < 2:
        msg = f"AOTC_EMULATOR_ARCHS={echo(text)}: {echo(arch)} is not an arch such as 80 or 90"
        raise ConfigurationError(msg)
    return (int(arch[:-1]), int(arch[-1]))


def set_device(ordinal: int) -> None:
    """Make ``ordinal`` this thread's current device, as ``cudaSetDevice`` does."""
    capability(ordinal)
    _local.device = ordinal


def current() -> int:
    return getattr(_local, "device", 0)


def tag(pointer: int, nbytes: int, ordinal: int) -> None:
    """Record ``[pointer, pointer + nbytes)`` as device ``ordinal``'s memory."""
    with _lock:
        if pointer not in _allocations:
            bisect.insort(_starts, pointer)
        _allocations[pointer] = (pointer + nbytes, ordinal)


def untag(pointer: int) -> None:
    with _lock:
        if _allocations.pop(pointer, None) is not None:
            del _starts[bisect.bisect_left(_starts, pointer)]


def owner(pointer: int) -> int | None:
    """The device whose memory ``pointer`` is in, or None for plain host memory."""
    with _lock:
        i = bisect.bisect_right(_starts, pointer) - 1
        if i < 0:
            return None
        end, ordinal = _allocations[_starts[i]]
        return ordinal if pointer < end else None


@contextlib.contextmanager
def capture(stream: int, mode: str = "global") -> Iterator[None]:
    """While inside, ``stream`` reads as being captured into a CUDA graph."""
    with _lock:
        _capturing[stream] = mode
        _invalidated.discard(stream)
    try:
        yield
    finally:
        with _lock:
            _capturing.pop(stream, None)


def is_capturing(stream: Any) -> bool:
    return type(stream) is int and stream in _capturing


def captured() -> tuple[int, ...]:
    """The streams being captured now."""
    with _lock:
        return tuple(_capturing)


def invalidated(stream: int) -> bool:
    """Whether a call the capture forbids has invalidated ``stream``'s capture."""
    return stream in _invalidated


def capture_refusal(what: str) -> str | None:
    """The driver's error for ``what`` (an allocation, a synchronous copy, a
    synchronize) while a global-mode capture runs, or None where none does; a
    refused call invalidates the captures, as on a GPU."""
    with _lock:
        global_captures = [s for s, mode in _capturing.items() if mode == "global"]
        if not global_captures:
            return None
        _invalidated.update(global_captures)
    streams = ", ".join(f"{s:#x}" for s in global_captures)
    return f"{what} during a global-mode capture of stream {streams}: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (the capture is invalidated)"
