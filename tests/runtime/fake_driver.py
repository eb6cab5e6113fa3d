"""A strict stand-in for ``cuda.bindings.driver``: the GPU backends without a GPU.

It answers the slice of the driver API the backends call, and refuses what the
real driver refuses, so a test fails where a GPU would:

- arguments: what cuda-bindings converts (ints, its handle types, None where it
  takes None); a ``str``, ``bytes`` or an object that only has ``.handle`` (a
  pycuda ``Stream``) is a ``TypeError``, as it is there;
- results: the real handle types (``CUcontext``, ``CUmodule``, ``CUfunction``,
  ``CUdeviceptr``), which compare unequal to ints, as the real ones do;
- state: ``cuInit`` first (else ``CUDA_ERROR_NOT_INITIALIZED``); the current
  context is per thread, a stack (``fake.current`` is the calling thread's
  top); calls that need one get ``CUDA_ERROR_INVALID_CONTEXT`` without it;
  functions belong to the context their module was loaded in, streams to the
  context they were made in, and launching them in another is
  ``CUDA_ERROR_INVALID_HANDLE``; a launch shape outside the device limits
  is ``CUDA_ERROR_INVALID_VALUE``; memory is real bytes, and a pointer outside
  an allocation (or a copy into a read-only host buffer) is ``CUDA_ERROR_INVALID_VALUE``;
- faults: ``fault_on(symbol)`` makes a launch of that kernel break its context,
  as a kernel that reads an illegal address does: the launch returns
  success, and every later call in the context returns the sticky error.

Device ``n``'s primary context is ``context_of(n)``; ``foreign_context(n)``
makes another one current (``cuCtxCreate``, ``pycuda.autoinit``).
``pointers`` maps device pointers to their device, as
``cuPointerGetAttribute`` knows them; ``capturing`` holds the streams being
captured into a CUDA graph. The enums and handle types come from the real
module, so a machine without cuda-bindings skips the tests that import this.
Not a conftest.py (see runtime_support.py).
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from typing import Any

import pytest

driver = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is a default dependency")
SUCCESS = driver.CUresult.CUDA_SUCCESS
_ERR = driver.CUresult

__all__ = ["SUCCESS", "FakeDriver", "context_of", "driver", "handle"]

# Streams every context has: the legacy default stream (0 or CU_STREAM_LEGACY) and the per-thread one.
BUILTIN_STREAMS = (0, 1, 2)
# What cuGetErrorString says for the errors tests provoke; others: "described".
ERROR_STRINGS = {
    "CUDA_ERROR_ILLEGAL_ADDRESS": b"an illegal memory access was encountered",
    "CUDA_ERROR_LAUNCH_FAILED": b"unspecified launch failure",
}


def context_of(device: int) -> int:
    """The primary context the fake hands out for ``device`` (device 0: 0xC0FFEE)."""
    return 0xC0FFEE + 0x100 * device


def launchable(grid: tuple[int, ...], block: tuple[int, ...], shared: int) -> bool:
    """Whether a launch shape is within what every GPU since sm_70 takes without opting in:
    grid x < 2**31, y and z <= 65535; block x, y <= 1024, z <= 64, 1024 threads; 48 KiB dynamic shared."""
    if min(grid) < 1 or grid[0] >= 2**31 or max(grid[1:]) > 65535:
        return False
    if min(block) < 1 or max(block[:2]) > 1024 or block[2] > 64 or block[0] * block[1] * block[2] > 1024:
        return False
    return 0 <= shared <= 48 * 1024


def handle(value: Any, *, none: bool = True) -> int:
    """``value`` as cuda-bindings reads a handle or integer argument; its TypeError where it refuses."""
    if value is None:
        if none:
            return 0
        raise TypeError("an integer is required")
    if isinstance(value, (str, bytes, bytearray)) or not hasattr(value, "__int__"):
        raise TypeError("an integer is required")  # cuda-bindings' words; a pycuda Stream lands here
    return int(value)


class FakeDriver:
    """The slice of cuda.bindings.driver the backends use, strict, recording calls."""

    CUresult = driver.CUresult
    CUdevice_attribute = driver.CUdevice_attribute
    CUdeviceptr = driver.CUdeviceptr
    CUpointer_attribute = driver.CUpointer_attribute
    CUstreamCaptureStatus = driver.CUstreamCaptureStatus

    def __init__(
        self, init: Any = SUCCESS, current: int = 0, version: int = 13010, capabilities: tuple[tuple[int, int], ...] = ((8, 6),)
    ) -> None:
        self.init = init
        self.initialised = False
        self.capabilities = capabilities
        self.contexts: dict[int, int] = {context_of(n): n for n in range(len(capabilities))}  # context -> device
        self._threads = threading.local()
        self._creator = threading.get_ident()
        self._creator_stack: list[int] = [int(current)] if current else []
        self.pointers: dict[int, int] = {}  # device pointer -> its device ordinal
        self.memory: dict[int, bytearray] = {}  # allocation start -> its bytes
        self.streams: dict[int, int] = {}  # stream handle -> its context
        self.capturing: set[int] = set()  # streams being captured into a graph
        self.modules: dict[int, int] = {}  # module handle -> the context it was loaded in
        self.functions: dict[int, tuple[str, int]] = {}  # function handle -> (symbol, its context)
        self.sticky: dict[int, Any] = {}  # context -> the error every call in it returns now
        self.faults: dict[str, Any] = {}  # kernel symbol -> the sticky error a launch of it causes
        self.launch_blocking = False  # CUDA_LAUNCH_BLOCKING=1: a launch returns its own kernel's fault
        self.loaded_in: list[int] = []  # the context current at each cuModuleLoadData
        self.version = version  # what cuDriverGetVersion answers
        self.loaded: list[bytes] = []  # images cuModuleLoadData accepted
        self.calls: list[str] = []
        self.launches: list[dict[str, Any]] = []
        self._handles = itertools.count(0x10)
        self._next_pointer = 0xD000_0000
        self.attributes = {
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 8,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 6,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 84,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CLOCK_RATE: 1_695_000,
        }
        if current and int(current) not in self.contexts:
            self.contexts[int(current)] = 0  # a context some other code created on device 0

    # -- what tests set up ------------------------------------------------------------

    @property
    def stack(self) -> list[int]:
        """The calling thread's context stack (the creating thread starts with ``current``)."""
        stack = getattr(self._threads, "stack", None)
        if stack is None:
            stack = self._threads.stack = self._creator_stack if threading.get_ident() == self._creator else []
        return stack

    @property
    def current(self) -> int:
        """The calling thread's current context, 0 for none."""
        return self.stack[-1] if self.stack else 0

    @current.setter
    def current(self, context: int) -> None:
        """Make ``context`` current as cuCtxSetCurrent does: it replaces the top (0 pops it)."""
        stack = self.stack
        if stack:
            stack.pop()
        if context:
            stack.append(int(context))

    def foreign_context(self, device: int = 0) -> int:
        """A context of ``device`` that is not its primary one, pushed current (cuCtxCreate)."""
        context = 0xBEEF00 + next(self._handles)
        self.contexts[context] = device
        self.stack.append(context)
        return context

    def add_stream(self, stream: int, device: int = 0) -> int:
        """Register ``stream`` as a stream of ``device``'s primary context (made by torch, CuPy)."""
        self.streams[int(stream)] = context_of(device)
        return stream

    def fault_on(self, symbol: str, error: Any = _ERR.CUDA_ERROR_ILLEGAL_ADDRESS) -> None:
        """A launch of ``symbol`` breaks its context with the sticky ``error``."""
        self.faults[symbol] = error

    # -- checks every call makes ---------------------------------------------------------

    def _context_error(self) -> Any:
        """SUCCESS if a usable context is current in this thread; else the error the call returns."""
        if not self.initialised:
            return _ERR.CUDA_ERROR_NOT_INITIALIZED
        context = self.current
        if not context:
            return _ERR.CUDA_ERROR_INVALID_CONTEXT
        return self.sticky.get(context, SUCCESS)

    def _stream_error(self, stream: Any) -> Any:
        value = handle(stream)
        if value in BUILTIN_STREAMS:
            return SUCCESS
        owner = self.streams.get(value)
        return SUCCESS if owner == self.current else _ERR.CUDA_ERROR_INVALID_HANDLE

    def _allocation(self, pointer: int, nbytes: int) -> tuple[bytearray, int] | None:
        for start, data in self.memory.items():
            if start <= pointer and pointer + nbytes <= start + len(data):
                return data, pointer - start
        return None

    # -- devices ---------------------------------------------------------------------------

    def cuInit(self, flags: int) -> tuple[Any]:  # noqa: N802 - the driver's names
        if isinstance(self.init, Exception):
            raise self.init
        handle(flags, none=False)
        self.initialised = self.init == SUCCESS
        return (self.init,)

    def cuDeviceGetCount(self) -> tuple[Any, int]:  # noqa: N802
        if not self.initialised:
            return _ERR.CUDA_ERROR_NOT_INITIALIZED, 0
        return SUCCESS, len(self.capabilities)

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, Any]:  # noqa: N802
        ordinal = handle(ordinal, none=False)
        if not self.initialised:
            return _ERR.CUDA_ERROR_NOT_INITIALIZED, None
        if not 0 <= ordinal < len(self.capabilities):
            return _ERR.CUDA_ERROR_INVALID_DEVICE, None
        return SUCCESS, driver.CUdevice(ordinal)

    def cuDevicePrimaryCtxRetain(self, device: Any) -> tuple[Any, Any]:  # noqa: N802
        ordinal = handle(device)
        if not self.initialised:
            return _ERR.CUDA_ERROR_NOT_INITIALIZED, None
        return SUCCESS, driver.CUcontext(context_of(ordinal))

    def cuDeviceGetName(self, length: int, device: Any) -> tuple[Any, bytes]:  # noqa: N802
        handle(length, none=False)
        handle(device)
        return SUCCESS, b"Stand-in GPU\0\0\0"

    def cuDeviceGetAttribute(self, attribute: Any, device: Any) -> tuple[Any, int]:  # noqa: N802
        ordinal = handle(device)
        major, minor = self.capabilities[ordinal]
        if ordinal and attribute == driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
            return SUCCESS, major
        if ordinal and attribute == driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
            return SUCCESS, minor
        return SUCCESS, self.attributes[attribute]

    def cuDriverGetVersion(self) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, self.version

    def cuPointerGetAttribute(self, attribute: Any, pointer: Any) -> tuple[Any, int]:  # noqa: N802
        assert attribute == driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        device = self.pointers.get(handle(pointer))
        return (SUCCESS, device) if device is not None else (_ERR.CUDA_ERROR_INVALID_VALUE, 0)

    # -- contexts ----------------------------------------------------------------------

    def cuCtxGetCurrent(self) -> tuple[Any, Any]:  # noqa: N802
        self.calls.append("get")
        if not self.initialised:
            return _ERR.CUDA_ERROR_NOT_INITIALIZED, None
        return SUCCESS, driver.CUcontext(self.current)

    def cuCtxGetDevice(self) -> tuple[Any, Any]:  # noqa: N802
        err = self._context_error()
        return (err, None) if err != SUCCESS else (SUCCESS, driver.CUdevice(self.contexts[self.current]))

    def cuCtxSetCurrent(self, context: Any) -> tuple[Any]:  # noqa: N802
        self.calls.append("set")
        value = handle(context)
        if value and value not in self.contexts:
            return (_ERR.CUDA_ERROR_INVALID_CONTEXT,)
        self.current = value
        return (SUCCESS,)

    def cuCtxPushCurrent(self, context: Any) -> tuple[Any]:  # noqa: N802
        self.calls.append("push")
        value = handle(context)
        if value not in self.contexts:
            return (_ERR.CUDA_ERROR_INVALID_CONTEXT,)
        self.stack.append(value)
        return (SUCCESS,)

    def cuCtxPopCurrent(self) -> tuple[Any, Any]:  # noqa: N802
        self.calls.append("pop")
        if not self.stack:
            return _ERR.CUDA_ERROR_INVALID_CONTEXT, None
        return SUCCESS, driver.CUcontext(self.stack.pop())

    def cuCtxSynchronize(self) -> tuple[Any]:  # noqa: N802
        return (self._context_error(),)

    # -- modules and launches --------------------------------------------------------------

    def cuModuleLoadData(self, image: Any) -> tuple[Any, Any]:  # noqa: N802
        if isinstance(image, str) or not isinstance(image, (bytes, bytearray, memoryview)):
            raise TypeError(f"Provided argument is of type {type(image)} but expected Type None, int or object with Buffer Protocol")
        err = self._context_error()
        if err != SUCCESS:
            return err, None
        if not bytes(image).startswith((b"good", b"stand-in fatbin")):  # the latter: runtime_support's libraries
            return _ERR.CUDA_ERROR_NO_BINARY_FOR_GPU, None
        self.loaded.append(bytes(image))
        self.loaded_in.append(self.current)
        module = next(self._handles)
        self.modules[module] = self.current
        return SUCCESS, driver.CUmodule(module)

    def cuModuleGetFunction(self, module: Any, symbol: bytes) -> tuple[Any, Any]:  # noqa: N802
        if not isinstance(symbol, bytes):
            raise TypeError(f"Argument 'name' has incorrect type (expected bytes, got {type(symbol).__name__})")
        if not self.initialised:
            return _ERR.CUDA_ERROR_NOT_INITIALIZED, None
        # Whether the driver wants the module's context current here, its docs do not say: not checked.
        owner = self.modules.get(handle(module))
        if owner is None:
            return _ERR.CUDA_ERROR_INVALID_HANDLE, None
        function = next(self._handles)
        self.functions[function] = (symbol.decode(), owner)
        return SUCCESS, driver.CUfunction(function)

    def cuLaunchKernel(self, function: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: Any, params: Any, extra: int) -> tuple[Any]:  # noqa: N802
        dims = tuple(handle(value, none=False) for value in (gx, gy, gz, bx, by, bz, shared))
        extra_address = handle(extra, none=False)
        err = self._context_error()
        if err != SUCCESS:
            return (err,)
        known = self.functions.get(handle(function))
        if known is None or known[1] != self.current or self._stream_error(stream) != SUCCESS:
            return (_ERR.CUDA_ERROR_INVALID_HANDLE,)
        if params is not None and extra_address:
            return (_ERR.CUDA_ERROR_INVALID_VALUE,)  # kernelParams and extra are exclusive
        if not launchable(dims[:3], dims[3:6], dims[6]):
            return (_ERR.CUDA_ERROR_INVALID_VALUE,)
        # Read `extra` while it is alive, as the driver does.
        words = (ctypes.c_void_p * 5).from_address(extra_address)
        size = ctypes.c_size_t.from_address(words[3]).value
        symbol = known[0]
        self.launches.append({
            "function": f"module:{symbol}", "kernel": symbol, "grid": dims[:3], "block": dims[3:6], "shared": dims[6],
            "stream": handle(stream), "params": params, "markers": (words[0], words[2], words[4]),
            "block_bytes": ctypes.string_at(words[1], size), "context": self.current,
        })  # fmt: skip
        if symbol in self.faults:
            self.sticky[self.current] = self.faults[symbol]  # found when the kernel runs, after the launch returned
            if self.launch_blocking:  # CUDA_LAUNCH_BLOCKING=1: the launch waits for its kernel
                return (self.faults[symbol],)
        return (SUCCESS,)

    def cuStreamIsCapturing(self, stream: Any) -> tuple[Any, Any]:  # noqa: N802
        err = self._context_error()
        if err == SUCCESS:
            err = self._stream_error(stream)
        if err != SUCCESS:
            return err, None
        status = driver.CUstreamCaptureStatus
        active = handle(stream) in self.capturing
        return SUCCESS, status.CU_STREAM_CAPTURE_STATUS_ACTIVE if active else status.CU_STREAM_CAPTURE_STATUS_NONE

    # -- memory --------------------------------------------------------------------------

    def cuMemAlloc(self, nbytes: int) -> tuple[Any, Any]:  # noqa: N802
        size = handle(nbytes, none=False)
        err = self._context_error()
        if err != SUCCESS:
            return err, None
        if size <= 0:
            return _ERR.CUDA_ERROR_INVALID_VALUE, None
        pointer = self._next_pointer
        self._next_pointer += (size + 0xFFF) & ~0xFFF
        self.memory[pointer] = bytearray(size)
        self.pointers[pointer] = self.contexts[self.current]
        return SUCCESS, driver.CUdeviceptr(pointer)

    def cuMemFree(self, pointer: Any) -> tuple[Any]:  # noqa: N802
        value = handle(pointer)
        err = self._context_error()
        if err != SUCCESS:
            return (err,)
        if self.memory.pop(value, None) is None:
            return (_ERR.CUDA_ERROR_INVALID_VALUE,)
        self.pointers.pop(value, None)
        return (SUCCESS,)

    def cuMemcpyHtoD(self, dst: Any, src: Any, nbytes: int) -> tuple[Any]:  # noqa: N802
        pointer, size = handle(dst), handle(nbytes, none=False)
        data = memoryview(src).cast("B")  # a buffer; an int host address is not modelled
        err = self._context_error()
        if err != SUCCESS:
            return (err,)
        found = self._allocation(pointer, size)
        if found is None or data.nbytes < size:
            return (_ERR.CUDA_ERROR_INVALID_VALUE,)
        memory, offset = found
        memory[offset : offset + size] = data[:size]
        return (SUCCESS,)

    def cuMemcpyDtoH(self, dst: Any, src: Any, nbytes: int) -> tuple[Any]:  # noqa: N802
        pointer, size = handle(src), handle(nbytes, none=False)
        host = memoryview(dst).cast("B")
        err = self._context_error()
        if err != SUCCESS:
            return (err,)
        found = self._allocation(pointer, size)
        if found is None or host.nbytes < size or host.readonly:
            return (_ERR.CUDA_ERROR_INVALID_VALUE,)
        memory, offset = found
        host[:size] = memory[offset : offset + size]
        return (SUCCESS,)

    # -- errors ------------------------------------------------------------------------

    def cuGetErrorName(self, err: Any) -> tuple[Any, bytes]:  # noqa: N802
        return SUCCESS, driver.CUresult(err).name.encode()

    def cuGetErrorString(self, err: Any) -> tuple[Any, bytes]:  # noqa: N802
        return SUCCESS, ERROR_STRINGS.get(driver.CUresult(err).name, b"described")

    # --- streams, events and queued copies --------------------------------------------
    # Strict as the rest: a context must be current, a stream must be the legacy one or
    # one of the current context's, an event one this fake made. Recorded in
    # `stream_calls` as (name, plain ints...); `created_streams` keeps each stream's flags.

    def _stream_call(self, *streams: Any) -> Any:
        err = self._context_error()
        if err != SUCCESS:
            return err
        for stream in streams:
            err = self._stream_error(stream)
            if err != SUCCESS:
                return err
        return SUCCESS

    def _record(self, name: str, *args: Any) -> None:
        self.__dict__.setdefault("stream_calls", []).append((name, *(int(a) for a in args)))

    def cuStreamCreate(self, flags: int) -> tuple[Any, Any]:  # noqa: N802
        flags = handle(flags, none=False)
        err = self._context_error()
        if err != SUCCESS:
            return err, None
        stream = 0x5000 + 0x10 * next(self._handles)
        self.streams[stream] = self.current
        self.__dict__.setdefault("created_streams", {})[stream] = flags  # 1 = CU_STREAM_NON_BLOCKING
        self._record("cuStreamCreate", flags)
        return SUCCESS, driver.CUstream(stream)

    def cuStreamDestroy(self, stream: Any) -> tuple[Any]:  # noqa: N802
        value = handle(stream)
        err = self._stream_call(stream)
        if err == SUCCESS and value in BUILTIN_STREAMS:
            err = _ERR.CUDA_ERROR_INVALID_HANDLE
        if err != SUCCESS:
            return (err,)
        del self.streams[value]
        self.created_streams.pop(value, None)
        self._record("cuStreamDestroy", stream)
        return (SUCCESS,)

    def cuStreamSynchronize(self, stream: Any) -> tuple[Any]:  # noqa: N802
        err = self._stream_call(stream)
        if err == SUCCESS:
            self._record("cuStreamSynchronize", stream)
        return (err,)

    def cuEventCreate(self, flags: int) -> tuple[Any, Any]:  # noqa: N802
        flags = handle(flags, none=False)
        err = self._context_error()
        if err != SUCCESS:
            return err, None
        event = 0x7000 + 0x10 * next(self._handles)
        self.__dict__.setdefault("events", set()).add(event)
        self._record("cuEventCreate", flags)
        return SUCCESS, driver.CUevent(event)

    def _event_call(self, name: str, event: Any, *streams: Any) -> tuple[Any]:
        err = self._stream_call(*streams)
        if err == SUCCESS and handle(event) not in self.__dict__.get("events", ()):
            err = _ERR.CUDA_ERROR_INVALID_HANDLE
        if err == SUCCESS:
            self._record(name, event, *streams)
        return (err,)

    def cuEventDestroy(self, event: Any) -> tuple[Any]:  # noqa: N802
        result = self._event_call("cuEventDestroy", event)
        self.__dict__.get("events", set()).discard(handle(event))
        return result

    def cuEventRecord(self, event: Any, stream: Any) -> tuple[Any]:  # noqa: N802
        return self._event_call("cuEventRecord", event, stream)

    def cuEventSynchronize(self, event: Any) -> tuple[Any]:  # noqa: N802
        return self._event_call("cuEventSynchronize", event)

    def cuStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> tuple[Any]:  # noqa: N802
        if handle(flags, none=False) != 0:
            return (_ERR.CUDA_ERROR_INVALID_VALUE,)
        err = self._stream_call(stream)
        if err == SUCCESS and handle(event) not in self.__dict__.get("events", ()):
            err = _ERR.CUDA_ERROR_INVALID_HANDLE
        if err == SUCCESS:
            self._record("cuStreamWaitEvent", stream, event)
        return (err,)

    def _async_copy(self, name: str, pointer: Any, nbytes: int, stream: Any) -> tuple[Any]:
        # The bindings take a CUdeviceptr or a plain int address alike.
        value, size = handle(pointer), handle(nbytes, none=False)
        err = self._stream_call(stream)
        if err == SUCCESS and self._allocation(value, size) is None:
            err = _ERR.CUDA_ERROR_INVALID_VALUE
        if err == SUCCESS:
            self._record(name, value, size, stream)
        return (err,)

    def cuMemcpyHtoDAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        result = self._async_copy("cuMemcpyHtoDAsync", dst, nbytes, stream)
        if result[0] == SUCCESS:  # the fake runs queued work at once
            memory, offset = self._allocation(handle(dst), nbytes)
            memory[offset : offset + nbytes] = memoryview(src).cast("B")[:nbytes]
        return result

    def cuMemcpyDtoHAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        result = self._async_copy("cuMemcpyDtoHAsync", src, nbytes, stream)
        if result[0] == SUCCESS:
            memory, offset = self._allocation(handle(src), nbytes)
            memoryview(dst).cast("B")[:nbytes] = memory[offset : offset + nbytes]
        return result

    def cuMemsetD8Async(self, dst: Any, value: int, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        result = self._async_copy("cuMemsetD8Async", dst, nbytes, stream)
        if result[0] == SUCCESS:
            memory, offset = self._allocation(handle(dst), nbytes)
            memory[offset : offset + nbytes] = bytes([handle(value, none=False) & 0xFF]) * nbytes
        return result
