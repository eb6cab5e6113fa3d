"""``Backend``: what the loader calls, as a ``typing.Protocol``.

Its own module because a Protocol needs ``typing``, which a process loading
its first kernel should not pay for: ``aotc.runtime.backends.Backend`` loads
this on first use, for type checks and ``isinstance``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

from aotc.runtime.backends.base import DeviceInfo, LaunchShape

__all__ = ["Backend"]


@runtime_checkable
class Backend(Protocol):
    """What the loader calls. Errors are ``aotc.errors.BackendError`` (one line);
    ``device()`` raises ``NoDeviceError`` where there is no usable GPU."""

    name: ClassVar[str]
    image_format: ClassVar[str]  # "fatbin" or "source"
    # "device": pointers are GPU memory; "host": host memory (emulator, noop),
    # so host arrays are passed in place rather than copied.
    memory: ClassVar[str]

    def device(self) -> DeviceInfo: ...

    def driver_version(self) -> int | None:
        """``cuDriverGetVersion``: 1000 * major + 10 * minor of the CUDA version the
        driver supports, or None where no NVIDIA driver is involved (emulator,
        noop). Raises ``NoDeviceError`` where the driver cannot be loaded."""
        ...

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] = ()) -> Any:
        """Load a fatbin/cubin (or, for a source backend, a ``.cu``).

        ``name`` is the kernel's name, for messages; ``symbols`` are the
        functions the caller will ask for (a source backend compiles them).
        """
        ...

    def get_function(self, module: Any, symbol: str) -> Any: ...

    def launch(self, function: Any, shape: LaunchShape, stream: Any, params: bytes) -> None:
        """Enqueue one launch of ``shape``; ``params`` is the packed parameter block."""
        ...

    # Memory helpers: enough for tests and simple ops, not an array library.
    def alloc(self, nbytes: int) -> int: ...

    def free(self, pointer: int) -> None: ...

    def copy_to_device(self, pointer: int, host: bytes | bytearray | memoryview) -> None:
        """Copy all of ``host`` (any buffer: bytes, a NumPy array) to ``pointer``."""
        ...

    def copy_to_host(self, host: bytearray | memoryview, pointer: int) -> None:
        """Fill the writable buffer ``host`` from ``pointer``."""
        ...

    def synchronize(self) -> None:
        """``cuCtxSynchronize``: wait for all the device's queued work."""
        ...

    # Streams and events (int handles), and work queued on a stream.
    def stream_create(self, non_blocking: bool = False) -> int:
        """``cuStreamCreate`` (``CU_STREAM_NON_BLOCKING`` where ``non_blocking``)."""
        ...

    def stream_destroy(self, stream: int) -> None: ...

    def stream_synchronize(self, stream: int) -> None:
        """``cuStreamSynchronize``: wait for the work queued on ``stream`` so far."""
        ...

    def event_create(self) -> int:
        """``cuEventCreate(CU_EVENT_DISABLE_TIMING)``."""
        ...

    def event_destroy(self, event: int) -> None: ...

    def event_record(self, event: int, stream: int) -> None:
        """``cuEventRecord``: the event completes when ``stream``'s work so far has run."""
        ...

    def event_synchronize(self, event: int) -> None: ...

    def stream_wait_event(self, stream: int, event: int) -> None:
        """``cuStreamWaitEvent``: ``stream``'s later work waits for the event."""
        ...

    def copy_to_device_async(self, pointer: int, host: bytes | bytearray | memoryview, stream: int) -> None:
        """``cuMemcpyHtoDAsync`` from pageable memory: ``host`` may be reused once this returns."""
        ...

    def copy_to_host_async(self, host: bytearray | memoryview, pointer: int, stream: int) -> None:
        """``cuMemcpyDtoHAsync``: ``host`` holds the bytes once ``stream`` is synchronized."""
        ...

    def memset_async(self, pointer: int, value: int, nbytes: int, stream: int) -> None:
        """``cuMemsetD8Async``: ``nbytes`` bytes of ``value`` (a byte)."""
        ...

    def order_after(self, stream: int, producer: int) -> None:
        """Order ``stream``'s later work after ``producer``'s work so far (an event)."""
        ...
