"""The rowops example's declared families on a real GPU: built with nvcc for
the device's arch, called with CUDA tensors (eager, on a side stream, through
autograd and torch.compile) and CuPy arrays, against the NumPy references.
Skipped, saying why, where there is no GPU (conftest.py)."""

from __future__ import annotations

import importlib.util
import shutil
from typing import Any

import numpy as np
import pytest

import aotc
import aotc.kernels
from declared_support import REPO, reference
from runtime.runtime_support import cmake_build

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def rowops_gpu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from aotc.runtime.backends import get_backend

    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("needs cmake and ninja to build examples/rowops for this GPU")
    if shutil.which("nvcc") is None and importlib.util.find_spec("nvidia.cuda_nvrtc") is None:
        pytest.skip("needs nvcc, or NVRTC (nvidia-cuda-nvrtc), to build examples/rowops for this GPU")
    major, minor = get_backend("cuda-python").device().capability
    build = tmp_path_factory.mktemp("rowops-gpu")
    result = cmake_build(REPO / "examples" / "rowops", build, f"{major}{minor}")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return aotc.kernels.over(aotc.load(build / "aotc" / "rowops" / "lib", backend="cuda-python"))


def test_cuda_tensors_eager_and_on_a_side_stream(rowops_gpu: Any) -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(33, 3000, device="cuda", dtype=torch.float32) * 40
    np.testing.assert_allclose(rowops_gpu.softmax(x).cpu().numpy(), reference.softmax(x.cpu().numpy()), rtol=2e-6, atol=1e-30)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        ints = torch.randint(-100, 100, (9, 5000), device="cuda", dtype=torch.int64)
        scanned = rowops_gpu.scan(ints)
    side.synchronize()
    np.testing.assert_array_equal(scanned.cpu().numpy(), reference.scan(ints.cpu().numpy()))


def test_autograd_and_compile_on_the_gpu(rowops_gpu: Any) -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 50, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(rowops_gpu.softmax, (x,), eps=1e-6, atol=1e-7)
    compiled = torch.compile(lambda t: rowops_gpu.scan(rowops_gpu.softmax(t)), fullgraph=True)
    got = compiled(x.detach())
    torch.testing.assert_close(got, torch.softmax(x.detach(), dim=1).cumsum(dim=1))


def test_numpy_arrays_are_staged(rowops_gpu: Any) -> None:
    x = np.random.default_rng(2).normal(size=(17, 2049))
    np.testing.assert_allclose(rowops_gpu.softmax(x), reference.softmax(x), rtol=1e-12)
    np.testing.assert_allclose(rowops_gpu.scan(x), reference.scan(x), rtol=1e-9, atol=1e-9)


def test_cupy_arrays(rowops_gpu: Any) -> None:
    cupy = pytest.importorskip("cupy")
    x = cupy.asarray(np.random.default_rng(3).normal(size=(6, 1025)).astype(np.float32))
    np.testing.assert_allclose(cupy.asnumpy(rowops_gpu.softmax(x)), reference.softmax(cupy.asnumpy(x)), rtol=2e-6, atol=1e-30)
