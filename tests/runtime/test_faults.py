"""Device faults (``aotc/runtime/backends/faults.py``): one line naming the launch.

A kernel's fault surfaces from whichever call next touches its context; the
fake driver makes a launch of a chosen kernel break the context, as a GPU
does, and the cuda-python backend must report the fault naming that launch.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aotc import tropical
from aotc.errors import BackendError, DeviceFaultError
from aotc.runtime import backends
from aotc.runtime.backends import BackendRegistry
from aotc.runtime.backends.cuda_python import CudaPythonBackend
from aotc.runtime.backends.faults import STICKY_ERRORS, LaunchLog, is_sticky
from aotc.runtime.library import Library
from fake_driver import FakeDriver, driver
from runtime_support import make_library

FAULT = "device fault on device 0: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"
THE_END = "the context is unusable now: restart the process"


def two_kernels(fake: FakeDriver) -> tuple[CudaPythonBackend, Any, Any]:
    backend = CudaPythonBackend(driver=fake)
    module = backend.load_module(b"good", name="m")
    return backend, backend.get_function(module, "fine"), backend.get_function(module, "reads_past_the_end")


def test_a_fault_surfacing_at_synchronize_names_the_launch() -> None:
    # Fault 9: the error came from cuCtxSynchronize, naming no kernel.
    fake = FakeDriver()
    backend, fine, bad = two_kernels(fake)
    fake.fault_on("reads_past_the_end")
    backend.launch(fine, ((1, 1, 1), (32, 1, 1), 0), 0, b"")
    backend.launch(bad, ((3, 2, 1), (128, 1, 1), 64), fake.add_stream(0x5000), b"")
    with pytest.raises(DeviceFaultError) as info:
        backend.synchronize()
    assert str(info.value) == (
        f"{FAULT}, reported by cuCtxSynchronize; the last kernel aotc launched on device 0 before it: "
        "reads_past_the_end(grid=(3, 2, 1), block=(128, 1, 1), shared=64) on stream 0x5000 (also unfinished "
        "on other streams: fine(grid=(1, 1, 1), block=(32, 1, 1), shared=0) on stream 0 (the default stream)); "
        f"{THE_END}"
    )
    assert isinstance(info.value, BackendError)  # caught where backend errors are


def test_every_later_call_reports_the_same_fault() -> None:
    fake = FakeDriver()
    backend, fine, bad = two_kernels(fake)
    pointer = backend.alloc(16)
    fake.fault_on("reads_past_the_end")
    backend.launch(bad, ((1, 1, 1), (32, 1, 1), 0), 0, b"")
    calls = {
        "cuMemcpyDtoH": lambda: backend.copy_to_host(bytearray(16), pointer),
        "cuMemFree": lambda: backend.free(pointer),
        "cuMemAlloc": lambda: backend.alloc(4),
        "loading n: cuModuleLoadData": lambda: backend.load_module(b"good", name="n"),
    }
    for what, call in calls.items():
        with pytest.raises(DeviceFaultError, match=rf"^{re.escape(FAULT)}, reported by {what}; .*reads_past_the_end\(grid="):
            call()
    with pytest.raises(DeviceFaultError) as info:
        backend.launch(fine, ((1, 1, 1), (32, 1, 1), 0), 0, b"")
    message = str(info.value)
    assert "reported by cuLaunchKernel; the last kernel aotc launched on device 0 before it: reads_past_the_end(" in message
    assert "; CUDA_LAUNCH_BLOCKING=1 makes each launch report its own fault; " in message and "\n" not in message


def test_with_launch_blocking_the_launch_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    fake = FakeDriver()
    fake.launch_blocking = True
    backend, fine, bad = two_kernels(fake)
    fake.fault_on("reads_past_the_end")
    backend.launch(fine, ((1, 1, 1), (32, 1, 1), 0), 0, b"")
    with pytest.raises(DeviceFaultError) as info:
        backend.launch(bad, ((2, 1, 1), (32, 1, 1), 0), 0, b"")
    assert str(info.value) == (
        f"{FAULT}, reported by cuLaunchKernel; the kernel was reads_past_the_end(grid=(2, 1, 1), block=(32, 1, 1), "
        f"shared=0) on stream 0 (the default stream) (CUDA_LAUNCH_BLOCKING=1); {THE_END}"
    )


def test_a_fault_after_a_clean_synchronize_is_other_works() -> None:
    fake = FakeDriver()
    backend, fine, _ = two_kernels(fake)
    backend.launch(fine, ((1, 1, 1), (32, 1, 1), 0), 0, b"")
    backend.synchronize()  # aotc's launches so far finished cleanly
    fake.sticky[fake.current] = driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS  # a torch kernel faulted, say
    with pytest.raises(DeviceFaultError, match=r"aotc launched no kernel on device 0 since its last synchronize: the fault is other work's"):
        backend.synchronize()


def test_an_ordinary_failure_stays_a_backend_error() -> None:
    backend = CudaPythonBackend(driver=FakeDriver())
    with pytest.raises(BackendError) as info:
        backend.free(0xDEAD)
    assert type(info.value) is BackendError
    assert str(info.value) == "cuMemFree failed: CUDA_ERROR_INVALID_VALUE (described)"


def test_a_refused_launch_names_its_shape_and_stays_a_backend_error() -> None:
    fake = FakeDriver()
    backend, fine, _ = two_kernels(fake)
    with pytest.raises(BackendError) as info:
        backend.launch(fine, ((1, 1, 1), (2048, 1, 1), 0), 0, b"")  # more threads than a block may have
    assert type(info.value) is BackendError
    assert str(info.value) == (
        "cuLaunchKernel(grid=(1, 1, 1), block=(2048, 1, 1), shared=0) failed: CUDA_ERROR_INVALID_VALUE (described)"
    )


def test_the_sticky_errors_are_the_drivers() -> None:
    assert all(hasattr(driver.CUresult, name) for name in STICKY_ERRORS)
    assert is_sticky("CUDA_ERROR_LAUNCH_FAILED") and not is_sticky("CUDA_ERROR_INVALID_VALUE")


def test_a_log_names_an_unknown_function_plainly() -> None:
    log = LaunchLog()
    log.latest = log.per_stream[7] = (object(), ((1, 1, 1), (1, 1, 1), 0), 7)
    assert "an unnamed kernel(grid=(1, 1, 1), block=(1, 1, 1), shared=0) on stream 0x7" in str(log.fault(2, "x", "E"))


def test_a_numpy_call_whose_kernel_faults_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = FakeDriver(capabilities=((8, 0),))
    registry = BackendRegistry({"cuda-python": lambda ordinal: CudaPythonBackend(ordinal, driver=fake)}, automatic=())
    monkeypatch.setattr(backends, "registry", registry)
    api = tropical.over(Library(make_library(tmp_path), backend="cuda-python"))
    fake.fault_on("gemm_maxplus_f32_forward")
    a = np.ones((40, 3), np.float32)
    with pytest.raises(DeviceFaultError, match=r"^device fault on device 0: CUDA_ERROR_ILLEGAL_ADDRESS .*: gemm_maxplus_f32_forward\(grid="):
        api.matmul(a, a.T.copy())
