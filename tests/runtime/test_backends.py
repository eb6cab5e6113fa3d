"""Backend choice and the backends' host-side logic, without a GPU.

The cuda-python backend runs here against a stand-in ``driver`` module that
records calls, so its launch path (the packed block passed through
``extra``), context handling and error reporting are checked without a GPU.
"""

from __future__ import annotations

import importlib.util
import struct
import threading
from typing import Any

import numpy as np
import pytest

from aotc.errors import BackendError, ConfigurationError, NoDeviceError
from aotc.runtime import backends
from aotc.runtime.backends import BACKENDS, BackendRegistry, backend_name_from_env, get_backend
from aotc.runtime.backends.base import DeviceInfo
from aotc.runtime.backends.protocol import Backend
from aotc.runtime.backends.cuda_python import CudaPythonBackend
from aotc.runtime.backends.noop import NoopBackend
from fake_driver import FakeDriver, context_of, driver


# -- choosing a backend ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "name"),
    [("", None), ("auto", None), ("noop", "noop"), (" Cuda-Python ", "cuda-python"), ("pycuda", "pycuda")],
)
def test_aotc_backend_names(value: str, name: str | None) -> None:
    assert backend_name_from_env({"AOTC_BACKEND": value}) == name


def test_an_unknown_aotc_backend_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="AOTC_BACKEND='cuda' is not one of: auto, cuda-python, pycuda, emulator, noop"):
        backend_name_from_env({"AOTC_BACKEND": "cuda"})


def test_backends_are_process_singletons_and_satisfy_the_protocol() -> None:
    noop = get_backend("noop")
    assert get_backend("noop") is noop
    assert isinstance(noop, Backend)
    assert noop.image_format == "fatbin"


def test_a_backend_missing_from_the_installation_is_one_line() -> None:
    registry = BackendRegistry({**BACKENDS, "ghost": "aotc.runtime.backends.ghost:GhostBackend"})
    with pytest.raises(BackendError, match=r"the ghost backend is not part of this aotc installation"):
        registry.get("ghost")


def test_an_unknown_backend_name_is_a_configuration_error() -> None:
    known = r"\(known: cuda-python, pycuda, emulator, noop\)"
    with pytest.raises(ConfigurationError, match=rf"^unknown backend 'cuda' {known}$"):
        get_backend("cuda")


def test_registries_keep_their_own_backends() -> None:
    mine = BackendRegistry()
    assert mine.get("noop") is mine.get("noop")
    assert mine.get("noop") is not get_backend("noop")
    assert backends.registry.get("noop") is get_backend("noop")


def test_environment_picks_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_BACKEND", "noop")
    assert get_backend().name == "noop"


class NoGpu(NoopBackend):
    """A stand-in for a GPU backend on a machine without a GPU."""

    name = "no-gpu"
    opened = 0

    def _open_device(self) -> DeviceInfo:
        self.opened += 1
        raise NoDeviceError("no CUDA GPU: test")


class Gpu(NoopBackend):
    name = "gpu"


def stand_ins(first: str, second: str, installed: bool = True) -> BackendRegistry:
    """A registry whose two automatic candidates are the stand-ins named."""
    specs = {"first": f"test_backends:{first}", "second": f"test_backends:{second}"}
    return BackendRegistry(specs, automatic=(("first", "x"), ("second", "y")), has_module=lambda name: installed)


def test_automatic_choice_prefers_a_backend_with_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AOTC_BACKEND", raising=False)
    assert stand_ins("NoGpu", "Gpu").get().name == "gpu"
    # Without any GPU the first installed backend is kept, and says so on use.
    without = stand_ins("NoGpu", "NoGpu")
    assert without.get() is without.get("first")
    with pytest.raises(NoDeviceError, match="no CUDA GPU: test"):
        without.get().device()
    with pytest.raises(BackendError, match="no CUDA backend is installed: pip install cuda-bindings"):
        stand_ins("Gpu", "Gpu", installed=False).get()


def test_a_device_failure_is_kept_and_repeated() -> None:
    backend = NoGpu()
    for _ in range(2):
        with pytest.raises(NoDeviceError, match=r"^no CUDA GPU: test; to run the kernels on the CPU instead, set AOTC_BACKEND=emulator$"):
            backend.device()
    assert backend.opened == 1  # the driver is asked once; the answer is kept


