"""The emulator as a runtime backend: ``AOTC_BACKEND=emulator``.

It consumes the kernel's shipped ``.cu`` (``image_format = "source"``): the
loader hands over the source bytes, this compiles them as host C++ through
the disk cache (keyed on the source, the symbols and the host toolchain), and
launches them on host memory. Pointers are host addresses, so NumPy arrays
and CPU tensors can be passed in place.

It presents ``AOTC_EMULATOR_DEVICES`` devices (default 1), device ``i`` of
compute capability ``AOTC_EMULATOR_ARCHS[i]`` (e.g. ``80,90``), so the
multi-device path runs without a GPU (``aotc.runtime.emulator.devices``).
"""

from __future__ import annotations

import ctypes
import os
import re
from typing import Any, ClassVar

from aotc.errors import BackendError, BuildError
from aotc.runtime.backends.base import DeviceInfo, LaunchShape, launch_error
from aotc.runtime.backends.host_memory import HostMemory
from aotc.runtime.backends.params import ParamLayout
from aotc.runtime.cache import CacheKey, DiskCache, default_cache
from aotc.runtime.emulator import devices
from aotc.runtime.emulator.compile import compile_library_bytes, toolchain
from aotc.runtime.emulator.launch import EmulatorKernel, load_library_bytes

__all__ = ["EmulatorBackend", "EmulatorFunction", "kernel_symbols"]

# Generated kernels are declared `extern "C" __global__ void [__launch_bounds__(...)] name(`.
_KERNEL_RE = re.compile(
    r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?P<name>[A-Za-z_]\w*)\s*\('
)


def kernel_symbols(source: bytes) -> tuple[str, ...]:
    """The ``extern "C"`` kernels a source defines, in order."""
    text = source.decode("utf-8", errors="replace")
    return tuple(dict.fromkeys(m["name"] for m in _KERNEL_RE.finditer(text)))


class EmulatorFunction:
    """A kernel plus the offsets of its parameters in a packed parameter block."""

    __slots__ = ("kernel", "offsets")

    def __init__(self, kernel: EmulatorKernel) -> None:
        self.kernel = kernel
        # The launcher packed the block with this layout; read it back with the same.
        self.offsets = ParamLayout.for_sizes(kernel.sizes).offsets


class EmulatorBackend(HostMemory):
    """Runs kernels on the CPU; see the module docstring."""

    name: ClassVar[str] = "emulator"
    image_format: ClassVar[str] = "source"

    def __init__(self, cache: DiskCache | None = None, *, ordinal: int = 0) -> None:
        super().__init__(ordinal)
        self._cache = cache
        self.compiles = 0  # how many sources this process compiled (cache misses)

    @property
    def cache(self) -> DiskCache:
        if self._cache is None:
            self._cache = default_cache()
        return self._cache

    def _open_device(self) -> DeviceInfo:
        capability = devices.capability(self.ordinal)  # raises NoDeviceError past the last device
        tools = toolchain()
        return DeviceInfo(f"CPU emulator ({tools.version})", capability, (0, 0), os.cpu_count() or 1, 0, self.ordinal)

    def device_count(self) -> int:
        return devices.count()

    def current_device(self) -> int:
        return devices.current()

    def pointer_device(self, pointer: int) -> int | None:
        return devices.owner(pointer)

    def is_capturing(self, stream: Any) -> bool:
        return devices.is_capturing(stream)

    def alloc(self, nbytes: int) -> int:
        pointer = super().alloc(nbytes)
        devices.tag(pointer, max(int(nbytes), 1), self.ordinal)
        return pointer

    def free(self, pointer: int) -> None:
        super().free(pointer)
        devices.untag(pointer)

    def cache_key(self, source: bytes, symbols: tuple[str, ...]) -> CacheKey:
        tools = toolchain()
        return CacheKey.for_source(source, options=(*tools.flags, *symbols), target=tools.target, compiler=tools.identity)

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] | None = None) -> Any:
        """Compile (or find in the cache) a library with launchers for ``symbols``,
        by default every ``extern "C"`` kernel the source defines."""
        symbols = tuple(symbols) if symbols else kernel_symbols(image)
        if not symbols:
            msg = f"{name}: no extern \"C\" __global__ kernel to run on the emulator"
            raise BuildError(msg)

        def build() -> bytes:
            self.compiles += 1
            return compile_library_bytes(image, symbols, source_name=name)

        payload = self.cache.get_or_create(self.cache_key(image, symbols), build)
        return load_library_bytes(payload)

    def get_function(self, module: Any, symbol: str) -> EmulatorFunction:
        try:
            return EmulatorFunction(module.kernel(symbol))
        except KeyError as exc:
            raise BackendError(str(exc.args[0])) from None

    def launch(self, function: EmulatorFunction, shape: LaunchShape, stream: Any, params: bytes) -> None:
        # The emulator is synchronous, so a stream has nothing to order.
        block_buffer = ctypes.create_string_buffer(bytes(params), max(len(params), 1))
        base = ctypes.addressof(block_buffer)
        pointers = (ctypes.c_void_p * max(len(function.offsets), 1))(*(base + o for o in function.offsets))
        try:
            function.kernel.launch_params(*shape, pointers)
        except (ValueError, RuntimeError) as exc:
            raise launch_error(function.kernel.symbol, shape, str(exc)) from None
