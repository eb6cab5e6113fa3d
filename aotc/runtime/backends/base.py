"""The backend protocol: the few things the loader needs from a GPU API.

A backend is one object per process. Its methods take and return plain values
(ints for device pointers and streams, bytes for images and parameter blocks)
plus opaque module and function handles that only the backend itself reads.

Two kinds of backend exist, told apart by ``image_format``:

- ``"fatbin"``: ``load_module`` gets a fatbin or a cubin (cuda-python, pycuda,
  noop). The loader runs ``select_image`` against ``device()`` to choose.
- ``"source"``: ``load_module`` gets the kernel's shipped ``.cu`` bytes and
  compiles them itself (the CPU emulator). The loader skips ``select_image``.

``launch`` receives one packed parameter block: the kernel's parameters laid
out with native alignment, exactly as a C compiler lays them out for a kernel
(``struct.Struct("@...")``). GPU backends hand it to ``cuLaunchKernel``
through ``CU_LAUNCH_PARAM_BUFFER_POINTER``; a source backend can slice it by
the same offsets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

__all__ = ["IMAGE_FORMATS", "Backend", "DeviceInfo"]

IMAGE_FORMATS = ("fatbin", "source")


@dataclass(frozen=True)
class DeviceInfo:
    """The GPU a backend launches on, as ``aotc doctor`` prints it."""

    name: str
    capability: tuple[int, int]
    driver_version: tuple[int, int]  # the CUDA version the driver supports
    sm_count: int
    clock_khz: int
    ordinal: int = 0

    @property
    def arch(self) -> str:
        return f"sm_{self.capability[0]}{self.capability[1]}"

    def describe(self) -> str:
        major, minor = self.capability
        driver = ".".join(map(str, self.driver_version))
        return (
            f"device {self.ordinal}: {self.name}, compute capability {major}.{minor} ({self.arch}), "
            f"{self.sm_count} SMs at {self.clock_khz / 1000:.0f} MHz; driver supports CUDA {driver}"
        )


@runtime_checkable
class Backend(Protocol):
    """What the loader calls. Errors are ``aotc.errors.BackendError`` (one line);
    ``device()`` raises ``NoDeviceError`` where there is no usable GPU."""

    name: ClassVar[str]
    image_format: ClassVar[str]  # one of IMAGE_FORMATS
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

    def launch(
        self,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        stream: Any,
        params: bytes,
    ) -> None:
        """Enqueue one launch; ``params`` is the packed parameter block."""
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

    def synchronize(self) -> None: ...
