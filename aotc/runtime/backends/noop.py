"""A backend whose launches do nothing: for the per-call benchmark and loader tests.

It accepts any image without looking inside, so the whole path from
``aotc.load`` to the launch runs without a GPU, and what remains of a call is
aotc's own host overhead. Its memory is host memory (ctypes buffers), so
pointers are real addresses and copies round-trip.
"""

from __future__ import annotations

from typing import Any, ClassVar

from aotc.runtime.backends.base import DeviceInfo
from aotc.runtime.backends.host_memory import HostMemory

__all__ = ["NoopBackend"]


class NoopBackend(HostMemory):
    """Pretends to be a GPU of ``capability``; see the module docstring."""

    name: ClassVar[str] = "noop"
    image_format: ClassVar[str] = "fatbin"

    def __init__(self, capability: tuple[int, int] = (8, 0), driver_version: tuple[int, int] = (13, 0)) -> None:
        major, minor = capability
        self._device = DeviceInfo(f"noop (sm_{major}{minor}; launches do nothing)", (major, minor), tuple(driver_version), 0, 0)
        super().__init__()

    def device(self) -> DeviceInfo:
        return self._device

    def driver_version(self) -> None:
        return None  # no NVIDIA driver behind it, so no library is too new for it

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
