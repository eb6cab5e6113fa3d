"""A stand-in for ``cuda.bindings.driver``: the cuda-python backend without a GPU.

It answers the slice of the driver API the backend calls, records context
calls and launches (with the context current at each), and reports whatever
driver version a test gives it. It presents one device per entry of
``capabilities``; device ``n``'s primary context is ``context_of(n)``.
``pointers`` maps device pointers to their device, as
``cuPointerGetAttribute`` knows them; ``capturing`` holds the streams being
captured into a CUDA graph. The
enums come from the real module, so a machine without cuda-bindings skips
the tests that import this. Not a conftest.py (see runtime_support.py).
"""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

driver = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is a default dependency")
SUCCESS = driver.CUresult.CUDA_SUCCESS

__all__ = ["SUCCESS", "FakeDriver", "context_of", "driver"]


def context_of(device: int) -> int:
    """The primary context the fake hands out for ``device`` (device 0: 0xC0FFEE)."""
    return 0xC0FFEE + 0x100 * device


class FakeDriver:
    """The slice of cuda.bindings.driver the backend uses, recording calls."""

    CUresult = driver.CUresult
    CUdevice_attribute = driver.CUdevice_attribute
    CUdeviceptr = driver.CUdeviceptr
    CUpointer_attribute = driver.CUpointer_attribute
    CUstreamCaptureStatus = driver.CUstreamCaptureStatus

    def __init__(
        self, init: Any = SUCCESS, current: int = 0, version: int = 13010, capabilities: tuple[tuple[int, int], ...] = ((8, 6),)
    ) -> None:
        self.init = init
        self.current = current
        self.capabilities = capabilities
        self.pointers: dict[int, int] = {}  # device pointer -> its device ordinal
        self.capturing: set[int] = set()  # streams being captured into a graph
        self.loaded_in: list[int] = []  # the context current at each cuModuleLoadData
        self._pushed: list[int] = []
        self.version = version  # what cuDriverGetVersion answers
        self.loaded: list[bytes] = []  # images cuModuleLoadData accepted
        self.calls: list[str] = []
        self.launches: list[dict[str, Any]] = []
        self.attributes = {
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 8,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 6,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 84,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CLOCK_RATE: 1_695_000,
        }

    def cuInit(self, flags: int) -> tuple[Any]:  # noqa: N802 - the driver's names
        if isinstance(self.init, Exception):
            raise self.init
        return (self.init,)

    def cuDeviceGetCount(self) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, len(self.capabilities)

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, ordinal

    def cuDevicePrimaryCtxRetain(self, device: int) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, context_of(int(device))

    def cuDeviceGetName(self, length: int, device: int) -> tuple[Any, bytes]:  # noqa: N802
        return SUCCESS, b"Stand-in GPU\0\0\0"

    def cuDeviceGetAttribute(self, attribute: Any, device: int) -> tuple[Any, int]:  # noqa: N802
        major, minor = self.capabilities[int(device)]
        if int(device) and attribute == driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
            return SUCCESS, major
        if int(device) and attribute == driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
            return SUCCESS, minor
        return SUCCESS, self.attributes[attribute]

    def cuCtxGetDevice(self) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, (self.current - 0xC0FFEE) // 0x100

    def cuPointerGetAttribute(self, attribute: Any, pointer: Any) -> tuple[Any, int]:  # noqa: N802
        assert attribute == driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        device = self.pointers.get(int(pointer))
        return (SUCCESS, device) if device is not None else (driver.CUresult.CUDA_ERROR_INVALID_VALUE, 0)

    def cuStreamIsCapturing(self, stream: Any) -> tuple[Any, Any]:  # noqa: N802
        status = driver.CUstreamCaptureStatus
        active = int(stream or 0) in self.capturing
        return SUCCESS, status.CU_STREAM_CAPTURE_STATUS_ACTIVE if active else status.CU_STREAM_CAPTURE_STATUS_NONE

    def cuDriverGetVersion(self) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, self.version

    def cuCtxGetCurrent(self) -> tuple[Any, int]:  # noqa: N802
        self.calls.append("get")
        return SUCCESS, self.current

    def cuCtxSetCurrent(self, context: int) -> tuple[Any]:  # noqa: N802
        self.calls.append("set")
        self.current = context
        return (SUCCESS,)

    def cuCtxPushCurrent(self, context: int) -> tuple[Any]:  # noqa: N802
        self.calls.append("push")
        self._pushed.append(self.current)
        self.current = int(context)
        return (SUCCESS,)

    def cuCtxPopCurrent(self) -> tuple[Any, int]:  # noqa: N802
        self.calls.append("pop")
        popped, self.current = self.current, self._pushed.pop()
        return SUCCESS, popped

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, str]:  # noqa: N802
        if not image.startswith((b"good", b"stand-in fatbin")):  # the latter: runtime_support's libraries
            return driver.CUresult.CUDA_ERROR_NO_BINARY_FOR_GPU, None
        self.loaded.append(image)
        self.loaded_in.append(self.current)
        return SUCCESS, "module"

    def cuModuleGetFunction(self, module: str, symbol: bytes) -> tuple[Any, str]:  # noqa: N802
        return SUCCESS, f"{module}:{symbol.decode()}"

    def cuLaunchKernel(self, function: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: Any, params: Any, extra: int) -> tuple[Any]:  # noqa: N802, E501
        # Read `extra` while it is alive, as the driver does.
        words = (ctypes.c_void_p * 5).from_address(extra)
        size = ctypes.c_size_t.from_address(words[3]).value
        self.launches.append({
            "function": function, "grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shared, "stream": stream,
            "params": params, "markers": (words[0], words[2], words[4]), "block_bytes": ctypes.string_at(words[1], size), "context": self.current,
        })  # fmt: skip
        return (SUCCESS,)

    def cuGetErrorName(self, err: Any) -> tuple[Any, bytes]:  # noqa: N802
        return SUCCESS, err.name.encode()

    def cuGetErrorString(self, err: Any) -> tuple[Any, bytes]:  # noqa: N802
        return SUCCESS, b"described"

    # --- streams, events and queued copies --------------------------------------------
    # Recorded in `stream_calls` as (name, plain ints...); handles are the real types.
    # A stream or event must be one this fake created (or 0/1, the legacy stream).

    def _known_stream(self, stream: Any) -> bool:
        return int(stream) in (0, 1) or int(stream) in self.__dict__.setdefault("created_streams", {})

    def _new_handle(self) -> int:
        self.__dict__.setdefault("next_handle", 0x5000)
        self.next_handle += 0x10
        return self.next_handle

    def _record(self, name: str, *args: Any) -> None:
        self.__dict__.setdefault("stream_calls", []).append((name, *(int(a) for a in args)))

    def cuStreamCreate(self, flags: int) -> tuple[Any, Any]:  # noqa: N802
        handle = self._new_handle()
        self.__dict__.setdefault("created_streams", {})[handle] = int(flags)  # flags: 1 = CU_STREAM_NON_BLOCKING
        self._record("cuStreamCreate", flags)
        return SUCCESS, driver.CUstream(handle)

    def cuStreamDestroy(self, stream: Any) -> tuple[Any]:  # noqa: N802
        if not self._known_stream(stream) or int(stream) in (0, 1):
            return (driver.CUresult.CUDA_ERROR_INVALID_HANDLE,)
        del self.created_streams[int(stream)]
        self._record("cuStreamDestroy", stream)
        return (SUCCESS,)

    def cuStreamSynchronize(self, stream: Any) -> tuple[Any]:  # noqa: N802
        if not self._known_stream(stream):
            return (driver.CUresult.CUDA_ERROR_INVALID_HANDLE,)
        self._record("cuStreamSynchronize", stream)
        return (SUCCESS,)

    def cuEventCreate(self, flags: int) -> tuple[Any, Any]:  # noqa: N802
        handle = self._new_handle()
        self.__dict__.setdefault("events", set()).add(handle)
        self._record("cuEventCreate", flags)
        return SUCCESS, driver.CUevent(handle)

    def _event_call(self, name: str, event: Any, *streams: Any) -> tuple[Any]:
        if int(event) not in self.__dict__.get("events", ()) or not all(self._known_stream(s) for s in streams):
            return (driver.CUresult.CUDA_ERROR_INVALID_HANDLE,)
        self._record(name, event, *streams)
        return (SUCCESS,)

    def cuEventDestroy(self, event: Any) -> tuple[Any]:  # noqa: N802
        result = self._event_call("cuEventDestroy", event)
        self.__dict__.get("events", set()).discard(int(event))
        return result

    def cuEventRecord(self, event: Any, stream: Any) -> tuple[Any]:  # noqa: N802
        return self._event_call("cuEventRecord", event, stream)

    def cuEventSynchronize(self, event: Any) -> tuple[Any]:  # noqa: N802
        return self._event_call("cuEventSynchronize", event)

    def cuStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> tuple[Any]:  # noqa: N802
        if flags != 0:
            return (driver.CUresult.CUDA_ERROR_INVALID_VALUE,)
        if not self._known_stream(stream) or int(event) not in self.__dict__.get("events", ()):
            return (driver.CUresult.CUDA_ERROR_INVALID_HANDLE,)
        self._record("cuStreamWaitEvent", stream, event)
        return (SUCCESS,)

    def _async_copy(self, name: str, pointer: Any, nbytes: int, stream: Any) -> tuple[Any]:
        if not isinstance(pointer, driver.CUdeviceptr) or not self._known_stream(stream):
            return (driver.CUresult.CUDA_ERROR_INVALID_VALUE,)
        self._record(name, pointer, nbytes, stream)
        return (SUCCESS,)

    def cuMemcpyHtoDAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        return self._async_copy("cuMemcpyHtoDAsync", dst, nbytes, stream)

    def cuMemcpyDtoHAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        return self._async_copy("cuMemcpyDtoHAsync", src, nbytes, stream)

    def cuMemsetD8Async(self, dst: Any, value: int, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        return self._async_copy("cuMemsetD8Async", dst, nbytes, stream)