def test_pycuda_backend_without_pycuda_says_how_to_install() -> None:
    if importlib.util.find_spec("pycuda") is not None:
        pytest.skip("pycuda is installed here; the GPU tests exercise it")
    with pytest.raises(BackendError, match=r"pip install 'aotc\[pycuda\]'"):
        get_backend("pycuda")


# -- noop ------------------------------------------------------------------------------


def test_noop_memory_round_trips() -> None:
    backend = NoopBackend()
    pointer = backend.alloc(16)
    backend.copy_to_device(pointer, struct.pack("4f", 1, 2, 3, 4))
    backend.copy_to_device(pointer + 8, struct.pack("f", 9))  # pointers are addresses: arithmetic works
    out = bytearray(16)
    backend.copy_to_host(out, pointer)
    assert struct.unpack("4f", out) == (1, 2, 9, 4)
    empty = np.zeros((5, 0), np.float32)  # K = 0: nothing to copy, and not an error
    backend.copy_to_device(pointer, empty)
    backend.copy_to_host(empty, pointer)
    backend.free(pointer)
    with pytest.raises(BackendError, match="free of"):
        backend.free(pointer)


# -- cuda-python against a stand-in driver --------------------------------------------


def test_cuda_python_device_info() -> None:
    info = CudaPythonBackend(driver=FakeDriver()).device()
    assert info == DeviceInfo("Stand-in GPU", (8, 6), (13, 1), 84, 1_695_000, 0)
    assert info.arch == "sm_86"
    assert "compute capability 8.6 (sm_86), 84 SMs at 1695 MHz; driver supports CUDA 13.1" in info.describe()


def test_cuda_python_without_a_driver_says_no_gpu_plainly() -> None:
    missing = RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search.\nmore')
    backend = CudaPythonBackend(driver=FakeDriver(init=missing))
    for _ in range(2):  # asked again, the same answer
        with pytest.raises(NoDeviceError) as info:
            backend.device()
        message = str(info.value)
        assert message.startswith("no CUDA GPU: the NVIDIA driver (libcuda) cannot be loaded")
        assert message.endswith("; to run the kernels on the CPU instead, set AOTC_BACKEND=emulator")
        assert "\n" not in message


def test_cuda_python_with_no_device() -> None:
    backend = CudaPythonBackend(driver=FakeDriver(init=driver.CUresult.CUDA_ERROR_NO_DEVICE))
    with pytest.raises(NoDeviceError, match="no CUDA GPU: cuInit failed with CUDA_ERROR_NO_DEVICE"):
        backend.device()


def test_the_real_driver_without_a_gpu_is_no_device() -> None:
    backend = CudaPythonBackend()
    try:
        info = backend.device()
    except NoDeviceError as exc:
        assert str(exc).startswith("no CUDA GPU")
        assert "\n" not in str(exc)
    else:
        assert info.capability >= (7, 5)


def test_cuda_python_launch_passes_one_packed_block_through_extra() -> None:
    fake = FakeDriver()
    backend = CudaPythonBackend(driver=fake)
    function = backend.get_function(backend.load_module(b"good image", name="k"), "k")
    params = struct.pack("@QQQiiiqqq", 1, 2, 3, 4, 5, 6, 7, 8, 9)
    backend.launch(function, ((3, 2, 1), (16, 16, 1), 0), 0, params)
    (launch,) = fake.launches
    assert launch["function"] == "module:k"
    assert (launch["grid"], launch["block"], launch["shared"], launch["stream"]) == ((3, 2, 1), (16, 16, 1), 0, 0)
    assert launch["params"] is None  # kernelParams and extra are exclusive
    assert launch["markers"] == (1, 2, None)  # BUFFER_POINTER, BUFFER_SIZE, END
    assert launch["block_bytes"] == params


def loaded(fake: FakeDriver, ordinal: int = 0) -> tuple[CudaPythonBackend, Any]:
    """A cuda-python backend of device ``ordinal`` over ``fake``, and its kernel ``k``."""
    backend = CudaPythonBackend(ordinal, driver=fake)
    return backend, backend.get_function(backend.load_module(b"good", name="k"), "k")


ONE_BLOCK = ((1, 1, 1), (1, 1, 1), 0)


def test_cuda_python_makes_device_0s_primary_context_current_where_none_is() -> None:
    fake = FakeDriver(current=0)
    backend, function = loaded(fake)
    fake.calls.clear()
    for _ in range(3):
        backend.launch(function, ONE_BLOCK, 0, b"")
    assert fake.calls == ["get", "get", "get"]  # asked every call; made current once, by load_module
    assert fake.current == context_of(0)  # as the CUDA runtime itself does on a thread's first call

    seen: list[list[str]] = []

    def other_thread() -> None:
        fake.calls.clear()
        backend.launch(function, ONE_BLOCK, 0, b"")
        seen.append(list(fake.calls))

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [["get", "set"]]  # a new thread has no context current: the driver's stack is per thread
    assert [launch["context"] for launch in fake.launches] == [context_of(0)] * 4


