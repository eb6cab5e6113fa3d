"""The cuda-python backend (``cuda.bindings.driver``), the default.

It works in the device's primary context, the one the CUDA runtime, PyTorch
and CuPy use, so kernels and memory are shared with them. Every call asks
which context the calling thread has current (one ``cuCtxGetCurrent``),
because any code may have changed it since the last call (``torch.cuda.set_device``,
``pycuda.autoinit``, ``cuCtxCreate``, another device's backend):

- our primary context: the call runs as it is;
- none, and this is device 0: our primary context is made current, as the
  CUDA runtime itself does on a thread's first call, and stays so;
- any other: ours is pushed for the call and popped after it, so the thread's
  own context (and torch's or CuPy's idea of the current device) is left as found.

The parameter block goes to ``cuLaunchKernel`` as one packed buffer
(``packed_launch.py``). A kernel's fault surfaces from a later call;
``LaunchLog`` (``faults.py``) names the launch behind it.
"""

from __future__ import annotations

from aotc.errors import BackendError, NoDeviceError
from aotc.runtime.backends.base import BackendBase, DeviceInfo, LaunchShape, byte_view, capture_error
from aotc.runtime.backends.driver_streams import DriverStreams
from aotc.runtime.backends.faults import LaunchLog, is_sticky
from aotc.runtime.backends.packed_launch import launch_packed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = ["CudaPythonBackend"]


