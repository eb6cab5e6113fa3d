"""What a real node does that the fakes only model: streams, capture, contexts, faults.

Marked ``gpu``: skipped, with the reason, where there is no GPU; ``ci/gpu-suite.sh``
runs them on the first lent one. Each case is what a fake driver or the
emulator checks on the CPU, asked of the real driver through both backends:

- streams: a launch on a stream that is not the default one (an int handle
  made with cuda-bindings, a torch side stream, a CuPy stream, a pycuda
  ``Stream``) runs there, and gives the reference's answer;
- capture: a preloaded call on device arrays is captured into a CUDA graph
  that replays; staging a host array on the capturing stream is refused;
- contexts: a context made current by other code (``cuCtxCreate``,
  ``pycuda``'s ``make_context``) is left current and gets none of aotc's
  work; on a node with two GPUs, a call on device 1 leaves the thread's
  context as it was;
- faults: a kernel reading an illegal address is reported, from the next
  synchronize, as one line naming its launch (in a subprocess: the fault
  breaks the context for the rest of the process).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aotc import tropical
from aotc.errors import CaptureError
from aotc.reference import matmul
from aotc.runtime.library import Library
from runtime_support import gpu_library

FORWARD = "gemm_maxplus_f32_forward"
REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.gpu  # skipped with the probe's reason where there is no GPU (conftest.py)


@pytest.fixture(scope="module")
def lib_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gpu_library(tmp_path_factory, "rt-gpu-contexts")


@pytest.fixture(params=["cuda-python", "pycuda"])
def backend_name(request: pytest.FixtureRequest) -> str:
    if request.param == "pycuda" and importlib.util.find_spec("pycuda") is None:
        pytest.skip("pycuda is not installed (pip install 'aotc[pycuda]')")
    return request.param


def cu() -> Any:
    from cuda.bindings import driver

    return driver


def check(result: tuple[Any, ...]) -> Any:
    err, *values = result
    assert err == cu().CUresult.CUDA_SUCCESS, err
    return values[0] if len(values) == 1 else tuple(values)


def operands(seed: int, m: int = 70, k: int = 40, n: int = 30) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


class DeviceArray:
    """Device memory as an array library hands it over: a pointer with ``__cuda_array_interface__``."""

    def __init__(self, backend: Any, array: np.ndarray) -> None:
        self.backend, self.host = backend, np.ascontiguousarray(array)
        self.pointer = backend.alloc(self.host.nbytes)
        backend.copy_to_device(self.pointer, self.host)
        # A pageable upload may still be in flight when cuMemcpyHtoD returns, and a
        # non-blocking stream does not wait for it: settle it before any launch.
        backend.synchronize()
        self.__cuda_array_interface__ = {
            "shape": array.shape, "typestr": array.dtype.str, "data": (self.pointer, False), "strides": None, "version": 3,
        }  # fmt: skip

    def read(self) -> np.ndarray:
        out = np.empty_like(self.host)
        self.backend.synchronize()
        self.backend.copy_to_host(memoryview(out.reshape(-1).view("uint8")), self.pointer)
        return out


class PrimaryStream:
    """A non-blocking stream of device ``ordinal``'s primary context, made with cuda-bindings."""

    def __init__(self, ordinal: int = 0) -> None:
        driver = cu()
        self.context = check(driver.cuDevicePrimaryCtxRetain(check(driver.cuDeviceGet(ordinal))))
        check(driver.cuCtxPushCurrent(self.context))
        try:
            self.stream = check(driver.cuStreamCreate(driver.CUstream_flags.CU_STREAM_NON_BLOCKING.value))
        finally:
            check(driver.cuCtxPopCurrent())
        self.handle = int(self.stream)

    def synchronize(self) -> None:
        check(cu().cuStreamSynchronize(self.stream))


# --- streams ------------------------------------------------------------------------------


