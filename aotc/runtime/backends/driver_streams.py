"""Streams, events and queued copies through the CUDA driver API, for the GPU backends.

Both GPU backends reach libcuda through cuda-bindings for these (pycuda has no
call that takes a raw stream handle), so the methods live here once. A backend
mixes ``DriverStreams`` in and supplies two hooks: ``_streams_driver()``, the
``cuda.bindings.driver`` module, and ``_streams_call(what, result)``, which
unwraps a ``(CUresult, value...)`` tuple or raises one line (its ``_call``).
Each call runs inside the backend's context (``_in_context``).

A ``CUDA_ERROR_STREAM_CAPTURE_*`` result becomes ``CaptureError``.
"""

from __future__ import annotations

from typing import Any

from aotc.runtime.backends.base import byte_view, capture_error

__all__ = ["DriverStreams"]

# The driver's flag values (cuda.h), part of its ABI.
_CU_STREAM_DEFAULT, _CU_STREAM_NON_BLOCKING = 0x0, 0x1
_CU_EVENT_DISABLE_TIMING = 0x2


class DriverStreams:
    """The Backend protocol's stream, event and async-copy methods over the driver API."""

    def _streams_driver(self) -> Any:
        raise NotImplementedError

    def _streams_call(self, what: str, result: Any) -> Any:
        raise NotImplementedError

    def _driver_call(self, name: str, *args: Any) -> Any:
        cu = self._streams_driver()
        result = self._in_context(getattr(cu, name), *args)  # type: ignore[attr-defined]
        refusal = capture_error(name, getattr(result[0], "name", ""))
        if refusal is not None:
            raise refusal
        return self._streams_call(name, result)

    def stream_create(self, non_blocking: bool = False) -> int:
        return int(self._driver_call("cuStreamCreate", _CU_STREAM_NON_BLOCKING if non_blocking else _CU_STREAM_DEFAULT))

    def stream_destroy(self, stream: int) -> None:
        self._driver_call("cuStreamDestroy", stream)

    def stream_synchronize(self, stream: Any) -> None:
        self._driver_call("cuStreamSynchronize", stream)

    def event_create(self) -> int:
        return int(self._driver_call("cuEventCreate", _CU_EVENT_DISABLE_TIMING))

    def event_destroy(self, event: int) -> None:
        self._driver_call("cuEventDestroy", event)

    def event_record(self, event: int, stream: Any) -> None:
        self._driver_call("cuEventRecord", event, stream)

    def event_synchronize(self, event: int) -> None:
        self._driver_call("cuEventSynchronize", event)

    def stream_wait_event(self, stream: Any, event: int) -> None:
        self._driver_call("cuStreamWaitEvent", stream, event, 0)

    def copy_to_device_async(self, pointer: int, host: bytes | bytearray | memoryview, stream: Any) -> None:
        view = byte_view(host)
        if view is not None:
            self._driver_call("cuMemcpyHtoDAsync", self._streams_driver().CUdeviceptr(pointer), view, view.nbytes, stream)

    def copy_to_host_async(self, host: bytearray | memoryview, pointer: int, stream: Any) -> None:
        view = byte_view(host)
        if view is not None:
            self._driver_call("cuMemcpyDtoHAsync", view, self._streams_driver().CUdeviceptr(pointer), view.nbytes, stream)

    def memset_async(self, pointer: int, value: int, nbytes: int, stream: Any) -> None:
        if nbytes:
            self._driver_call("cuMemsetD8Async", self._streams_driver().CUdeviceptr(pointer), value, nbytes, stream)
