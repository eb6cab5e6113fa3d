"""The pycuda backend's host-side logic, without a GPU or pycuda.

A strict stand-in ``pycuda.driver`` runs over the fake cuda-bindings driver
(one libcuda behind both, as in a real process): its context stack behaves
as pycuda's (``Context.push``/``pop``/``get_current``), its allocations need
a context on that stack, and its ``Function._launch_kernel`` takes what
pycuda's does, a pycuda ``Stream`` or None, raising Boost.Python's
``TypeError`` for anything else.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aotc import tropical
from aotc.errors import BackendError, DeviceFaultError
from aotc.runtime import backends
from aotc.runtime.backends import BackendRegistry
from aotc.runtime.backends.pycuda import PyCudaBackend
from aotc.runtime.library import Library
from fake_driver import SUCCESS, FakeDriver, context_of, driver, handle
from runtime_support import make_library

ONE_BLOCK = ((1, 1, 1), (32, 1, 1), 0)


class PycudaError(Exception):
    """pycuda._driver.Error: the text is "<routine> failed: <cuGetErrorString>"."""


class LogicError(PycudaError):
    pass


class StandInPycuda:
    """``pycuda.driver`` over ``fake``: what the backend (and its parent commit's) calls."""

    Error = PycudaError
    device_attribute = types.SimpleNamespace(MULTIPROCESSOR_COUNT="MULTIPROCESSOR_COUNT", CLOCK_RATE="CLOCK_RATE")

    def __init__(self, fake: FakeDriver) -> None:
        self.fake = fake
        stand_in = self
        self.stack: list[Any] = []  # pycuda's own context stack (one thread here)

        class Context:
            def __init__(self, handle: int) -> None:
                self.handle = handle

            def push(self) -> None:
                stand_in.switching()
                stand_in.check("cuCtxPushCurrent", fake.cuCtxPushCurrent(self.handle))
                stand_in.stack.append(self)

            @staticmethod
            def pop() -> None:
                stand_in.switching()
                if not stand_in.stack:
                    raise LogicError("context::pop failed: invalid device context - cannot pop non-current context")
                stand_in.stack.pop()
                if stand_in.stack:
                    stand_in.check("cuCtxPushCurrent", fake.cuCtxPushCurrent(stand_in.stack[-1].handle))

            @staticmethod
            def get_current() -> Any:
                return stand_in.stack[-1] if stand_in.stack else None

            @staticmethod
            def synchronize() -> None:
                stand_in.check("cuCtxSynchronize", fake.cuCtxSynchronize())

        class Device:
            def __init__(self, ordinal: int) -> None:
                self.ordinal = ordinal

            @staticmethod
            def count() -> int:
                return int(stand_in.check("cuDeviceGetCount", fake.cuDeviceGetCount()))

            def retain_primary_context(self) -> Any:
                return Context(int(stand_in.check("cuDevicePrimaryCtxRetain", fake.cuDevicePrimaryCtxRetain(self.ordinal))))

            def name(self) -> str:
                return f"stand-in {self.ordinal}"

            def compute_capability(self) -> tuple[int, int]:
                return fake.capabilities[self.ordinal]

            def get_attribute(self, attribute: str) -> int:
                return {"MULTIPROCESSOR_COUNT": 132, "CLOCK_RATE": 1_980_000}[attribute]

        self.Context = Context
        self.Device = Device

    def check(self, routine: str, result: tuple[Any, ...]) -> Any:
        err, *values = result
        if err != SUCCESS:
            raise PycudaError(f"{routine} failed: {self.fake.cuGetErrorString(err)[1].decode()}")
        return values[0] if values else None

    def switching(self) -> None:
        """pycuda's prepare_context_switch: its top context leaves the driver's stack first."""
        if self.stack:
            self.check("cuCtxPopCurrent", self.fake.cuCtxPopCurrent())

    def init(self) -> None:
        self.check("cuInit", self.fake.cuInit(0))

    @staticmethod
    def get_driver_version() -> int:
        return 13010

    def mem_alloc(self, nbytes: int) -> Any:
        if not self.stack:  # pycuda's allocations are context_dependent
            raise LogicError("explicit_context_dependent failed: invalid device context - no currently active context?")
        pointer = int(self.check("cuMemAlloc", self.fake.cuMemAlloc(nbytes)))
        return _Allocation(pointer, lambda: self.check("cuMemFree", self.fake.cuMemFree(pointer)))

    def memcpy_htod(self, pointer: int, data: Any) -> None:
        self.check("cuMemcpyHtoD", self.fake.cuMemcpyHtoD(pointer, data, memoryview(data).nbytes))

    def memcpy_dtoh(self, data: Any, pointer: int) -> None:
        self.check("cuMemcpyDtoH", self.fake.cuMemcpyDtoH(data, pointer, memoryview(data).nbytes))

    def module_from_buffer(self, image: bytes) -> Any:
        """What the parent commit loaded modules with: launches then went through ``_launch_kernel``."""
        module = self.check("cuModuleLoadData", self.fake.cuModuleLoadData(image))
        return types.SimpleNamespace(get_function=lambda symbol: _Function(self, module, symbol))


class _Allocation:
    def __init__(self, pointer: int, free: Any) -> None:
        self._pointer = pointer
        self.free = free

    def __int__(self) -> int:
        return self._pointer


class Stream:
    """A pycuda ``Stream``: the driver's handle, as ``.handle``; no ``__int__``."""

    def __init__(self, handle: int) -> None:
        self.handle = handle


class _Function:
    def __init__(self, pycuda: StandInPycuda, module: Any, symbol: str) -> None:
        self.pycuda = pycuda
        self.function = pycuda.check("cuModuleGetFunction", pycuda.fake.cuModuleGetFunction(module, symbol.encode()))

    def _launch_kernel(self, grid: Any, block: Any, params: bytes, shared: int, stream: Any) -> None:
        # PYCUDA_PARSE_STREAM_PY: py::extract<const stream &>, or None.
        if stream is not None and not isinstance(stream, Stream):
            msg = (
                "Python argument types in Function._launch_kernel(Function, tuple, tuple, bytes, int, "
                f"{type(stream).__name__}) did not match C++ signature"
            )
            raise TypeError(msg)
        # The config pycuda builds: CU_LAUNCH_PARAM_BUFFER_POINTER, the block, _SIZE, its size, _END.
        size = ctypes.c_size_t(len(params))
        pointer = ctypes.cast(ctypes.c_char_p(params), ctypes.c_void_p).value
        config = (ctypes.c_void_p * 5)(1, pointer, 2, ctypes.addressof(size), 0)
        handle = 0 if stream is None else stream.handle
        launched = self.pycuda.fake.cuLaunchKernel(self.function, *grid, *block, shared, handle, None, ctypes.addressof(config))
        self.pycuda.check("cuLaunchKernel", launched)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    """Two GPUs behind a fake libcuda, and ``pycuda.driver`` over it."""
    return _stand_in(monkeypatch, FakeDriver(capabilities=((9, 0), (9, 0))))


def _stand_in(monkeypatch: pytest.MonkeyPatch, fake: FakeDriver) -> FakeDriver:
    """``pycuda.driver`` over ``fake``, for this test."""
    package = types.ModuleType("pycuda")
    package.__path__ = []  # a package, for find_spec
    package.__spec__ = importlib.machinery.ModuleSpec("pycuda", None, is_package=True)
    cuda = StandInPycuda(fake)
    package.driver = cuda  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", cuda)  # type: ignore[arg-type]
    return fake


def loaded(fake: FakeDriver, ordinal: int = 0) -> tuple[PyCudaBackend, Any]:
    backend = PyCudaBackend(ordinal, bindings=fake)
    backend.device()  # as the loader does before it loads anything
    return backend, backend.get_function(backend.load_module(b"good", name="k"), "k")


# --- streams (fault 1) -------------------------------------------------------------------


def test_a_launch_on_a_torch_or_cupy_stream_handle_reaches_the_driver(fake: FakeDriver) -> None:
    # Fault 1: pycuda's _launch_kernel takes only its Stream or None, so the int
    # handle of a torch or CuPy stream raised Boost.Python's TypeError.
    backend, function = loaded(fake)
    backend.launch(function, ONE_BLOCK, fake.add_stream(0x5000), b"\0" * 8)
    backend.launch(function, ONE_BLOCK, Stream(fake.add_stream(0x6000)), b"")  # a pycuda Stream
    backend.launch(function, ONE_BLOCK, None, b"")
    backend.launch(function, ONE_BLOCK, driver.CUstream(0x5000), b"")  # cuda-bindings' own
    assert [launch["stream"] for launch in fake.launches] == [0x5000, 0x6000, 0, 0x5000]
    assert {launch["context"] for launch in fake.launches} == {context_of(0)}
    assert fake.launches[0]["block_bytes"] == b"\0" * 8
    assert fake.current == 0 and backend._pycuda().Context.get_current() is None  # noqa: SLF001 - left as found


def test_a_stream_that_is_no_stream_is_one_line(fake: FakeDriver) -> None:
    backend, function = loaded(fake)
    with pytest.raises(BackendError, match=r"^pycuda backend: a stream must be an int handle, a pycuda Stream or None, got str$"):
        backend.launch(function, ONE_BLOCK, "0x5000", b"")


def test_the_fake_refuses_a_pycuda_stream_where_cuda_bindings_does() -> None:
    with pytest.raises(TypeError, match="an integer is required"):
        handle(Stream(0x5000))


# --- devices (fault 8) -------------------------------------------------------------------------


def test_pycuda_reports_the_threads_current_device(fake: FakeDriver) -> None:
    # Fault 8: pycuda reported device 0 always, so host arrays ran on GPU 0.
    backend = PyCudaBackend(0, bindings=fake)
    assert (backend.device_count(), backend.current_device()) == (2, 0)
    fake.current = context_of(1)  # torch.cuda.set_device(1)
    assert backend.current_device() == 1


def test_host_arrays_run_on_the_current_device(fake: FakeDriver, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    registry = BackendRegistry({"pycuda": lambda ordinal: PyCudaBackend(ordinal, bindings=fake)}, automatic=())
    monkeypatch.setattr(backends, "registry", registry)
    api = tropical.over(Library(make_library(tmp_path, sass=("90",), ptx=("90",)), backend="pycuda"))
    fake.current = context_of(1)  # cudaSetDevice(1)
    a = np.ones((2, 3), np.float32)
    c = api.matmul(a, a.T.copy())
    assert fake.launches[-1]["context"] == context_of(1)
    assert api.library.loaded_on(1) and not api.library.loaded_on(0)
    assert c.shape == (2, 2) and fake.current == context_of(1) and fake.memory == {}  # staged, freed


# --- contexts -----------------------------------------------------------------------------


def test_pycudas_context_stack_is_left_as_found(fake: FakeDriver) -> None:
    cuda = sys.modules["pycuda.driver"]
    backend, function = loaded(fake)
    own = cuda.Device(1).retain_primary_context()
    own.push()  # pycuda code with device 1's context current
    pointer = backend.alloc(8)
    backend.copy_to_device(pointer, b"12345678")
    out = bytearray(8)
    backend.copy_to_host(out, pointer)
    backend.launch(function, ONE_BLOCK, 0, b"")
    backend.synchronize()
    backend.free(pointer)
    assert out == b"12345678" and fake.pointers == {}
    assert fake.launches[-1]["context"] == context_of(0)
    assert cuda.Context.get_current() is own and fake.stack == [context_of(1)]


def test_a_device_switch_under_pycudas_stack_is_seen(fake: FakeDriver) -> None:
    # pycuda's stack says device 0's context; torch.cuda.set_device(1) has since put device 1's on the
    # driver's: pycuda's own answer would send the launch to device 1's context.
    cuda = sys.modules["pycuda.driver"]
    backend, function = loaded(fake)
    own = cuda.Device(0).retain_primary_context()
    own.push()
    fake.current = context_of(1)
    backend.launch(function, ONE_BLOCK, 0, b"")
    assert fake.launches[-1]["context"] == context_of(0)
    assert fake.stack == [context_of(1)] and cuda.Context.get_current() is own


# --- capture and faults ---------------------------------------------------------------------------


def test_a_stream_being_captured_is_seen_whatever_its_form(fake: FakeDriver) -> None:
    backend = PyCudaBackend(0, bindings=fake)
    fake.capturing.add(fake.add_stream(0x5000))
    fake.add_stream(0x6000)
    assert backend.is_capturing(0x5000)  # the int handle the tropical API passes
    assert backend.is_capturing(Stream(0x5000))  # a pycuda Stream
    assert not backend.is_capturing(0x6000)
    assert not backend.is_capturing(None)
    assert fake.current == 0  # the context pushed for the question was popped


def test_a_failing_capture_question_is_one_line(fake: FakeDriver) -> None:
    with pytest.raises(BackendError, match=r"^cuStreamIsCapturing failed: CUDA_ERROR_INVALID_HANDLE"):
        PyCudaBackend(0, bindings=fake).is_capturing(7)  # no such stream


def test_a_kernels_fault_is_reported_naming_its_launch(fake: FakeDriver) -> None:
    backend, function = loaded(fake)
    fake.fault_on("k")
    backend.launch(function, ((4, 1, 1), (256, 1, 1), 0), 0, b"")
    with pytest.raises(DeviceFaultError) as info:
        backend.synchronize()
    assert str(info.value) == (
        "device fault on device 0: CUDA_ERROR_ILLEGAL_ADDRESS (cuCtxSynchronize failed: an illegal memory access "
        "was encountered), reported by synchronize; the last kernel aotc launched on device 0 before it: "
        "k(grid=(4, 1, 1), block=(256, 1, 1), shared=0) on stream 0 (the default stream); "
        "the context is unusable now: restart the process"
    )


def test_streams_events_and_the_legacy_capture_refusal_go_through_the_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    from aotc.errors import CaptureError
    from test_driver_streams import CapturingDriver

    fake = _stand_in(monkeypatch, CapturingDriver(capabilities=((9, 0), (9, 0))))
    backend = PyCudaBackend(bindings=fake)
    backend.device()
    stream = backend.stream_create(non_blocking=True)
    backend.order_after(stream, 0)
    backend.stream_synchronize(stream)
    assert [call[0] for call in fake.stream_calls] == [
        "cuStreamCreate", "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuEventDestroy", "cuStreamSynchronize",
    ]  # fmt: skip
    fake.capturing.add(backend.stream_create())  # a blocking stream
    with pytest.raises(CaptureError, match=r"^cuStreamIsCapturing failed: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"):
        backend.is_capturing(0)
