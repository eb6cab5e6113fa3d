"""The emulator as a runtime backend: ``AOTC_BACKEND=emulator``.

It consumes the kernel's shipped ``.cu`` (``image_format = "source"``): the
loader hands over the source bytes, this compiles them as host C++ through
the disk cache (keyed on the source, the symbols and the host toolchain), and
launches them on host memory. Pointers are host addresses, so NumPy arrays
and CPU tensors can be passed in place.

It presents ``AOTC_EMULATOR_DEVICES`` devices (default 1), device ``i`` of
compute capability ``AOTC_EMULATOR_ARCHS[i]`` (e.g. ``80,90``), so the
multi-device path runs without a GPU (``aotc.runtime.emulator.devices``).

Its streams are queues that run later, as a GPU's do
(``aotc.runtime.emulator.streams``): a launch, a memset or an async copy
returns at once; ``copy_to_device`` (``cuMemcpyHtoD`` from pageable memory)
waits for the legacy stream, then queues the copy there and returns;
``copy_to_host``, ``free`` and the synchronizes wait. ``AOTC_EMULATOR_STREAMS=sync``
runs everything at once.
"""

from __future__ import annotations

import ctypes
import os
import re
from typing import Any, ClassVar

from aotc.errors import BackendError, BuildError
from aotc.runtime.backends.base import DeviceInfo, LaunchShape, byte_view, capture_error, launch_error
from aotc.runtime.backends.host_memory import HostMemory
from aotc.runtime.backends.params import ParamLayout
from aotc.runtime.cache import CacheKey, DiskCache, default_cache
from aotc.runtime.emulator import devices, streams
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
        if stream in streams.LEGACY_HANDLES:
            # The legacy stream synchronizes with blocking streams, so asking about it
            # while one of them is captured is the driver's CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.
            for captured in devices.captured():
                try:
                    other = streams.stream(captured, self.ordinal)
                except BackendError:
                    continue  # a handle of another device, or none of the emulator's
                if not other.non_blocking and not other.legacy:
                    reason = f"CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (blocking stream {captured:#x} is being captured)"
                    raise capture_error("cuStreamIsCapturing(the legacy stream)", reason)  # type: ignore[misc]
        return devices.is_capturing(stream)

    def _refuse_during_capture(self, what: str) -> None:
        refusal = devices.capture_refusal(what)
        if refusal is not None:
            raise BackendError(refusal)

    def alloc(self, nbytes: int) -> int:
        self._refuse_during_capture("cuMemAlloc")
        pointer = super().alloc(nbytes)
        # cuMemAlloc's memory holds whatever was there: poisoned (NaN, -1), never zero,
        # so a read before the first write shows.
        ctypes.memset(pointer, 0xFF, max(int(nbytes), 1))
        devices.tag(pointer, max(int(nbytes), 1), self.ordinal)
        return pointer

    def free(self, pointer: int) -> None:
        self._refuse_during_capture("cuMemFree")
        # cuMemFree waits for the work that may still use the memory; a fault of that
        # work is left for the next wait to report, with the launch that caused it.
        streams.synchronize_device(self.ordinal, report=False)
        super().free(pointer)
        devices.untag(pointer)

    # -- the legacy stream's synchronous copies, and waits ---------------------------

    def copy_to_device(self, pointer: int, host: bytes | bytearray | memoryview) -> None:
        self._refuse_during_capture("cuMemcpyHtoD")
        legacy = self._stream(0)
        streams.wait(legacy.last, self.ordinal)  # the stream sync before a pageable copy starts
        self._enqueue_copy_in(pointer, host, legacy)  # the DMA itself may land later

    def copy_to_host(self, host: bytearray | memoryview, pointer: int) -> None:
        self._refuse_during_capture("cuMemcpyDtoH")
        view = byte_view(host)
        if view is not None:
            legacy = self._stream(0)
            streams.wait(streams.enqueue(legacy, _copy_out(view, pointer, self), "cuMemcpyDtoH"), self.ordinal)

    def synchronize(self) -> None:
        self._refuse_during_capture("cuCtxSynchronize")
        streams.synchronize_device(self.ordinal)

    # -- streams and events ----------------------------------------------------------

    def _stream(self, handle: Any) -> streams.Stream:
        return streams.stream(handle, self.ordinal)

    def stream_create(self, non_blocking: bool = False) -> int:
        return streams.create_stream(self.ordinal, non_blocking)

    def stream_destroy(self, stream: int) -> None:
        streams.destroy_stream(stream, self.ordinal)

    def stream_synchronize(self, stream: Any) -> None:
        streams.wait(self._stream(stream).last, self.ordinal)

    def event_create(self) -> int:
        return streams.create_event(self.ordinal)

    def event_destroy(self, event: int) -> None:
        streams.destroy_event(event, self.ordinal)

    def event_record(self, event: int, stream: Any) -> None:
        streams.record(streams.event(event, self.ordinal), self._stream(stream))

    def event_synchronize(self, event: int) -> None:
        streams.wait(streams.event(event, self.ordinal).marker, self.ordinal)

    def stream_wait_event(self, stream: Any, event: int) -> None:
        streams.wait_event(self._stream(stream), streams.event(event, self.ordinal))

    def copy_to_device_async(self, pointer: int, host: bytes | bytearray | memoryview, stream: Any) -> None:
        self._enqueue_copy_in(pointer, host, self._stream(stream))

    def copy_to_host_async(self, host: bytearray | memoryview, pointer: int, stream: Any) -> None:
        view = byte_view(host)
        if view is not None:
            streams.enqueue(self._stream(stream), _copy_out(view, pointer, self), "cuMemcpyDtoHAsync")

    def memset_async(self, pointer: int, value: int, nbytes: int, stream: Any) -> None:
        def run(_owner: Any = self) -> None:  # the memory's owner outlives the queued work (see launch)
            ctypes.memset(pointer, value, nbytes)

        streams.enqueue(self._stream(stream), run, "cuMemsetD8Async")

    def _enqueue_copy_in(self, pointer: int, host: bytes | bytearray | memoryview, target: streams.Stream) -> None:
        view = byte_view(host)
        if view is None:
            return
        staged = bytes(view)  # pageable memory is staged at once: the caller may reuse it

        def run(_owner: Any = self) -> None:  # the memory's owner outlives the queued work (see launch)
            ctypes.memmove(pointer, staged, len(staged))

        streams.enqueue(target, run, "cuMemcpyHtoD")

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
        target = self._stream(stream)
        kernel = function.kernel
        try:
            kernel.check_geometry(*shape)  # what cuLaunchKernel refuses at once
        except ValueError as exc:
            raise launch_error(kernel.symbol, shape, str(exc)) from None
        # The queued launch owns a copy of the parameter block, as the driver does.
        block_buffer = ctypes.create_string_buffer(bytes(params), max(len(params), 1))
        base = ctypes.addressof(block_buffer)
        pointers = (ctypes.c_void_p * max(len(function.offsets), 1))(*(base + o for o in function.offsets))

        # The defaults keep the parameter block alive, and this backend, whose
        # allocations the kernel writes: on a GPU a context outlives the work queued
        # in it, and here a backend dropped before its work ran would free that
        # memory under it (seen as a Python object overwritten by a later copy).
        def run(_parameters: Any = block_buffer, _owner: Any = self) -> None:
            kernel.launch_params(*shape, pointers)

        grid, block, shared_bytes = shape
        try:
            streams.enqueue(target, run, f"{kernel.symbol}(grid={grid}, block={block}, shared={shared_bytes})")
        except (ValueError, RuntimeError) as exc:  # AOTC_EMULATOR_STREAMS=sync: it ran here
            raise launch_error(kernel.symbol, shape, str(exc)) from None


def _copy_out(view: memoryview, pointer: int, owner: Any) -> Any:
    def run(_owner: Any = owner) -> None:  # the memory's owner outlives the queued work (see launch)
        view[:] = ctypes.string_at(pointer, view.nbytes)

    return run
