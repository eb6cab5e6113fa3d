"""The pycuda backend (``aotc[pycuda]``), for code that already lives in pycuda.

It uses the device's primary context, retained with
``Device(n).retain_primary_context()``, never ``pycuda.autoinit`` (which
creates a private context that PyTorch or CuPy in the same process could not
see). Where the calling thread already has our context current, as pycuda
code that pushed it does, calls run as they are; otherwise the context is
pushed and popped around each call, so pycuda's per-thread context stack is
left exactly as found. Streams are pycuda ``Stream`` objects, or 0/None.

Launches go through ``Function._launch_kernel``, the method pycuda's own
``Function.__call__`` ends in: it takes one packed parameter buffer and
passes it to ``cuLaunchKernel`` as ``CU_LAUNCH_PARAM_BUFFER_POINTER``.

Two questions pycuda has no call for are asked of the same libcuda through
cuda-bindings (a dependency of aotc's wheel): which device a pointer's
memory is on (``cuPointerGetAttribute``, for arrays that do not say), and
whether a stream is being captured into a CUDA graph (``cuStreamIsCapturing``).
Without cuda-bindings the answers are "unknown device" and "not capturing",
the base backend's.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any, ClassVar

from aotc.errors import BackendError, NoDeviceError
from aotc.runtime.backends.base import BackendBase, DeviceInfo, LaunchShape, byte_view, capture_error, launch_error
from aotc.runtime.backends.driver_streams import DriverStreams

__all__ = ["PyCudaBackend"]


class PyCudaBackend(DriverStreams, BackendBase):
    """Device ``ordinal`` through pycuda; nothing touches the driver until first use."""

    name: ClassVar[str] = "pycuda"
    image_format: ClassVar[str] = "fatbin"
    memory: ClassVar[str] = "device"

    def __init__(self, ordinal: int = 0, *, bindings: Any = None) -> None:
        if importlib.util.find_spec("pycuda") is None:
            msg = "the pycuda backend needs pycuda: pip install 'aotc[pycuda]'"
            raise BackendError(msg)
        super().__init__(ordinal)
        self._ordinal = ordinal
        self._lock = threading.Lock()
        self._cuda: Any = None
        self._context: Any = None
        self._allocations: dict[int, Any] = {}
        self._bindings = bindings  # cuda.bindings.driver, found on first need; tests hand in a fake

    def driver_version(self) -> int:
        cuda = _driver_module()
        try:
            # cuDriverGetVersion needs no cuInit, so a driver too old for the rest is still asked.
            return int(cuda.get_driver_version())
        except cuda.Error as exc:
            msg = f"no CUDA GPU: {_one_line(exc)}"
            raise NoDeviceError(msg) from None

    def _open_device(self) -> DeviceInfo:
        cuda = _driver_module()
        try:
            cuda.init()
            count = cuda.Device.count()
            if self._ordinal >= count:
                msg = f"no CUDA GPU {self._ordinal}: the driver sees {count} device(s)"
                raise NoDeviceError(msg)
            device = cuda.Device(self._ordinal)
            self._context = device.retain_primary_context()
            attribute = cuda.device_attribute
            driver = cuda.get_driver_version()
            info = DeviceInfo(
                name=device.name(),
                capability=device.compute_capability(),
                driver_version=(driver // 1000, driver % 1000 // 10),
                sm_count=device.get_attribute(attribute.MULTIPROCESSOR_COUNT),
                clock_khz=device.get_attribute(attribute.CLOCK_RATE),
                ordinal=self._ordinal,
            )
        except cuda.Error as exc:
            msg = f"no CUDA GPU: {_one_line(exc)}"
            raise NoDeviceError(msg) from None
        self._cuda = cuda
        return info

    def _enter(self) -> bool:
        """Make our context current; True if it was pushed and must be popped."""
        if self._cuda is None:
            self.device()
        current = self._cuda.Context.get_current()
        if current is not None and current.handle == self._context.handle:
            return False
        self._context.push()
        return True

    def _leave(self, pushed: bool) -> None:
        if pushed:
            self._cuda.Context.pop()

    def _guard(self, what: str, call: Any, *args: Any) -> Any:
        try:
            return self._in_context(call, *args)
        except self._cuda.Error as exc:
            msg = f"{what} failed: {_one_line(exc)}"
            raise BackendError(msg) from None

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] = ()) -> Any:
        return self._guard(f"loading {name}", self._cuda.module_from_buffer, bytes(image))

    def get_function(self, module: Any, symbol: str) -> Any:
        return self._guard(f"get_function({symbol})", module.get_function, symbol)

    def launch(self, function: Any, shape: LaunchShape, stream: Any, params: bytes) -> None:
        grid, block, shared_bytes = shape
        try:
            self._in_context(function._launch_kernel, grid, block, params, shared_bytes, stream or None)  # noqa: SLF001
        except self._cuda.Error as exc:
            raise launch_error("launch", shape, _one_line(exc)) from None

    def alloc(self, nbytes: int) -> int:
        allocation = self._guard("mem_alloc", self._cuda.mem_alloc, max(int(nbytes), 1))
        pointer = int(allocation)
        with self._lock:
            self._allocations[pointer] = allocation  # pycuda frees on garbage collection
        return pointer

    def free(self, pointer: int) -> None:
        with self._lock:
            allocation = self._allocations.pop(pointer, None)
        if allocation is None:
            msg = f"pycuda backend: free of {pointer:#x}, which alloc() did not return"
            raise BackendError(msg)
        self._guard("free", allocation.free)

    def copy_to_device(self, pointer: int, host: bytes | bytearray | memoryview) -> None:
        view = byte_view(host)
        if view is not None:
            self._guard("memcpy_htod", self._cuda.memcpy_htod, pointer, view)

    def copy_to_host(self, host: bytearray | memoryview, pointer: int) -> None:
        view = byte_view(host)
        if view is not None:
            self._guard("memcpy_dtoh", self._cuda.memcpy_dtoh, view, pointer)

    def synchronize(self) -> None:
        self._guard("synchronize", self._cuda.Context.synchronize)

    def pointer_device(self, pointer: int) -> int | None:
        cu = self._driver_bindings()
        if cu is None:
            return None
        self.device()  # cuInit, through pycuda
        attribute = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        err, value = cu.cuPointerGetAttribute(attribute, cu.CUdeviceptr(pointer))
        # Host memory the driver does not know is no device's; a stale pointer neither.
        return int(value) if err == cu.CUresult.CUDA_SUCCESS else None

    def is_capturing(self, stream: Any) -> bool:
        cu = self._driver_bindings()
        if cu is None:
            return False
        handle = stream if isinstance(stream, int) else getattr(stream, "handle", 0)  # a pycuda Stream
        err, status = self._in_context(cu.cuStreamIsCapturing, handle or 0)
        refusal = capture_error("cuStreamIsCapturing", getattr(err, "name", ""))  # the legacy stream: IMPLICIT
        if refusal is not None:
            raise refusal
        if err != cu.CUresult.CUDA_SUCCESS:
            msg = f"cuStreamIsCapturing failed: {err!r}"
            raise BackendError(msg)
        return status != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE

    # -- streams and events: DriverStreams, through cuda-bindings -------------------

    def _streams_driver(self) -> Any:
        cu = self._driver_bindings()
        if cu is None:
            msg = "the pycuda backend's streams and events need cuda-bindings: pip install cuda-bindings"
            raise BackendError(msg)
        return cu

    def _streams_call(self, what: str, result: Any) -> Any:
        err, *values = result
        if err != self._streams_driver().CUresult.CUDA_SUCCESS:
            msg = f"{what} failed: {getattr(err, 'name', err)}"
            raise BackendError(msg)
        return values[0] if len(values) == 1 else tuple(values) or None

    def _driver_bindings(self) -> Any:
        if self._bindings is None:
            try:
                from cuda.bindings import driver
            except ImportError:
                self._bindings = False
            else:
                self._bindings = driver
        return self._bindings or None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _driver_module() -> Any:
    """``pycuda.driver``; pycuda links libcuda, so a machine without a driver fails here."""
    try:
        import pycuda.driver as cuda
    except ImportError as exc:
        msg = f"no CUDA GPU: pycuda cannot load the NVIDIA driver ({exc})"
        raise NoDeviceError(msg) from None
    return cuda
