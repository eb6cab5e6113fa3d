"""The GPU backends' streams, events and queued copies, over the fake driver.

What the driver receives is checked call by call: the handles, the flags,
that copies and memsets name the call's stream, and that an ordering between
two streams is an event recorded on one and waited for on the other. The
driver's capture refusal on the legacy stream becomes one CaptureError line.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fake_driver import FakeDriver, driver

from aotc.errors import BackendError, CaptureError
from aotc.runtime.backends.cuda_python import CudaPythonBackend

__all__ = ["CapturingDriver"]


class CapturingDriver(FakeDriver):
    """The fake driver, with the driver's answer about the legacy stream while a
    blocking stream of the context is being captured: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT."""

    def cuStreamIsCapturing(self, stream: Any) -> tuple[Any, Any]:  # noqa: N802
        blocking = self.__dict__.get("created_streams", {})
        if int(stream or 0) in (0, 1) and any(blocking.get(s) == 0 for s in self.capturing):
            return driver.CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
        return super().cuStreamIsCapturing(stream)


@pytest.fixture
def fake() -> CapturingDriver:
    return CapturingDriver()


@pytest.fixture
def backend(fake: CapturingDriver) -> CudaPythonBackend:
    return CudaPythonBackend(driver=fake)


def test_streams_are_created_with_the_drivers_flags(backend: CudaPythonBackend, fake: CapturingDriver) -> None:
    blocking, non_blocking = backend.stream_create(), backend.stream_create(non_blocking=True)
    assert type(blocking) is int and type(non_blocking) is int and blocking != non_blocking
    backend.stream_synchronize(non_blocking)
    backend.stream_destroy(blocking)
    assert fake.stream_calls == [
        ("cuStreamCreate", int(driver.CUstream_flags.CU_STREAM_DEFAULT)),
        ("cuStreamCreate", int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)),
        ("cuStreamSynchronize", non_blocking),
        ("cuStreamDestroy", blocking),
    ]


def test_order_after_is_an_event_recorded_on_the_producer_and_waited_for(backend: CudaPythonBackend, fake: CapturingDriver) -> None:
    producer, consumer = backend.stream_create(non_blocking=True), backend.stream_create(non_blocking=True)
    fake.stream_calls.clear()
    backend.order_after(consumer, producer)
    (create, flags), (record, event, on), (wait, waiter, awaited), (destroy, gone) = fake.stream_calls
    assert (create, flags) == ("cuEventCreate", int(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    assert (record, on, wait, waiter, awaited, destroy, gone) == (
        "cuEventRecord", producer, "cuStreamWaitEvent", consumer, event, "cuEventDestroy", event,
    )  # fmt: skip
    fake.stream_calls.clear()
    backend.order_after(consumer, consumer)  # a stream is ordered after itself already
    assert fake.stream_calls == []


def test_queued_copies_and_memsets_name_the_calls_stream(backend: CudaPythonBackend, fake: CapturingDriver) -> None:
    stream = backend.stream_create(non_blocking=True)
    pointer = backend.alloc(16)  # the strict fake copies only within an allocation
    fake.stream_calls.clear()
    host = np.arange(4, dtype=np.float32)
    backend.copy_to_device_async(pointer, host, stream)
    backend.copy_to_host_async(memoryview(host.view("uint8")), pointer, stream)
    backend.memset_async(pointer, 0, 16, stream)
    backend.memset_async(pointer, 0, 0, stream)  # nothing to set: no call
    assert fake.stream_calls == [
        ("cuMemcpyHtoDAsync", pointer, 16, stream), ("cuMemcpyDtoHAsync", pointer, 16, stream), ("cuMemsetD8Async", pointer, 16, stream),
    ]  # fmt: skip
    backend.copy_to_host_async(memoryview(host.view("uint8")), pointer, stream)
    assert host.tolist() == [0.0] * 4  # the memset reached the device's bytes


def test_an_unknown_stream_is_the_drivers_one_line_error(backend: CudaPythonBackend) -> None:
    with pytest.raises(BackendError, match=r"^cuStreamSynchronize failed: CUDA_ERROR_INVALID_HANDLE"):
        backend.stream_synchronize(0x7777)


def test_the_legacy_stream_during_a_blocking_capture_is_a_capture_error(backend: CudaPythonBackend, fake: CapturingDriver) -> None:
    captured = backend.stream_create()  # blocking
    fake.capturing.add(captured)
    assert backend.is_capturing(captured)
    with pytest.raises(CaptureError) as info:
        backend.is_capturing(0)
    message = str(info.value)
    assert message.startswith("cuStreamIsCapturing failed: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT") and "\n" not in message
