"""The pycuda backend (``aotc[pycuda]``), for code that already lives in pycuda.

It uses the device's primary context, retained with
``Device(n).retain_primary_context()``, never ``pycuda.autoinit`` (which
creates a private context that PyTorch or CuPy in the same process could not
see). Where the calling thread already has our context current, as pycuda
code that pushed it does, calls run as they are; otherwise the context is
pushed and popped around each call, so pycuda's per-thread context stack is
left exactly as found. Memory is pycuda's (``mem_alloc``, ``memcpy_*``).

Modules, functions and launches go through cuda-bindings (a dependency of
aotc's wheel) against the same libcuda, inside the context pycuda pushed:
pycuda's own launch (``Function._launch_kernel``, where ``Function.__call__``
ends) takes only a pycuda ``Stream`` or None, never the int handle of a
PyTorch or CuPy stream, and pycuda exposes no ``CUfunction`` to hand to
another binding. So a stream may be an int handle, a pycuda ``Stream``, or
0/None. The same bindings answer what pycuda has no call for: the calling
thread's current device, which device a pointer's memory is on
(``cuPointerGetAttribute``), and whether a stream is being captured into a
CUDA graph (``cuStreamIsCapturing``).

A kernel's fault surfaces from a later call as a pycuda error whose text is
the CUresult's description; ``LaunchLog`` (``faults.py``) names the launch
behind it.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any, ClassVar

from aotc.errors import BackendError, NoDeviceError
from aotc.runtime.backends.base import BackendBase, DeviceInfo, LaunchShape, byte_view, capture_error
from aotc.runtime.backends.driver_streams import DriverStreams
from aotc.runtime.backends.faults import STICKY_ERRORS, LaunchLog, is_sticky
from aotc.runtime.backends.packed_launch import launch_packed

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
        self._launches = LaunchLog()
        self._sticky_texts: dict[str, str] | None = None  # a sticky CUresult's description -> its name

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

    def _pycuda(self) -> Any:
        """``pycuda.driver``, once the device is open (or the one line why there is none)."""
        if self._cuda is None:
            self.device()
        return self._cuda

    def _enter(self) -> int:  # type: ignore[override] - which of two ways it pushed, for _leave
        """Make our context current: 0 if it was, 1 if pushed through pycuda, 2 through the driver."""
        cuda = self._pycuda()
        cu = self._bindings or self._driver()
        top = cuda.Context.get_current()
        if top is None or top.handle != self._context.handle:
            self._context.push()  # through pycuda: its allocations need ours on its own stack
            return 1
        err, current = cu.cuCtxGetCurrent()
        if not err and int(current) == self._context.handle:
            return 0
        # pycuda's stack has ours on top, but the driver another (torch.cuda.set_device since):
        # pycuda's push would pop that one off the driver's stack, so ours goes on top of it.
        self._check("cuCtxPushCurrent", cu.cuCtxPushCurrent(self._context.handle))
        return 2

    def _leave(self, pushed: int) -> None:  # type: ignore[override]
        if pushed == 1:
            self._cuda.Context.pop()
        elif pushed == 2:
            self._check("cuCtxPopCurrent", self._bindings.cuCtxPopCurrent())

    def _guard(self, what: str, call: Any, *args: Any) -> Any:
        """``call(*args)`` of pycuda in our context, its errors one line."""
        try:
            return self._in_context(call, *args)
        except self._cuda.Error as exc:
            reason = _one_line(exc)
            sticky = self._sticky_name(reason.partition(" failed: ")[2])
            if sticky is not None:
                raise self._launches.fault(self._ordinal, what, f"{sticky} ({reason})") from None
            msg = f"{what} failed: {reason}"
            raise BackendError(msg) from None

    def _check(self, what: str, result: tuple[Any, ...]) -> Any:
        """Unwrap a cuda-bindings ``(CUresult, value...)`` tuple, raising one line on failure."""
        err, *values = result
        if err != self._driver().CUresult.CUDA_SUCCESS:
            if is_sticky(getattr(err, "name", "")):
                raise self._launches.fault(self._ordinal, what, self._error_name(err))
            msg = f"{what} failed: {self._error_name(err)}"
            raise BackendError(msg, cuda_error=getattr(err, "name", None))
        return values[0] if len(values) == 1 else tuple(values)

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] = ()) -> Any:
        cu = self._driver()
        return self._check(f"loading {name}: cuModuleLoadData", self._in_context(cu.cuModuleLoadData, bytes(image)))

    def get_function(self, module: Any, symbol: str) -> Any:
        cu = self._driver()
        found = self._in_context(cu.cuModuleGetFunction, module, symbol.encode())
        function = self._check(f"cuModuleGetFunction({symbol})", found)
        self._launches.names[int(function)] = symbol
        return function

    def launch(self, function: Any, shape: LaunchShape, stream: Any, params: bytes) -> None:
        if type(stream) is not int:
            stream = _stream_handle(stream)
        cu = self._bindings or self._driver()
        pushed = self._enter()
        try:
            err = launch_packed(cu, function, shape, stream, params)
        finally:
            self._leave(pushed)
        if err != cu.CUresult.CUDA_SUCCESS:
            raise self._refused_launch(err, function, shape, stream)
        launches = self._launches
        launches.latest = launches.per_stream[stream] = (function, shape, stream)

    def alloc(self, nbytes: int) -> int:
        allocation = self._guard("mem_alloc", self._pycuda().mem_alloc, max(int(nbytes), 1))
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
            self._guard("memcpy_htod", self._pycuda().memcpy_htod, pointer, view)

    def copy_to_host(self, host: bytearray | memoryview, pointer: int) -> None:
        view = byte_view(host)
        if view is not None:
            self._guard("memcpy_dtoh", self._pycuda().memcpy_dtoh, view, pointer)

    def synchronize(self) -> None:
        self._guard("synchronize", self._pycuda().Context.synchronize)
        self._launches.settle()

    # -- what pycuda has no call for: asked of the same libcuda through cuda-bindings --

    def device_count(self) -> int:
        return int(self._pycuda().Device.count())  # opening the device: cuInit, or why there is no GPU

    def current_device(self) -> int:
        # cudaSetDevice (torch.cuda.set_device) makes that device's primary context current.
        self._pycuda()  # cuInit
        cu = self._driver()
        if not int(self._check("cuCtxGetCurrent", cu.cuCtxGetCurrent())):
            return 0
        return int(self._check("cuCtxGetDevice", cu.cuCtxGetDevice()))

    def pointer_device(self, pointer: int) -> int | None:
        cu = self._driver()
        self._pycuda()  # cuInit
        attribute = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        err, value = cu.cuPointerGetAttribute(attribute, cu.CUdeviceptr(pointer))
        # Host memory the driver does not know is no device's; a stale pointer neither.
        return int(value) if err == cu.CUresult.CUDA_SUCCESS else None

    def is_capturing(self, stream: Any) -> bool:
        cu = self._driver()
        result = self._in_context(cu.cuStreamIsCapturing, _stream_handle(stream))
        refusal = capture_error("cuStreamIsCapturing", getattr(result[0], "name", ""))  # the legacy stream: IMPLICIT
        if refusal is not None:
            raise refusal
        status = self._check("cuStreamIsCapturing", result)
        return status != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE

    # -- streams and events: DriverStreams, through cuda-bindings -------------------

    def _streams_driver(self) -> Any:
        return self._driver()

    def _streams_call(self, what: str, result: Any) -> Any:
        return self._check(what, result)

    def _driver(self) -> Any:
        """``cuda.bindings.driver``, which launches and answers what pycuda cannot."""
        if self._bindings is None:
            try:
                from cuda.bindings import driver
            except ImportError:
                msg = "the pycuda backend launches through cuda-bindings: pip install cuda-bindings"
                raise BackendError(msg) from None
            self._bindings = driver
        return self._bindings

    def _error_name(self, err: Any) -> str:
        cu = self._driver()
        try:
            _, name = cu.cuGetErrorName(err)
            _, text = cu.cuGetErrorString(err)
            return f"{name.decode()} ({text.decode()})"
        except Exception:  # noqa: BLE001 - only for a message
            return str(err)

    def _sticky_name(self, description: str) -> str | None:
        """The sticky CUresult whose description pycuda's message ends in, if any."""
        if self._sticky_texts is None:
            cu = self._driver()
            texts = {}
            for name in STICKY_ERRORS:
                err, text = cu.cuGetErrorString(getattr(cu.CUresult, name))
                if err == cu.CUresult.CUDA_SUCCESS and text:
                    texts[text.decode()] = name
            self._sticky_texts = texts
        return self._sticky_texts.get(description.strip())


def _stream_handle(stream: Any) -> int:
    """A stream as its int handle: an int, a pycuda ``Stream`` (``.handle``), a ``CUstream``, or 0/None."""
    if stream is None:
        return 0
    if type(stream) is int:
        return stream
    handle = getattr(stream, "handle", stream)  # a pycuda Stream; else a CUstream, which int() reads
    if isinstance(handle, int) or (hasattr(handle, "__int__") and not isinstance(handle, float)):
        return int(handle)
    msg = f"pycuda backend: a stream must be an int handle, a pycuda Stream or None, got {type(stream).__name__}"
    raise BackendError(msg)


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
