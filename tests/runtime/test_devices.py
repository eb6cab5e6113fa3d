"""Several devices in one process: each call runs on its operands' device.

Two stand-ins present two GPUs without one: the fake driver behind the real
cuda-python backend (an sm_80 and an sm_90, to see the image chosen per
device), and the emulator with ``AOTC_EMULATOR_DEVICES=2`` (to run real
kernels on device-tagged memory). Arrays on a device are ``DeviceArray``s: a
pointer with ``__cuda_array_interface__`` and no device attribute, so the
call asks the backend's pointer query, as it does for arrays of any library.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aotc import tropical
from aotc.errors import ArgumentError, CaptureError
from aotc.reference import matmul as reference_matmul
from aotc.runtime import backends
from aotc.runtime.backends import BackendRegistry
from aotc.runtime.backends.cuda_python import CudaPythonBackend
from aotc.runtime.cache import DiskCache
from aotc.runtime.emulator import devices as emulated
from aotc.runtime.emulator.backend import EmulatorBackend
from aotc.runtime.library import Library
from conftest import installed_library
from fake_driver import FakeDriver, context_of
from runtime_support import make_library

KERNEL = "gemm_maxplus_f32_forward"


class DeviceArray:
    """Device memory as a CUDA array library hands it over: a pointer, a shape, a
    dtype. ``host`` keeps the bytes where the stand-in device's memory is host memory."""

    def __init__(self, pointer: int, array: np.ndarray) -> None:
        self.host = array
        self.__cuda_array_interface__ = {
            "shape": array.shape, "typestr": array.dtype.str, "data": (pointer, False), "strides": None, "version": 3,
        }  # fmt: skip


def emulated_array(backend: Any, array: np.ndarray) -> DeviceArray:
    """``array`` copied into memory the emulated device of ``backend`` allocated."""
    pointer = backend.alloc(array.nbytes)
    backend.copy_to_device(pointer, np.ascontiguousarray(array))
    return DeviceArray(pointer, array)


def read_back(backend: Any, device_array: DeviceArray) -> np.ndarray:
    out = np.empty_like(device_array.host)
    backend.copy_to_host(memoryview(out.reshape(-1).view("uint8")), device_array.__cuda_array_interface__["data"][0])
    return out


# --- the fake driver: two GPUs of different archs -----------------------------------


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    """cuda-python over a fake driver with an sm_80 (device 0) and an sm_90 (device 1)."""
    fake = FakeDriver(capabilities=((8, 0), (9, 0)))
    registry = BackendRegistry(
        {"cuda-python": lambda ordinal: CudaPythonBackend(ordinal, driver=fake)}, automatic=(("cuda-python", "cuda"),)
    )
    monkeypatch.setattr(backends, "registry", registry)
    monkeypatch.setenv("AOTC_BACKEND", "cuda-python")
    return fake


@pytest.fixture
def fat_lib(tmp_path: Path) -> Path:
    return make_library(tmp_path, sass=("80", "90"), ptx=("90",))


def test_each_device_loads_its_own_image_in_its_own_context(two_gpus: FakeDriver, fat_lib: Path) -> None:
    library = Library(fat_lib)
    on_1 = library.kernel(KERNEL, device=1)
    on_0 = library.kernel(KERNEL, device=0)
    assert (on_1.choice.arch, on_0.choice.arch) == ("90", "80")
    assert two_gpus.loaded_in == [context_of(1), context_of(0)]
    assert library.backend_on(1).ordinal == 1 and library.backend_on(1) is not library.backend_on(0)
    assert library.loaded_on(1) == library.loaded_on(0) == (KERNEL,)
    args = [1] * len(on_1.params)
    on_1(*args, stream=0)
    assert two_gpus.launches[-1]["context"] == context_of(1)
    two_gpus.current = context_of(0)  # torch.cuda.set_device(0), say, between two calls
    on_1(*args, stream=0)
    on_0(*args, stream=0)
    assert [launch["context"] for launch in two_gpus.launches[-2:]] == [context_of(1), context_of(0)]
    assert two_gpus.current == context_of(0)  # the thread's context stack is left as found


