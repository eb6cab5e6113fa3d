"""A backend whose launches do nothing: for the per-call benchmark and loader tests.

It accepts any image without looking inside, so the whole path from
``aotc.load`` to the launch runs without a GPU, and what remains of a call is
aotc's own host overhead. Its memory is host memory (ctypes buffers), so
pointers are real addresses and copies round-trip.
"""

from __future__ import annotations

from aotc.runtime.backends.base import DeviceInfo, LaunchShape
from aotc.runtime.backends.host_memory import HostMemory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = ["NoopBackend"]


class NoopBackend(HostMemory):
    """Pretends to be a GPU of ``capability``; see the module docstring."""

    name: ClassVar[str] = "noop"
    image_format: ClassVar[str] = "fatbin"

    def __init__(
        self, capability: tuple[int, int] = (8, 0), driver_version: tuple[int, int] = (13, 0), *, ordinal: int = 0
    ) -> None:
        super().__init__(ordinal)
        major, minor = capability
        name = f"noop (sm_{major}{minor}; launches do nothing)"
        self._pretends = DeviceInfo(name, (major, minor), tuple(driver_version), 0, 0, ordinal)  # type: ignore[arg-type]

    def _open_device(self) -> DeviceInfo:
        return self._pretends

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] = ()) -> Any:
        return ("noop-module", name, len(image))

    def get_function(self, module: Any, symbol: str) -> Any:
        return symbol

    def launch(self, function: Any, shape: LaunchShape, stream: Any, params: bytes) -> None:
        return None