def test_cuda_python_leaves_a_foreign_context_as_it_was() -> None:
    fake = FakeDriver(current=0xBEEF)  # some other context is current in this thread
    backend, function = loaded(fake)
    fake.calls.clear()
    backend.launch(function, ONE_BLOCK, 0, b"")
    assert fake.calls == ["get", "push", "pop"]
    assert fake.current == 0xBEEF and fake.launches[-1]["context"] == context_of(0)


def test_a_context_made_current_after_the_first_call_gets_none_of_aotcs_work() -> None:
    # Fault 6: the backend bound a thread's context once, so a context made current
    # later (pycuda.autoinit, cuCtxCreate) received aotc's launches and copies.
    fake = FakeDriver()
    backend, function = loaded(fake)
    backend.launch(function, ONE_BLOCK, 0, b"")
    foreign = fake.foreign_context()
    backend.launch(function, ONE_BLOCK, 0, b"")
    pointer = backend.alloc(4)
    backend.copy_to_device(pointer, b"\1\2\3\4")
    out = bytearray(4)
    backend.copy_to_host(out, pointer)
    backend.synchronize()
    backend.free(pointer)
    assert [launch["context"] for launch in fake.launches] == [context_of(0), context_of(0)]
    assert out == b"\1\2\3\4" and fake.current == foreign


def test_a_call_on_another_device_leaves_the_threads_context_as_it_was() -> None:
    # Fault 6: on a multi-GPU node a call made its device's context current and
    # left it so, changing torch's and CuPy's idea of the current device.
    fake = FakeDriver(capabilities=((8, 0), (9, 0)))
    backend, function = loaded(fake, 1)
    assert fake.current == 0
    backend.launch(function, ONE_BLOCK, 0, b"")
    assert fake.current == 0 and fake.launches[-1]["context"] == context_of(1)
    fake.current = context_of(0)  # torch.cuda.set_device(0)
    backend.launch(function, ONE_BLOCK, 0, b"")
    backend.synchronize()
    assert fake.current == context_of(0) and fake.launches[-1]["context"] == context_of(1)
    assert backend.current_device() == 0


def test_cuda_python_launches_on_a_stream_of_its_device() -> None:
    fake = FakeDriver(capabilities=((8, 0), (9, 0)))
    backend, function = loaded(fake, 1)
    backend.launch(function, ONE_BLOCK, fake.add_stream(0x5000, device=1), b"")
    assert fake.launches[-1]["stream"] == 0x5000
    with pytest.raises(BackendError, match=r"^cuLaunchKernel\(.*\) failed: CUDA_ERROR_INVALID_HANDLE") as refused:
        backend.launch(function, ONE_BLOCK, fake.add_stream(0x6000, device=0), b"")  # another context's stream
    # The driver's name for it, which the bindings read to blame the caller's stream= (not the words)
    assert refused.value.cuda_error == "CUDA_ERROR_INVALID_HANDLE"


@pytest.mark.parametrize(
    "shape",
    [((1, 65536, 1), (16, 16, 1), 0), ((1, 1, 1), (32, 33, 1), 0), ((1, 1, 1), (32, 1, 1), 49 * 1024), ((0, 1, 1), (1, 1, 1), 0)],
    ids=["grid-y", "threads", "shared", "empty-grid"],
)
def test_a_shape_the_gpu_refuses_is_one_line(shape: Any) -> None:
    fake = FakeDriver()
    backend, function = loaded(fake)
    with pytest.raises(BackendError, match=r"^cuLaunchKernel\(grid=.*\) failed: CUDA_ERROR_INVALID_VALUE \(described\)$"):
        backend.launch(function, shape, 0, b"")
    assert fake.launches == []


def test_cuda_python_errors_are_one_line() -> None:
    backend = CudaPythonBackend(driver=FakeDriver())
    with pytest.raises(BackendError, match=r"loading k\.fatbin: cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU \(described\)") as refused:
        backend.load_module(b"bad image", name="k.fatbin")
    assert refused.value.cuda_error == "CUDA_ERROR_NO_BINARY_FOR_GPU"