def test_a_call_naming_no_device_runs_on_the_threads_current_device(two_gpus: FakeDriver, fat_lib: Path) -> None:
    two_gpus.current = context_of(1)  # what cudaSetDevice(1) / torch.cuda.set_device(1) leaves current
    library = Library(fat_lib)
    assert library.kernel(KERNEL).choice.arch == "90"
    assert library.loaded_on(1) == (KERNEL,) and library.loaded_on(0) == ()


def test_load_with_a_device_pins_the_library_to_it(two_gpus: FakeDriver, fat_lib: Path) -> None:
    library = Library(fat_lib, device="cuda:1")
    assert library.kernel(KERNEL).choice.arch == "90"
    with pytest.raises(ArgumentError, match=r"^device: expected a device ordinal \(an int >= 0 or 'cuda:N'\), got -1$"):
        library.kernel(KERNEL, device=-1)


def test_a_tropical_call_follows_its_operands_device(two_gpus: FakeDriver, fat_lib: Path) -> None:
    api = tropical.over(Library(fat_lib))
    a, b, c = (DeviceArray(p, np.ones((2, 2), np.float32)) for p in (0xA000, 0xB000, 0xC000))
    two_gpus.pointers.update({0xA000: 1, 0xB000: 1, 0xC000: 1})
    two_gpus.add_stream(5, device=1)
    assert api.matmul(a, b, out=c, stream=5) is c
    launch = two_gpus.launches[-1]
    assert (launch["context"], int(launch["stream"])) == (context_of(1), 5)
    assert api.library.loaded_on(1) == (KERNEL,) and api.library.loaded_on(0) == ()
    assert two_gpus.current == 0  # the thread had no context current, and still has none (fault 6)


def test_operands_on_two_devices_are_refused_naming_both(two_gpus: FakeDriver, fat_lib: Path) -> None:
    api = tropical.over(Library(fat_lib))
    a, b = DeviceArray(0xA000, np.ones((2, 2), np.float32)), DeviceArray(0xB000, np.ones((2, 2), np.float32))
    two_gpus.pointers.update({0xA000: 0, 0xB000: 1})
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul: b: on cuda:1, but a is on cuda:0$"):
        api.matmul(a, b)
    assert two_gpus.launches == [] and two_gpus.loaded == []


# --- CUDA-graph capture ----------------------------------------------------------------


def test_a_capture_refuses_a_module_load_until_preloaded(two_gpus: FakeDriver, fat_lib: Path) -> None:
    api = tropical.over(Library(fat_lib))
    a, b, c = (DeviceArray(p, np.ones((2, 2), np.float32)) for p in (0xA000, 0xB000, 0xC000))
    two_gpus.pointers.update({0xA000: 1, 0xB000: 1, 0xC000: 1})
    two_gpus.capturing.add(two_gpus.add_stream(5, device=1))
    with pytest.raises(CaptureError) as info:
        api.matmul(a, b, out=c, stream=5)
    assert str(info.value) == (
        f"loading kernel {KERNEL!r} while stream 5 is being captured into a CUDA graph on device 1: "
        "call preload() before capturing, and pass device arrays"
    )
    assert two_gpus.loaded == []
    names = api.preload("maxplus", "f32", device=1)
    assert KERNEL in names and set(api.library.loaded_on(1)) == set(names)
    assert set(two_gpus.loaded_in) == {context_of(1)}
    assert api.matmul(a, b, out=c, stream=5) is c  # preloaded, device arrays: nothing to load or stage
    assert int(two_gpus.launches[-1]["stream"]) == 5


def test_a_capture_refuses_staging_host_arrays(two_gpus: FakeDriver, fat_lib: Path) -> None:
    api = tropical.over(Library(fat_lib))
    api.preload("maxplus", "f32", device=0)
    two_gpus.capturing.add(two_gpus.add_stream(7, device=0))
    with pytest.raises(CaptureError, match=r"^a: staging a host array while stream 7 is being captured .* on device 0: "):
        api.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), stream=7)