def test_a_call_on_a_non_default_stream_runs_there(lib_dir: Path, backend_name: str) -> None:
    api = tropical.over(Library(lib_dir, backend=backend_name))
    stream = PrimaryStream()
    a, b = operands(11)
    backend = api.library.backend
    da, db, dc = DeviceArray(backend, a), DeviceArray(backend, b), DeviceArray(backend, np.zeros((70, 30), np.float32))
    assert api.matmul(da, db, out=dc, stream=stream.handle) is dc
    stream.synchronize()
    np.testing.assert_array_equal(dc.read(), matmul(a, b, "maxplus"))


def test_a_pycuda_stream_is_launched_on(lib_dir: Path) -> None:
    pytest.importorskip("pycuda", reason="pycuda is not installed (pip install 'aotc[pycuda]')")
    import pycuda.driver as pycuda

    api = tropical.over(Library(lib_dir, backend="pycuda"))
    backend = api.library.backend
    backend.device()
    context = pycuda.Device(0).retain_primary_context()
    context.push()
    try:
        stream = pycuda.Stream()
        a, b = operands(12)
        da, db, dc = DeviceArray(backend, a), DeviceArray(backend, b), DeviceArray(backend, np.zeros((70, 30), np.float32))
        api.library.kernel(FORWARD)(da.pointer, db.pointer, dc.pointer, 70, 30, 40, 40, 30, 30, stream=stream)
        stream.synchronize()
        np.testing.assert_array_equal(dc.read(), matmul(a, b, "maxplus"))
    finally:
        pycuda.Context.pop()


def test_a_torch_side_stream_is_the_calls_stream(lib_dir: Path, backend_name: str) -> None:
    torch = pytest.importorskip("torch", reason="a torch side stream needs PyTorch")
    if not torch.cuda.is_available():
        pytest.skip(f"this PyTorch ({torch.__version__}) was built without CUDA")
    api = tropical.over(Library(lib_dir, backend=backend_name))
    a, b = operands(13)
    side = torch.cuda.Stream()
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        tc = api.matmul(ta, tb)
    side.synchronize()
    np.testing.assert_array_equal(tc.cpu().numpy(), matmul(a, b, "maxplus"))


def test_a_cupy_stream_is_the_calls_stream(lib_dir: Path, backend_name: str) -> None:
    cupy = pytest.importorskip("cupy", reason="a CuPy stream needs CuPy")
    api = tropical.over(Library(lib_dir, backend=backend_name))
    a, b = operands(14)
    ca, cb = cupy.asarray(a), cupy.asarray(b)
    cupy.cuda.get_current_stream().synchronize()
    with cupy.cuda.Stream(non_blocking=True) as stream:
        cc = api.matmul(ca, cb)
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(cc), matmul(a, b, "maxplus"))


# --- capture ----------------------------------------------------------------------------


