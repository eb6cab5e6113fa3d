"""The pycuda backend's host-side logic, without a GPU or pycuda: a stand-in
``pycuda.driver`` for what pycuda answers, and the fake cuda-bindings driver
for the two questions the backend asks of libcuda directly (which device a
pointer is on, whether a stream is being captured)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from aotc.errors import BackendError
from aotc.runtime.backends.pycuda import PyCudaBackend
from fake_driver import FakeDriver, driver


class _Context:
    current: Any = None

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def push(self) -> None:
        _Context.current = self

    @staticmethod
    def pop() -> None:
        _Context.current = None

    @staticmethod
    def get_current() -> Any:
        return _Context.current


class _Device:
    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal

    @staticmethod
    def count() -> int:
        return 2

    def retain_primary_context(self) -> _Context:
        return _Context(0xC0FFEE + self.ordinal)

    def name(self) -> str:
        return f"stand-in {self.ordinal}"

    def compute_capability(self) -> tuple[int, int]:
        return (9, 0)

    def get_attribute(self, attribute: str) -> int:
        return {"MULTIPROCESSOR_COUNT": 132, "CLOCK_RATE": 1_980_000}[attribute]


@pytest.fixture
def stand_in_pycuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pycuda`` and ``pycuda.driver`` with only what the backend opens a device with."""
    package = types.ModuleType("pycuda")
    package.__path__ = []  # a package, for find_spec
    package.__spec__ = importlib_spec("pycuda")
    cuda = types.ModuleType("pycuda.driver")
    cuda.Error = RuntimeError
    cuda.init = lambda: None
    cuda.Device = _Device
    cuda.Context = _Context
    cuda.device_attribute = types.SimpleNamespace(MULTIPROCESSOR_COUNT="MULTIPROCESSOR_COUNT", CLOCK_RATE="CLOCK_RATE")
    cuda.get_driver_version = lambda: 13010
    package.driver = cuda
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", cuda)
    _Context.current = None


def importlib_spec(name: str) -> Any:
    import importlib.machinery

    return importlib.machinery.ModuleSpec(name, None, is_package=True)


@pytest.mark.usefixtures("stand_in_pycuda")
def test_a_pointers_device_is_the_drivers_answer() -> None:
    fake = FakeDriver(capabilities=((9, 0), (9, 0)))
    fake.pointers.update({0xA000: 1, 0xB000: 0})
    backend = PyCudaBackend(1, bindings=fake)
    assert backend.pointer_device(0xA000) == 1
    assert backend.pointer_device(0xB000) == 0
    assert backend.pointer_device(0xDEAD) is None  # memory the driver does not know: no device's


@pytest.mark.usefixtures("stand_in_pycuda")
def test_a_stream_being_captured_is_seen_whatever_its_form() -> None:
    fake = FakeDriver()
    fake.capturing.add(0x5000)
    backend = PyCudaBackend(0, bindings=fake)
    assert backend.is_capturing(0x5000)  # the int handle the tropical API passes
    assert backend.is_capturing(types.SimpleNamespace(handle=0x5000))  # a pycuda Stream
    assert not backend.is_capturing(0x6000)
    assert not backend.is_capturing(None)
    assert _Context.current is None  # the context pushed for the question was popped


@pytest.mark.usefixtures("stand_in_pycuda")
def test_a_failing_capture_question_is_one_line() -> None:
    fake = FakeDriver()
    fake.cuStreamIsCapturing = lambda stream: (driver.CUresult.CUDA_ERROR_INVALID_HANDLE, None)
    with pytest.raises(BackendError, match=r"^cuStreamIsCapturing failed: .*CUDA_ERROR_INVALID_HANDLE"):
        PyCudaBackend(0, bindings=fake).is_capturing(7)


def test_streams_events_and_the_legacy_capture_refusal_go_through_the_bindings(stand_in_pycuda: None) -> None:
    from aotc.errors import CaptureError
    from aotc.runtime.backends.pycuda import PyCudaBackend
    from test_driver_streams import CapturingDriver

    fake = CapturingDriver()
    backend = PyCudaBackend(bindings=fake)
    stream = backend.stream_create(non_blocking=True)
    backend.order_after(stream, 0)
    backend.stream_synchronize(stream)
    assert [call[0] for call in fake.stream_calls] == [
        "cuStreamCreate", "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuEventDestroy", "cuStreamSynchronize",
    ]  # fmt: skip
    fake.capturing.add(backend.stream_create())  # a blocking stream
    with pytest.raises(CaptureError, match=r"^cuStreamIsCapturing failed: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"):
        backend.is_capturing(0)
