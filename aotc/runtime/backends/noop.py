"""A backend whose launches do nothing: for the per-call benchmark and loader tests.

It accepts any image without looking inside, so the whole path from
``aotc.load`` to the launch runs without a GPU, and what remains of a call is
aotc's own host overhead. Its memory is host memory (ctypes buffers), so
pointers are real addresses and copies round-trip.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, ClassVar

from aotc.errors import BackendError
from aotc.runtime.backends.base import DeviceInfo

__all__ = ["NoopBackend"]


class NoopBackend:
    """Pretends to be a GPU of ``capability``; see the module docstring."""

    name: ClassVar[str] = "noop"
    image_format: ClassVar[str] = "fatbin"
    memory: ClassVar[str] = "host"

    def __init__(self, capability: tuple[int, int] = (8, 0), driver_version: tuple[int, int] = (13, 0)) -> None:
        major, minor = capability
        self._device = DeviceInfo(f"noop (sm_{major}{minor}; launches do nothing)", (major, minor), tuple(driver_version), 0, 0)
        self._buffers: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self._lock = threading.Lock()

    def device(self) -> DeviceInfo:
        return self._device

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] = ()) -> Any:
        return ("noop-module", name, len(image))

    def get_function(self, module: Any, symbol: str) -> Any:
        return symbol

    def launch(
        self,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        stream: Any,
        params: bytes,
    ) -> None:
        return None

    def alloc(self, nbytes: int) -> int:
        buffer = ctypes.create_string_buffer(max(int(nbytes), 1))
        pointer = ctypes.addressof(buffer)
        with self._lock:
            self._buffers[pointer] = buffer
        return pointer

    def free(self, pointer: int) -> None:
        with self._lock:
            if self._buffers.pop(pointer, None) is None:
                msg = f"noop backend: free of {pointer:#x}, which alloc() did not return"
                raise BackendError(msg)

    def copy_to_device(self, pointer: int, host: bytes | bytearray | memoryview) -> None:
        data = memoryview(host)
        if data.nbytes:  # an empty array has nothing to copy, and cannot be cast
            ctypes.memmove(pointer, bytes(data.cast("B")), data.nbytes)

    def copy_to_host(self, host: bytearray | memoryview, pointer: int) -> None:
        view = memoryview(host)
        if view.nbytes:
            view.cast("B")[:] = ctypes.string_at(pointer, view.nbytes)

    def synchronize(self) -> None:
        return None