def test_a_preloaded_call_on_device_arrays_is_captured_and_replays(lib_dir: Path, backend_name: str) -> None:
    driver = cu()
    api = tropical.over(Library(lib_dir, backend=backend_name))
    assert FORWARD in api.preload("maxplus", "f32", device=0)
    backend = api.library.backend
    a, b = operands(15)
    da, db, dc = DeviceArray(backend, a), DeviceArray(backend, b), DeviceArray(backend, np.zeros((70, 30), np.float32))
    stream = PrimaryStream()
    check(driver.cuStreamBeginCapture(stream.stream, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    try:
        api.matmul(da, db, out=dc, stream=stream.handle)
        with pytest.raises(CaptureError, match=r"is being captured into a CUDA graph"):  # host staging refused
            api.matmul(a, b, stream=stream.handle)
    finally:
        graph = check(driver.cuStreamEndCapture(stream.stream))
    executable = check(driver.cuGraphInstantiate(graph, 0))
    np.testing.assert_array_equal(dc.read(), np.zeros((70, 30), np.float32))  # captured, not run
    check(driver.cuGraphLaunch(executable, stream.stream))
    stream.synchronize()
    np.testing.assert_array_equal(dc.read(), matmul(a, b, "maxplus"))
    check(driver.cuGraphExecDestroy(executable))
    check(driver.cuGraphDestroy(graph))


# --- contexts ---------------------------------------------------------------------------


def test_a_context_created_by_other_code_stays_current_and_gets_no_work(lib_dir: Path) -> None:
    driver = cu()
    api = tropical.over(Library(lib_dir, backend="cuda-python"))
    a, b = operands(16)
    api.matmul(a, b)  # the backend's first call in this thread, before the other context exists
    foreign = check(driver.cuCtxCreate(None, 0, check(driver.cuDeviceGet(0))))  # pushed: current now
    try:
        np.testing.assert_array_equal(api.matmul(a, b), matmul(a, b, "maxplus"))
        assert int(check(driver.cuCtxGetCurrent())) == int(foreign)
    finally:
        check(driver.cuCtxDestroy(foreign))


def test_a_pycuda_context_stays_current_and_gets_no_work(lib_dir: Path) -> None:
    pytest.importorskip("pycuda", reason="pycuda is not installed (pip install 'aotc[pycuda]')")
    import pycuda.driver as pycuda

    api = tropical.over(Library(lib_dir, backend="pycuda"))
    a, b = operands(17)
    api.matmul(a, b)
    own = pycuda.Device(0).make_context()  # what pycuda.autoinit does
    try:
        np.testing.assert_array_equal(api.matmul(a, b), matmul(a, b, "maxplus"))
        assert pycuda.Context.get_current() == own
        assert int(check(cu().cuCtxGetCurrent())) == own.handle
    finally:
        pycuda.Context.pop()
        own.detach()


def test_a_call_on_device_1_leaves_the_threads_context_as_it_was(lib_dir: Path, backend_name: str) -> None:
    driver = cu()
    if check(driver.cuDeviceGetCount()) < 2:
        pytest.skip("needs two GPUs")
    api = tropical.over(Library(lib_dir, backend=backend_name))
    on_1 = api.library.backend_on(1)
    a, b = operands(18)
    results: dict[str, Any] = {}

    def call(label: str, current: Any) -> None:
        if current is not None:
            check(driver.cuCtxSetCurrent(current))
        da, db = DeviceArray(on_1, a), DeviceArray(on_1, b)
        dc = DeviceArray(on_1, np.zeros((70, 30), np.float32))
        api.matmul(da, db, out=dc)
        results[label] = (dc.read(), int(check(driver.cuCtxGetCurrent())))

    primary_0 = check(driver.cuDevicePrimaryCtxRetain(check(driver.cuDeviceGet(0))))
    for label, current in (("none current", None), ("device 0 current", primary_0)):
        thread = threading.Thread(target=call, args=(label, current))  # a fresh thread: no context current yet
        thread.start()
        thread.join()
    expected = matmul(a, b, "maxplus")
    np.testing.assert_array_equal(results["none current"][0], expected)
    np.testing.assert_array_equal(results["device 0 current"][0], expected)
    assert results["none current"][1] == 0
    assert results["device 0 current"][1] == int(primary_0)


# --- faults -----------------------------------------------------------------------------

ILLEGAL_READ = """
import sys
from aotc.errors import DeviceFaultError
from aotc.runtime.backends import get_backend
from aotc.runtime.library import Library
backend = get_backend(sys.argv[2])
kernel = Library(sys.argv[1], backend=backend).kernel("gemm_maxplus_f32_forward")
good = backend.alloc(64 * 64 * 4)
kernel(0x10, good, good, 64, 64, 64, 64, 64, 64)  # A at an address no allocation covers
try:
    backend.synchronize()
except DeviceFaultError as exc:
    print(exc)
else:
    print("no fault surfaced")
"""


def test_a_kernels_illegal_read_is_reported_naming_its_launch(lib_dir: Path, backend_name: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", ILLEGAL_READ, str(lib_dir), backend_name],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    (line,) = result.stdout.splitlines()
    assert line.startswith("device fault on device 0: CUDA_ERROR_"), line
    assert ", reported by " in line and f"before it: {FORWARD}(grid=(" in line, line
