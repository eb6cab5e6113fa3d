"""Real launches through both GPU backends, checked against the NumPy reference.

Marked ``gpu``: skipped, with the reason, where there is no GPU. The library
is the installed tropical one when present, else the fixture project built
here with nvcc for the device's own architecture.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aotc.reference import matmul
from aotc.runtime.backends import get_backend
from aotc.runtime.library import Library
from aotc.runtime.select import ImageKind
from runtime_support import gpu_library, rewrite_index

FORWARD = "gemm_maxplus_f32_forward"
BATCHED = "gemm_maxplus_f32_forward_batched"


pytestmark = pytest.mark.gpu  # skipped with the probe's reason where there is no GPU (conftest.py)


@pytest.fixture(scope="module")
def lib_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gpu_library(tmp_path_factory, "rt-gpu")


@pytest.fixture(params=["cuda-python", "pycuda"])
def backend(request: pytest.FixtureRequest) -> Any:
    if request.param == "pycuda" and importlib.util.find_spec("pycuda") is None:
        pytest.skip("pycuda is not installed (pip install 'aotc[pycuda]')")
    return get_backend(request.param)


def upload(backend: Any, array: np.ndarray) -> int:
    pointer = backend.alloc(array.nbytes)
    if array.nbytes:
        backend.copy_to_device(pointer, np.ascontiguousarray(array))
    return pointer


def run(lib: Library, kernel: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A (x) B with ``kernel``, row-major, on the library's backend."""
    backend = lib.backend
    m, k = a.shape[-2:]
    n = b.shape[-1]
    out_shape = (*a.shape[:-2], m, n)
    c = np.empty(out_shape, np.float32)
    pa, pb, pc = upload(backend, a), upload(backend, b), backend.alloc(max(c.nbytes, 1))
    try:
        args = [pa, pb, pc, m, n, k, k, n, n]
        if a.ndim == 3:
            args += [a.shape[0], m * k, k * n, m * n]
        lib.kernel(kernel)(*args)
        backend.synchronize()
        if c.nbytes:
            backend.copy_to_host(c, pc)
    finally:
        for pointer in (pa, pb, pc):
            backend.free(pointer)
    return c


@pytest.mark.parametrize("shape", [(37, 45, 19), (1, 1, 1), (130, 70, 40), (64, 64, 64)])
def test_forward_matches_the_reference(lib_dir: Path, backend: Any, shape: tuple[int, int, int]) -> None:
    m, n, k = shape
    rng = np.random.default_rng(m * 10_000 + n * 100 + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    lib = Library(lib_dir, backend=backend)
    np.testing.assert_array_equal(run(lib, FORWARD, a, b), matmul(a, b, "maxplus"))
    assert lib.kernel(FORWARD).choice.kind in (ImageKind.SASS_EXACT, ImageKind.SASS_COMPATIBLE)  # type: ignore[union-attr]


def test_k_zero_gives_the_semiring_zero(lib_dir: Path, backend: Any) -> None:
    lib = Library(lib_dir, backend=backend)
    c = run(lib, FORWARD, np.zeros((5, 0), np.float32), np.zeros((0, 7), np.float32))
    assert np.all(c == -np.inf)


def test_batched_forward_matches_the_reference(lib_dir: Path, backend: Any) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 33, 17)).astype(np.float32)
    b = rng.standard_normal((3, 17, 40)).astype(np.float32)
    lib = Library(lib_dir, backend=backend)
    np.testing.assert_array_equal(run(lib, BATCHED, a, b), matmul(a, b, "maxplus"))


def test_an_nvrtc_compiled_kernel_runs(
    lib_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aotc.runtime.jit import nvrtc_info

    backend = get_backend("cuda-python")
    info = nvrtc_info()
    if info is None or backend.device().capability not in info.archs:
        pytest.skip("NVRTC is missing or cannot target this GPU")
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    copy = Path(shutil.copytree(lib_dir, tmp_path / "lib"))
    rewrite_index(copy, lambda index: index["kernels"][FORWARD].update(sass=[]))  # no SASS: NVRTC it is
    lib = Library(copy, backend=backend)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((50, 30)).astype(np.float32)
    b = rng.standard_normal((30, 20)).astype(np.float32)
    np.testing.assert_array_equal(run(lib, FORWARD, a, b), matmul(a, b, "maxplus"))
    assert lib.kernel(FORWARD).choice.kind is ImageKind.NVRTC_JIT  # type: ignore[union-attr]


def test_a_preloaded_call_is_captured_into_a_cuda_graph_and_replays(lib_dir: Path) -> None:
    torch = pytest.importorskip("torch", reason="capturing a CUDA graph needs PyTorch")
    if not torch.cuda.is_available():
        pytest.skip(f"this PyTorch ({torch.__version__}) was built without CUDA")
    from aotc import tropical

    api = tropical.over(Library(lib_dir, backend="cuda-python"))
    assert FORWARD in api.preload("maxplus", "f32", device=0)
    generator = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(70, 40, device="cuda", generator=generator)
    b = torch.randn(40, 30, device="cuda", generator=generator)
    c = torch.empty(70, 30, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # captured on torch's capture stream, its current stream inside
        api.matmul(a, b, out=c)
    for _ in range(2):  # new inputs in the same memory, then replay: the graph reads them
        a.copy_(torch.randn(a.shape, device="cuda", generator=generator))
        b.copy_(torch.randn(b.shape, device="cuda", generator=generator))
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(c.cpu().numpy(), matmul(a.cpu().numpy(), b.cpu().numpy(), "maxplus"))