def test_library_launch_refuses_a_load_during_capture(two_gpus: FakeDriver, fat_lib: Path) -> None:
    library = Library(fat_lib)
    two_gpus.capturing.add(two_gpus.add_stream(9, device=0))
    args = [1] * len(library.index.kernel(KERNEL).param_names)
    with pytest.raises(CaptureError, match=f"^loading kernel {KERNEL!r} while stream 9"):
        library.launch(KERNEL, *args, stream=9)
    assert library.preload([KERNEL]) == (KERNEL,)
    library.launch(KERNEL, *args, stream=9)
    assert len(two_gpus.launches) == 1


# --- the emulator: real kernels on two emulated devices ------------------------------


@pytest.fixture(scope="module")
def emulator_cache(tmp_path_factory: pytest.TempPathFactory) -> DiskCache:
    return DiskCache(tmp_path_factory.mktemp("devices-cache"))


@pytest.fixture
def two_emulated(monkeypatch: pytest.MonkeyPatch, emulator_cache: DiskCache) -> Library:
    monkeypatch.setenv("AOTC_EMULATOR_DEVICES", "2")
    monkeypatch.setenv("AOTC_EMULATOR_ARCHS", "80,90")
    factory = {"emulator": lambda ordinal: EmulatorBackend(emulator_cache, ordinal=ordinal)}
    monkeypatch.setattr(backends, "registry", BackendRegistry(factory, automatic=()))
    return Library(installed_library(), backend="emulator")


def test_emulated_device_arrays_run_on_their_device(two_emulated: Library) -> None:
    device_1 = two_emulated.backend_on(1)
    assert (device_1.ordinal, device_1.device().capability) == (1, (9, 0))
    rng = np.random.default_rng(1)
    a_host, b_host = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32)
    a, b = emulated_array(device_1, a_host), emulated_array(device_1, b_host)
    c = emulated_array(device_1, np.zeros((5, 3), np.float32))
    assert tropical.over(two_emulated).matmul(a, b, out=c) is c
    np.testing.assert_allclose(read_back(device_1, c), reference_matmul(a_host, b_host, "maxplus"), rtol=1e-6)
    assert two_emulated.loaded_on(1) == (KERNEL,) and two_emulated.loaded_on(0) == ()


def test_emulated_operands_on_two_devices_are_refused(two_emulated: Library) -> None:
    a = emulated_array(two_emulated.backend_on(0), np.ones((2, 2), np.float32))
    b = emulated_array(two_emulated.backend_on(1), np.ones((2, 2), np.float32))
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul: b: on cuda:1, but a is on cuda:0$"):
        tropical.over(two_emulated).matmul(a, b)


def test_emulated_capture_refuses_a_load(two_emulated: Library) -> None:
    a = emulated_array(two_emulated.backend_on(1), np.ones((2, 2), np.float32))
    with emulated.capture(3), pytest.raises(CaptureError, match=r"^loading kernel .* on device 1: call preload\(\)"):
        tropical.over(two_emulated).matmul(a, a, stream=3)


PER_RANK = """
import os, sys
import numpy as np
from aotc import tropical
from aotc.runtime.emulator import devices
from aotc.runtime.library import Library
devices.set_device(int(os.environ["LOCAL_RANK"]))  # the torch.cuda.set_device(local_rank) of this device kind
library = Library(sys.argv[1], backend="emulator")
c = tropical.over(library).matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
print(library.current_device(), library.backend.device().capability, library.loaded_on(1), library.loaded_on(0), c.tolist())
"""


