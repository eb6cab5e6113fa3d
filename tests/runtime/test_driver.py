"""The driver check: the index's ``toolkit`` entry against ``cuDriverGetVersion``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aotc.errors import DriverTooOldError, NoDeviceError
from aotc.errors import IndexFormatError
from aotc.runtime.backends.cuda_python import CudaPythonBackend
from aotc.runtime.driver import Toolkit, check_driver, toolkit_from_index
from aotc.runtime.library import Library
from fake_driver import FakeDriver
from runtime_support import RecordingBackend, make_library, rewrite_index

CUDA13 = {"compiler": "nvcc", "version": "13.0.88", "cuda_major": 13, "min_driver": 13000, "wheel": "aotc"}
CUDA12 = {"compiler": "nvcc", "version": "12.8.93", "cuda_major": 12, "min_driver": 12000, "wheel": "aotc-cuda12x"}
LANE13 = Toolkit("13.0.88", 13, 13000, "aotc")
LANE12 = Toolkit("12.8.93", 12, 12000, "aotc-cuda12x")
KERNEL = "gemm_maxplus_f32_forward"


# -- the comparison -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toolkit", "driver"),
    [
        pytest.param(LANE13, 13000, id="13-lane-on-13.0"),
        pytest.param(LANE13, 13010, id="13-lane-on-13.1"),
        pytest.param(LANE13, 14000, id="13-lane-on-a-newer-major"),
        pytest.param(LANE12, 12000, id="12-lane-on-12.0"),
        pytest.param(LANE12, 13000, id="12-lane-on-13.0"),
        pytest.param(None, 11000, id="index-without-toolkit"),
        pytest.param(LANE13, None, id="backend-without-driver"),
    ],
)
def test_new_enough_drivers_pass(toolkit: Toolkit | None, driver: int | None) -> None:
    assert check_driver(toolkit, driver) is None


@pytest.mark.parametrize(
    ("toolkit", "driver", "message"),
    [
        pytest.param(
            LANE13, 12040,
            "this GPU driver supports CUDA 12.4 (cuDriverGetVersion 12040), but this aotc wheel (library 'tropical') "
            "was built with CUDA 13.0 and needs 13.0 (an R580 or newer driver): upgrade the driver, or pip install aotc-cuda12x",
            id="cuda-12-driver-gets-the-12x-wheel",
        ),
        pytest.param(
            LANE13, 12000,
            "this GPU driver supports CUDA 12.0 (cuDriverGetVersion 12000), but this aotc wheel (library 'tropical') "
            "was built with CUDA 13.0 and needs 13.0 (an R580 or newer driver): upgrade the driver, or pip install aotc-cuda12x",
            id="oldest-12-driver-still-gets-the-12x-wheel",
        ),
        pytest.param(
            LANE13, 11080,
            "this GPU driver supports CUDA 11.8 (cuDriverGetVersion 11080), but this aotc wheel (library 'tropical') "
            "was built with CUDA 13.0 and needs 13.0 (an R580 or newer driver); no aotc wheel supports a driver older "
            "than CUDA 12.0 (R525): upgrade the driver",
            id="cuda-11-driver-is-unsupported",
        ),
        pytest.param(
            LANE12, 11080,
            "this GPU driver supports CUDA 11.8 (cuDriverGetVersion 11080), but this aotc-cuda12x wheel (library "
            "'tropical') was built with CUDA 12.8 and needs 12.0 (an R525 or newer driver); no aotc wheel supports a "
            "driver older than CUDA 12.0 (R525): upgrade the driver",
            id="12-lane-on-cuda-11",
        ),
        pytest.param(
            Toolkit("13.1.40", 13, 13010, "aotc"), 13000,
            "this GPU driver supports CUDA 13.0 (cuDriverGetVersion 13000), but this aotc wheel (library 'tropical') "
            "was built with CUDA 13.1 and needs 13.1: upgrade the driver",
            id="same-major-no-other-wheel",
        ),
    ],
)
def test_old_drivers_raise_one_line_naming_both_versions_and_the_fix(toolkit: Toolkit, driver: int, message: str) -> None:
    with pytest.raises(DriverTooOldError) as info:
        check_driver(toolkit, driver, library="tropical")
    assert str(info.value) == message


def test_the_other_wheel_is_named_after_this_one() -> None:
    # Another project's lanes follow the same convention: mykernels / mykernels-cuda12x.
    with pytest.raises(DriverTooOldError, match=r"pip install mykernels-cuda12x$"):
        check_driver(Toolkit("13.0.88", 13, 13000, "mykernels"), 12080)


# -- reading the index entry ----------------------------------------------------------


def test_toolkit_entries_are_read() -> None:
    assert toolkit_from_index({"toolkit": CUDA13}, "index.json") == LANE13
    assert toolkit_from_index({"toolkit": CUDA12}, "index.json") == LANE12
    assert toolkit_from_index({"kernels": {}}, "index.json") is None  # built before the entry existed
    assert LANE13.requirement() == "CUDA 13.0 (cuDriverGetVersion 13000, an R580 or newer driver)"
    assert Toolkit("13.1.40", 13, 13010, "aotc").requirement() == "CUDA 13.1 (cuDriverGetVersion 13010)"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"min_driver": "13000"}, "toolkit.min_driver '13000' is not a cuDriverGetVersion number like 13000"),
        ({"min_driver": 13}, "toolkit.min_driver 13 is not a cuDriverGetVersion number"),
        ({"min_driver": True}, "toolkit.min_driver True is not"),
        ({"wheel": ""}, "toolkit.wheel '' is not a distribution name like 'aotc'"),
        ({"version": "thirteen"}, "toolkit.version 'thirteen' is not a version like '13.0.88'"),
        ({"cuda_major": None}, "toolkit.cuda_major None is not a CUDA major version like 13"),
    ],
)
def test_malformed_toolkit_entries_are_index_errors(change: dict[str, Any], message: str) -> None:
    with pytest.raises(IndexFormatError, match=r"^lib/index\.json: " + message.replace("(", r"\(").replace(")", r"\)")):
        toolkit_from_index({"toolkit": {**CUDA13, **change}}, "lib/index.json")
    with pytest.raises(IndexFormatError, match=r"^lib/index\.json: toolkit is list, not an object$"):
        toolkit_from_index({"toolkit": []}, "lib/index.json")


# -- backends -------------------------------------------------------------------------


def test_cuda_python_asks_cuDriverGetVersion() -> None:  # noqa: N802 - the driver's name
    assert CudaPythonBackend(driver=FakeDriver(version=12040)).driver_version() == 12040


def test_cuda_python_without_libcuda_has_no_driver_version() -> None:
    class NoLibcuda(FakeDriver):
        def cuDriverGetVersion(self) -> Any:  # noqa: N802
            raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search.')

    with pytest.raises(NoDeviceError, match=r"^no CUDA GPU: the NVIDIA driver \(libcuda\) cannot be loaded \("):
        CudaPythonBackend(driver=NoLibcuda()).driver_version()


def test_backends_without_a_driver_check_nothing() -> None:
    assert RecordingBackend().driver_version() is None


# -- through the library --------------------------------------------------------------


@pytest.fixture
def lib(tmp_path: Path) -> Path:
    return make_library(tmp_path)  # stand-in fatbins, SASS and PTX for 8.0; the fake GPU is 8.6


def _with_toolkit(lib: Path, toolkit: dict[str, Any]) -> Path:
    rewrite_index(lib, lambda index: index.update(toolkit=toolkit))
    return lib


def test_an_old_driver_fails_the_first_load_in_one_line_before_any_image(lib: Path) -> None:
    fake = FakeDriver(version=12040)
    library = Library(_with_toolkit(lib, CUDA13), backend=CudaPythonBackend(driver=fake))
    for _ in range(2):  # asked again, the same answer, without reloading anything
        with pytest.raises(DriverTooOldError) as info:
            library.kernel(KERNEL)
        message = str(info.value)
        assert message.startswith("this GPU driver supports CUDA 12.4 (cuDriverGetVersion 12040), but this aotc wheel (library 'rt')")
        assert message.endswith("pip install aotc-cuda12x")
        assert "\n" not in message
    assert fake.loaded == []
    assert library.loaded == ()


def test_a_new_enough_driver_loads(lib: Path) -> None:
    fake = FakeDriver(version=13010)
    library = Library(_with_toolkit(lib, CUDA13), backend=CudaPythonBackend(driver=fake))
    assert library.toolkit == LANE13
    library.kernel(KERNEL)
    assert fake.loaded == [b"stand-in fatbin of gemm_maxplus_f32_forward\n"]


def test_an_index_without_toolkit_loads_on_any_driver(lib: Path) -> None:
    fake = FakeDriver(version=12040)
    library = Library(lib, backend=CudaPythonBackend(driver=fake))
    assert library.toolkit is None
    library.kernel(KERNEL)
    assert len(fake.loaded) == 1


def test_loading_a_library_asks_no_backend(lib: Path) -> None:
    class Unasked(RecordingBackend):
        def driver_version(self) -> int:
            raise AssertionError("asked at load")

    library = Library(_with_toolkit(lib, CUDA13), backend=Unasked())
    assert library.toolkit == LANE13
    with pytest.raises(AssertionError, match="asked at load"):
        library.kernel(KERNEL)  # the first kernel is where it is asked