class CudaPythonBackend(DriverStreams, BackendBase):
    """Device ``ordinal`` through cuda-python; nothing touches the driver until first use."""

    name: ClassVar[str] = "cuda-python"
    image_format: ClassVar[str] = "fatbin"
    memory: ClassVar[str] = "device"

    def __init__(self, ordinal: int = 0, *, driver: Any = None) -> None:
        if driver is None:
            try:
                from cuda.bindings import driver
            except ImportError:
                msg = "the cuda-python backend needs cuda-bindings: pip install cuda-bindings"
                raise BackendError(msg) from None
        super().__init__(ordinal)
        self._driver = driver
        self._ordinal = ordinal
        self._context: Any = None
        self._context_handle = -1  # no handle is: until the device is open, every call opens it
        self._driver_version: int | None = None
        self._launches = LaunchLog()

    # -- device and context --------------------------------------------------

    def driver_version(self) -> int:
        # cuDriverGetVersion needs no cuInit, so a driver too old for the rest is still asked.
        if self._driver_version is None:
            try:
                result = self._driver.cuDriverGetVersion()
            except Exception as exc:  # noqa: BLE001 - no libcuda raises a loader error, not a CUresult
                raise _no_driver(exc) from None
            self._driver_version = int(self._call("cuDriverGetVersion", result))
        return self._driver_version

    def _open_device(self) -> DeviceInfo:
        cu = self._driver
        self._init()
        count = self._call("cuDeviceGetCount", cu.cuDeviceGetCount())
        if self._ordinal >= count:
            msg = f"no CUDA GPU {self._ordinal}: the driver sees {count} device(s)"
            raise NoDeviceError(msg)
        device = self._call("cuDeviceGet", cu.cuDeviceGet(self._ordinal))
        self._context = self._call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(device))
        self._context_handle = int(self._context)
        raw_name = self._call("cuDeviceGetName", cu.cuDeviceGetName(256, device))
        attribute = cu.CUdevice_attribute
        driver = self.driver_version()
        return DeviceInfo(
            name=bytes(raw_name).split(b"\0", 1)[0].decode(errors="replace"),
            capability=(
                self._attribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                self._attribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
            ),
            driver_version=(driver // 1000, driver % 1000 // 10),
            sm_count=self._attribute(attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
            clock_khz=self._attribute(attribute.CU_DEVICE_ATTRIBUTE_CLOCK_RATE, device),
            ordinal=self._ordinal,
        )

    def device_count(self) -> int:
        self.device()  # cuInit, or the one-line reason there is no GPU
        return int(self._call("cuDeviceGetCount", self._driver.cuDeviceGetCount()))

    def current_device(self) -> int:
        # cudaSetDevice (torch.cuda.set_device) makes that device's primary context current.
        cu = self._driver
        self._init()
        if not int(self._call("cuCtxGetCurrent", cu.cuCtxGetCurrent())):
            return 0
        return int(self._call("cuCtxGetDevice", cu.cuCtxGetDevice()))

    def pointer_device(self, pointer: int) -> int | None:
        cu = self._driver
        self._init()
        attribute = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        err, value = cu.cuPointerGetAttribute(attribute, cu.CUdeviceptr(pointer))
        # Host memory the driver does not know is no device's; a stale pointer neither.
        return int(value) if err == cu.CUresult.CUDA_SUCCESS else None

    def is_capturing(self, stream: Any) -> bool:
        cu = self._driver
        result = self._in_context(cu.cuStreamIsCapturing, stream)
        refusal = capture_error("cuStreamIsCapturing", getattr(result[0], "name", ""))  # the legacy stream: IMPLICIT
        if refusal is not None:
            raise refusal
        status = self._call("cuStreamIsCapturing", result)
        return status != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE

    def _init(self) -> None:
        try:
            (err,) = self._driver.cuInit(0)
        except Exception as exc:  # noqa: BLE001 - no libcuda raises a loader error, not a CUresult
            raise _no_driver(exc) from None
        if err != self._driver.CUresult.CUDA_SUCCESS:
            msg = f"no CUDA GPU: cuInit failed with {self._error_name(err)}"
            raise NoDeviceError(msg)

    def _attribute(self, attribute: Any, device: Any) -> int:
        return int(self._call("cuDeviceGetAttribute", self._driver.cuDeviceGetAttribute(attribute, device)))

    def _enter(self) -> bool:
        """Make our context current in this thread; True if it was pushed and must be popped."""
        cu = self._driver
        if self._context is None:
            # cuInit and our context, or the one line why there is no GPU. First: without
            # a driver, cuda-bindings 13.5 raises from cuCtxGetCurrent (no libcuda to load)
            # where older releases returned CUDA_ERROR_NOT_INITIALIZED.
            self.device()
        err, current = cu.cuCtxGetCurrent()
        if not err and int(current) == self._context_handle:  # CUDA_SUCCESS is 0; the usual case
            return False
        current = int(self._call("cuCtxGetCurrent", (err, current)))
        if current == self._context_handle:
            return False
        if current == 0 and self._ordinal == 0:
            # What the runtime does on a thread's first call; torch and CuPy see device 0 either way.
            self._call("cuCtxSetCurrent", cu.cuCtxSetCurrent(self._context))
            return False
        self._call("cuCtxPushCurrent", cu.cuCtxPushCurrent(self._context))
        return True

    def _leave(self, pushed: bool) -> None:
        if pushed:
            self._call("cuCtxPopCurrent", self._driver.cuCtxPopCurrent())

    # -- modules and launches ------------------------------------------------

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] = ()) -> Any:
        loaded = self._in_context(self._driver.cuModuleLoadData, bytes(image))
        return self._call(f"loading {name}: cuModuleLoadData", loaded)

    def get_function(self, module: Any, symbol: str) -> Any:
        found = self._in_context(self._driver.cuModuleGetFunction, module, symbol.encode())
        function = self._call(f"cuModuleGetFunction({symbol})", found)
        self._launches.names[int(function)] = symbol
        return function

    def launch(self, function: Any, shape: LaunchShape, stream: Any, params: bytes) -> None:
        pushed = self._enter()
        try:
            err = launch_packed(self._driver, function, shape, stream, params)
        finally:
            if pushed:
                self._leave(pushed)
        if err:  # CUDA_SUCCESS is 0
            raise self._refused_launch(err, function, shape, stream)
        launches = self._launches
        launches.latest = launches.per_stream[stream] = (function, shape, stream)

    # -- memory ----------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        return int(self._call("cuMemAlloc", self._in_context(self._driver.cuMemAlloc, max(int(nbytes), 1))))

    def free(self, pointer: int) -> None:
        self._call("cuMemFree", self._in_context(self._driver.cuMemFree, self._driver.CUdeviceptr(pointer)))

    def copy_to_device(self, pointer: int, host: bytes | bytearray | memoryview) -> None:
        view = byte_view(host)
        if view is not None:
            dst = self._driver.CUdeviceptr(pointer)
            self._call("cuMemcpyHtoD", self._in_context(self._driver.cuMemcpyHtoD, dst, view, view.nbytes))

    def copy_to_host(self, host: bytearray | memoryview, pointer: int) -> None:
        view = byte_view(host)
        if view is not None:
            src = self._driver.CUdeviceptr(pointer)
            self._call("cuMemcpyDtoH", self._in_context(self._driver.cuMemcpyDtoH, view, src, view.nbytes))

    def synchronize(self) -> None:
        self._call("cuCtxSynchronize", self._in_context(self._driver.cuCtxSynchronize))
        self._launches.settle()

    # -- streams and events: DriverStreams, over this driver --------------------

    def _streams_driver(self) -> Any:
        return self._driver

    def _streams_call(self, what: str, result: Any) -> Any:
        return self._call(what, result)

    # -- errors ----------------------------------------------------------------

    def _call(self, what: str, result: tuple[Any, ...]) -> Any:
        """Unwrap cuda-python's ``(CUresult, value...)`` tuples, raising one line on failure."""
        err, *values = result
        if err != self._driver.CUresult.CUDA_SUCCESS:
            if is_sticky(getattr(err, "name", "")):
                raise self._launches.fault(self._ordinal, what, self._error_name(err))
            msg = f"{what} failed: {self._error_name(err)}"
            raise BackendError(msg, cuda_error=getattr(err, "name", None))
        return values[0] if len(values) == 1 else tuple(values)

    def _error_name(self, err: Any) -> str:
        try:
            _, name = self._driver.cuGetErrorName(err)
            _, text = self._driver.cuGetErrorString(err)
            return f"{name.decode()} ({text.decode()})"
        except Exception:  # noqa: BLE001 - only for a message
            return str(err)


def _no_driver(exc: Exception) -> NoDeviceError:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return NoDeviceError(f"no CUDA GPU: the NVIDIA driver (libcuda) cannot be loaded ({text})")