def test_a_per_rank_process_uses_its_own_device_by_default(emulator_cache: DiskCache) -> None:
    env = {
        **os.environ, "LOCAL_RANK": "1", "AOTC_BACKEND": "emulator", "AOTC_EMULATOR_DEVICES": "2",
        "AOTC_EMULATOR_ARCHS": "80,90", "AOTC_CACHE_DIR": str(emulator_cache.directory),
    }  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", PER_RANK, str(installed_library())], capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"1 (9, 0) ('{KERNEL}',) () [[2.0, 2.0], [2.0, 2.0]]"


# --- the registry and the emulator's configuration -------------------------------------


def test_the_registry_keeps_one_backend_per_device() -> None:
    registry = BackendRegistry()
    first, second = registry.get("noop", 1), registry.get("noop", 0)
    assert (first.ordinal, second.ordinal) == (1, 0) and first is not second
    assert registry.get("noop", 1) is first
    with pytest.raises(ArgumentError, match=r"^device: expected a device ordinal \(an int >= 0\), got '1'$"):
        registry.get("noop", "1")  # type: ignore[arg-type]


def test_a_backend_instance_is_one_devices(fat_lib: Path) -> None:
    from aotc.runtime.backends.noop import NoopBackend

    library = Library(fat_lib, backend=NoopBackend(ordinal=1))
    assert library.current_device() == 1 and library.kernel(KERNEL).choice.arch == "80"
    with pytest.raises(ArgumentError, match=r"^device: a call on device 0, but this library was loaded with device 1's backend$"):
        library.kernel(KERNEL, device=0)


def test_emulated_devices_are_configured_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from aotc.errors import ConfigurationError, NoDeviceError

    monkeypatch.setenv("AOTC_EMULATOR_DEVICES", "3")
    monkeypatch.setenv("AOTC_EMULATOR_ARCHS", "sm_80,90")
    assert [emulated.capability(i) for i in range(3)] == [(8, 0), (9, 0), (9, 0)]  # the last arch repeats
    with pytest.raises(NoDeviceError, match=r"^no emulated device 3: AOTC_EMULATOR_DEVICES=3$"):
        emulated.capability(3)
    monkeypatch.setenv("AOTC_EMULATOR_DEVICES", "two")
    with pytest.raises(ConfigurationError, match=r"^AOTC_EMULATOR_DEVICES='two' is not a device count"):
        emulated.count()


def test_the_jit_compiles_for_each_devices_arch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from aotc.runtime.select import ImageKind
    from runtime_support import RecordingBackend

    def recording(ordinal: int) -> RecordingBackend:
        backend = RecordingBackend(((8, 0), (9, 0))[ordinal])
        backend.ordinal = ordinal
        return backend

    monkeypatch.setattr(backends, "registry", BackendRegistry({"recording": recording}, automatic=()))
    lib = make_library(tmp_path)  # SASS and PTX for sm_80 only
    cache = DiskCache(tmp_path / "cache")
    library = Library(lib, backend="recording", cache=cache)
    on_0, on_1 = library.kernel(KERNEL, device=0), library.kernel(KERNEL, device=1)
    assert (on_0.choice.kind, on_0.choice.arch) == (ImageKind.SASS_EXACT, "80")
    assert (on_1.choice.kind, on_1.choice.arch) == (ImageKind.NVRTC_JIT, "90") and "compiled now" in on_1.image
    again = Library(lib, backend="recording", cache=cache).kernel(KERNEL, device=1)
    assert "from the disk cache" in again.image  # keyed on the device's arch: the sm_90 cubin
    assert library.backend_on(1).modules[0] != library.backend_on(0).modules[0]


def test_torchs_current_device_wins_once_torch_has_initialised_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from aotc.runtime.backends.noop import NoopBackend
    from aotc.runtime.devices import current_device

    backend = NoopBackend()
    uninitialised = SimpleNamespace(cuda=SimpleNamespace(is_initialized=lambda: False, current_device=lambda: 3))
    monkeypatch.setitem(sys.modules, "torch", uninitialised)
    assert current_device(backend) == 0  # torch has not touched CUDA: the driver's answer
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 3)))
    assert current_device(backend) == 3
