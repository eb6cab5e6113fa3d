"""Host memory standing in for device memory, for backends that run on the CPU.

The noop backend and the emulator share it: pointers are real host addresses
(ctypes buffers kept alive until freed), so copies round-trip and NumPy arrays
or CPU tensors can be passed in place. Here streams have nothing to order:
queued work is done at once and every wait returns (the emulator overrides
this with queues, ``aotc.runtime.emulator.streams``).
"""

from __future__ import annotations

import itertools
from _thread import allocate_lock  # threading.Lock itself, without importing threading

from aotc.errors import BackendError
from aotc.runtime.backends.base import BackendBase, byte_view

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ctypes
    from typing import Any, ClassVar

__all__ = ["HostMemory"]


class HostMemory(BackendBase):
    """A backend whose memory is host memory; see the module docstring."""

    memory: ClassVar[str] = "host"

    def __init__(self, ordinal: int = 0) -> None:
        super().__init__(ordinal)
        self._buffers: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self._buffers_lock = allocate_lock()

    def alloc(self, nbytes: int) -> int:
        import ctypes  # here, not at import: loading kernels needs no memory of its own

        buffer = ctypes.create_string_buffer(max(int(nbytes), 1))
        pointer = ctypes.addressof(buffer)
        with self._buffers_lock:
            self._buffers[pointer] = buffer
        return pointer

    def buffer(self, pointer: int) -> ctypes.Array[ctypes.c_char]:
        """The ctypes buffer ``alloc()`` returned ``pointer`` of: holding it keeps the memory."""
        with self._buffers_lock:
            return self._buffers[pointer]

    def free(self, pointer: int) -> None:
        with self._buffers_lock:
            if self._buffers.pop(pointer, None) is None:
                msg = f"{self.name} backend: free of {pointer:#x}, which alloc() did not return"
                raise BackendError(msg)

    def copy_to_device(self, pointer: int, host: bytes | bytearray | memoryview) -> None:
        view = byte_view(host)
        if view is not None:
            import ctypes

            ctypes.memmove(pointer, bytes(view), view.nbytes)

    def copy_to_host(self, host: bytearray | memoryview, pointer: int) -> None:
        view = byte_view(host)
        if view is not None:
            import ctypes

            view[:] = ctypes.string_at(pointer, view.nbytes)

    def synchronize(self) -> None:
        return None

    # Streams and events: handles that order nothing, since nothing is queued.
    _handles = itertools.count(0x5EA0_0000, 0x10)

    def stream_create(self, non_blocking: bool = False) -> int:
        return next(self._handles)

    def stream_destroy(self, stream: int) -> None:
        return None

    def stream_synchronize(self, stream: Any) -> None:
        return None

    def event_create(self) -> int:
        return next(self._handles)

    def event_destroy(self, event: int) -> None:
        return None

    def event_record(self, event: int, stream: Any) -> None:
        return None

    def event_synchronize(self, event: int) -> None:
        return None

    def stream_wait_event(self, stream: Any, event: int) -> None:
        return None

    def copy_to_device_async(self, pointer: int, host: bytes | bytearray | memoryview, stream: Any) -> None:
        HostMemory.copy_to_device(self, pointer, host)

    def copy_to_host_async(self, host: bytearray | memoryview, pointer: int, stream: Any) -> None:
        HostMemory.copy_to_host(self, host, pointer)

    def memset_async(self, pointer: int, value: int, nbytes: int, stream: Any) -> None:
        import ctypes

        ctypes.memset(pointer, value, nbytes)
