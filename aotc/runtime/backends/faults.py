"""Device faults: reported as one line naming the launch that most likely caused them.

A kernel that reads an illegal address, traps or runs too long does not fail
its own launch: the launch returned long before the kernel ran. The fault is
*sticky*: the context is broken, and every later call in it (a synchronize,
a copy, a free, the next launch) returns the same error. Reported as that
later call's failure, it names the wrong thing. So each GPU backend keeps a
``LaunchLog``, the last kernel it launched on each stream (two stores per
launch), and turns a sticky error into a ``DeviceFaultError`` naming that
launch. A successful context synchronize settles the log: a fault that
surfaces after it came from work launched since.
"""

from __future__ import annotations

import os
from typing import Any

from aotc.errors import DeviceFaultError

__all__ = ["STICKY_ERRORS", "LaunchLog", "is_sticky"]

# The CUresults after which "any further CUDA work will return the same error" (the driver API's docs).
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_LAUNCH_FAILED",
})  # fmt: skip
# Other streams' unsettled launches named after the latest, at most.
_ALSO_NAMED = 3


def is_sticky(error_name: str) -> bool:
    """Whether the CUresult called ``error_name`` means a kernel broke the context."""
    return error_name in STICKY_ERRORS


class LaunchLog:
    """The launches of one backend (one context) since its last synchronize.

    The launch path writes ``latest`` and ``per_stream[stream]`` itself (a
    method call would cost more than the stores); ``names`` maps a function
    handle, as an int, to its kernel's symbol, filled when it is looked up.
    """

    __slots__ = ("latest", "names", "per_stream")

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.per_stream: dict[Any, tuple[Any, Any, Any]] = {}  # stream -> (function, shape, stream)
        self.latest: tuple[Any, Any, Any] | None = None

    def settle(self) -> None:
        """Everything launched so far has finished without a fault (a context synchronize returned)."""
        self.per_stream.clear()
        self.latest = None

    def fault(self, ordinal: int, what: str, error: str, *, this_launch: tuple[Any, Any, Any] | None = None) -> DeviceFaultError:
        """The one-line error for the sticky ``error`` that ``what`` reported on device ``ordinal``.

        ``this_launch``: the launch whose own call reported it. Launches are
        asynchronous, so that is an earlier launch's fault, unless
        ``CUDA_LAUNCH_BLOCKING=1`` makes every launch wait for its kernel.
        """
        if this_launch is not None and os.environ.get("CUDA_LAUNCH_BLOCKING", "") == "1":
            cause = f"the kernel was {self._describe(this_launch)} (CUDA_LAUNCH_BLOCKING=1)"
        elif self.latest is None:
            cause = f"aotc launched no kernel on device {ordinal} since its last synchronize: the fault is other work's"
        else:
            cause = f"the last kernel aotc launched on device {ordinal} before it: {self._describe(self.latest)}"
            others = [launch for stream, launch in self.per_stream.items() if launch is not self.latest]
            if others:
                named = ", ".join(self._describe(launch) for launch in others[-_ALSO_NAMED:])
                cause += f" (also unfinished on other streams: {named})"
            if this_launch is not None:
                cause += "; CUDA_LAUNCH_BLOCKING=1 makes each launch report its own fault"
        msg = (
            f"device fault on device {ordinal}: {error}, reported by {what}; {cause}; "
            "the context is unusable now: restart the process"
        )
        return DeviceFaultError(msg)

    def _describe(self, launch: tuple[Any, Any, Any]) -> str:
        function, (grid, block, shared_bytes), stream = launch
        name = self.names.get(_as_int(function), "an unnamed kernel")
        return f"{name}(grid={tuple(grid)}, block={tuple(block)}, shared={shared_bytes}) on stream {_stream_text(stream)}"


def _as_int(handle: Any) -> int:
    try:
        return int(handle)
    except (TypeError, ValueError):
        return id(handle)


def _stream_text(stream: Any) -> str:
    handle = _as_int(getattr(stream, "handle", stream)) if stream is not None else 0
    return "0 (the default stream)" if handle == 0 else f"{handle:#x}"
