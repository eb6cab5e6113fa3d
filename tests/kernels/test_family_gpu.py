"""The rowops example's declared families on a real GPU: built with nvcc for
the device's arch, called with CUDA tensors (eager, on a side stream, through
autograd and torch.compile, with and without the optional batch) and CuPy
arrays, against the NumPy references; and the strided BADD family, reading
CUDA views and broadcasts in place; the warpnorm example (one warp a row,
shuffles, f16 and bf16) against its references; and half arithmetic whose
rounding CUDA defines, and the float-to-integer intrinsics on their
boundaries, bit for bit against the emulator.
Skipped, saying why, where there is no GPU (conftest.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from typing import Any
from unittest import mock

import numpy as np
import pytest

import aotc
import aotc.kernels
from declared_support import BADD, REPO, declared_library, reference, warpnorm_reference, write_project
from runtime.runtime_support import cmake_build

pytestmark = pytest.mark.gpu


def _build_for_this_gpu(project: Any, build: Any, library: str) -> Any:
    from aotc.runtime.backends import get_backend

    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip(f"needs cmake and ninja to build {library} for this GPU")
    if shutil.which("nvcc") is None and importlib.util.find_spec("nvidia.cuda_nvrtc") is None:
        pytest.skip(f"needs nvcc, or NVRTC (nvidia-cuda-nvrtc), to build {library} for this GPU")
    major, minor = get_backend("cuda-python").device().capability
    result = cmake_build(project, build, f"{major}{minor}")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return aotc.kernels.over(aotc.load(build / "aotc" / library / "lib", backend="cuda-python"))


@pytest.fixture(scope="module")
def rowops_gpu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _build_for_this_gpu(REPO / "examples" / "rowops", tmp_path_factory.mktemp("rowops-gpu"), "rowops")


@pytest.fixture(scope="module")
def badd_gpu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    project = tmp_path_factory.mktemp("badd-project")
    files = {
        **BADD,
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.24)\nproject(badd LANGUAGES NONE)\n"
        "find_package(aotc CONFIG REQUIRED)\naotc_add_kernel_library(badd MANIFEST manifest.yaml INSTALL_DIR badd)\n",
    }
    write_project(project, files)
    return _build_for_this_gpu(project, tmp_path_factory.mktemp("badd-gpu"), "badd")


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


def test_an_optional_batch_on_the_gpu(rowops_gpu: Any) -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 5, 700, device="cuda", dtype=torch.float64, requires_grad=True)
    y = rowops_gpu.softmax(x)
    torch.testing.assert_close(y, torch.softmax(x, dim=-1))
    (grad,) = torch.autograd.grad(y.square().sum(), x)
    expected_x = x.detach().clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(torch.softmax(expected_x, dim=-1).square().sum(), expected_x)
    torch.testing.assert_close(grad, expected)


def test_strided_cuda_arrays_are_read_in_place(badd_gpu: Any) -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 300, 40, device="cuda", dtype=torch.float32).transpose(1, 2)  # (2, 40, 300), columns 40 apart
    bias = torch.randn(300, device="cuda", dtype=torch.float32)  # no batch: broadcast
    with mock.patch("aotc.kernels._family.contiguous", side_effect=AssertionError("a CUDA input was copied")):
        torch.testing.assert_close(badd_gpu.badd(x, bias), x + bias)
    sliced = x[:, ::3, 1::2]
    torch.testing.assert_close(badd_gpu.badd(sliced, bias.expand(2, 300)[:, 1::2]), sliced + bias[1::2])  # bias: copied dense
    host = np.random.default_rng(4).normal(size=(3, 7, 9)).astype(np.float32)
    np.testing.assert_array_equal(badd_gpu.badd(host[:, ::2], host[:, 0]), host[:, ::2] + host[:, 0][:, None, :])  # staged: copied dense


@pytest.mark.parametrize("route", ["buffer_callback", "triton_kernel_call_ffi"])
def test_jax_arrays_on_xlas_stream(rowops_gpu: Any, route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """JAX's GPU arrays through each route (aotc.runtime.jax_route): jit, vmap and the backward pairing's gradient."""
    jax = pytest.importorskip("jax", reason="JAX is not installed (the GPU suite needs jax with its CUDA plugin)")
    if jax.default_backend() != "gpu":
        pytest.skip(f"JAX runs on {jax.default_backend()} here: install jax[cuda13] (or cuda12) for its GPU backend")
    from aotc.kernels import _jax_builtin
    from aotc.runtime.jax_route import builtin_launcher

    in_use, why = builtin_launcher()
    if route == "triton_kernel_call_ffi" and not in_use:
        pytest.skip(f"jaxlib's built-in launcher is not in use here: {why}")
    monkeypatch.setattr(_jax_builtin, "_decided", {"in_use": route != "buffer_callback"})
    x = np.random.default_rng(4).standard_normal((2, 64, 300)).astype(np.float32)
    softmax = jax.jit(lambda t: rowops_gpu.softmax(t))  # a new function per route: jit keeps what it traced
    assert f"custom_call @{'xla_buffer_python_gpu_callback' if route == 'buffer_callback' else route}" in softmax.lower(x).as_text()
    y = softmax(jax.numpy.asarray(x))
    np.testing.assert_allclose(np.asarray(y), reference.softmax(x), rtol=1e-5, atol=1e-7)
    mapped = jax.jit(jax.vmap(lambda t: rowops_gpu.softmax(t)))(jax.numpy.asarray(x))
    np.testing.assert_allclose(np.asarray(mapped), np.asarray(y), rtol=1e-6)
    grad = jax.jit(jax.grad(lambda t: rowops_gpu.softmax(t)[..., 0].sum()))(jax.numpy.asarray(x))
    assert grad.shape == x.shape and np.isfinite(np.asarray(grad)).all()


_COMMAND_BUFFER = """
import sys
import jax, numpy as np
import aotc, aotc.kernels
ops = aotc.kernels.over(aotc.load(sys.argv[1], backend="cuda-python"))
x = np.random.default_rng(5).standard_normal((4, 32, 200)).astype(np.float32)
step = jax.jit(lambda t: ops.softmax(ops.softmax(t) * 2.0))
compiled = step.lower(x).compile().as_text()
print("command buffer:", "command_buffer" in compiled, "launcher:", "triton_kernel_call_ffi" in compiled)
for _ in range(3):
    y = np.asarray(step(jax.numpy.asarray(x)))
e = np.exp(x - x.max(-1, keepdims=True)); first = e / e.sum(-1, keepdims=True)
e = np.exp(2 * first - (2 * first).max(-1, keepdims=True)); print("max error:", float(np.abs(y - e / e.sum(-1, keepdims=True)).max()))
"""


def test_jaxlibs_launcher_inside_a_cuda_graph(rowops_gpu: Any) -> None:
    """XLA's command buffers (CUDA graphs) hold the built-in launcher's call, which
    jaxlib marks command-buffer compatible (aotc's callbacks are not: docs/design.md, "JAX")."""
    pytest.importorskip("jax", reason="JAX is not installed (the GPU suite needs jax with its CUDA plugin)")
    from aotc.runtime.jax_route import builtin_launcher

    in_use, why = builtin_launcher()
    if not in_use:
        pytest.skip(f"jaxlib's built-in launcher is not in use here: {why}")
    env = {**os.environ, "XLA_FLAGS": "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"}
    folder = rowops_gpu.family("softmax").library.folder
    result = subprocess.run([sys.executable, "-c", _COMMAND_BUFFER, folder], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    print(result.stdout)
    lines = result.stdout.splitlines()
    assert "command buffer: True launcher: True" in lines
    assert float(lines[-1].split(": ")[1]) < 1e-5


@pytest.fixture(scope="module")
def warpnorm_gpu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _build_for_this_gpu(REPO / "examples" / "warpnorm", tmp_path_factory.mktemp("warpnorm-gpu"), "warpnorm")


# As tests/kernels/test_warpnorm.py states them: the half types within half an
# ulp of a float32 reference from the same half inputs (their rounding), f32
# within the float sums' error. NumPy arrays, staged (no torch ops: the
# emulator's warpnorm library may hold torch.ops.warpnorm in this process).
_WARPNORM_TOLERANCE = {"f32": {"rtol": 1e-5, "atol": 1e-6}, "f16": {"rtol": 5e-4, "atol": 1e-5}, "bf16": {"rtol": 4e-3, "atol": 1e-5}}


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_warpnorm_on_the_gpu(warpnorm_gpu: Any, dtype: str) -> None:
    import ml_dtypes

    kind = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    rng = np.random.default_rng(13)
    x = (rng.normal(size=(37, 1000)) * 3 + 0.5).astype(kind)
    gamma, beta = rng.normal(size=1000).astype(kind), rng.normal(size=1000).astype(kind)
    wide = [a.astype(np.float32) for a in (x, gamma, beta)]
    y = warpnorm_gpu.softmax(x)
    assert y.dtype == x.dtype
    np.testing.assert_allclose(y.astype(np.float32), warpnorm_reference.softmax(wide[0]), **_WARPNORM_TOLERANCE[dtype])
    y, mean, rstd = warpnorm_gpu.layernorm(x, gamma, beta, 1e-5)
    want_y, want_mean, want_rstd = warpnorm_reference.layernorm(*wide, 1e-5)
    np.testing.assert_allclose(y.astype(np.float32), want_y, **_WARPNORM_TOLERANCE[dtype])
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, want_rstd, rtol=1e-5)


# Half arithmetic with rounding CUDA defines per operation (round to nearest
# even, no contraction: the _rn forms), and float-to-half conversion: the
# emulator's cuda_fp16.h and cuda_bf16.h must give the GPU's bits exactly.
HALFROUND = {
    "manifest.yaml": """\
library: halfround
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  halfround:
    template: halfround.cu.j2
    axes: {dtype: [f16, bf16]}
    name: "halfround_{dtype}"
    signature:
      a: {array: dtype, role: in, shape: [n]}
      b: {array: dtype, role: in, shape: [n]}
      c: {array: dtype, role: in, shape: [n]}
      fused: {array: dtype, role: out, shape: [n]}
      converted: {array: dtype, role: out, shape: [n]}
      n: i32
    launch:
      grid: ["cdiv(n, 128)"]
      block: [128]
""",
    "templates/halfround.cu.j2": """\
// {{ kernel_name }}: a * b + c in the half type, each operation rounded; and
// (float) a * 3 rounded to the half type.
extern "C" __global__ void __launch_bounds__(128) {{ kernel_name }}({{ params }})
{
    int i = blockIdx.x * 128 + threadIdx.x;
    if (i >= n) return;
    fused[i] = __hadd_rn(__hmul_rn(a[i], b[i]), c[i]);
    float wide = __fmul_rn({% if dtype == "f16" %}__half2float{% else %}__bfloat162float{% endif %}(a[i]), 3.0f);
    converted[i] = {% if dtype == "f16" %}__float2half_rn{% else %}__float2bfloat16_rn{% endif %}(wide);
}
""",
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.24)\nproject(halfround LANGUAGES NONE)\n"
    "find_package(aotc CONFIG REQUIRED)\naotc_add_kernel_library(halfround MANIFEST manifest.yaml INSTALL_DIR halfround)\n",
}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_rounding_matches_the_emulator_bit_for_bit(tmp_path: Any, dtype: str) -> None:
    import ml_dtypes

    project = tmp_path / "project"
    write_project(project, HALFROUND)
    gpu = _build_for_this_gpu(project, tmp_path / "gpu", "halfround")
    emulated = aotc.kernels.over(aotc.load(declared_library(tmp_path / "emulated", project / "manifest.yaml"), backend="emulator"))
    kind = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    # Every 16-bit pattern but the NaNs (whose payloads the two need not share),
    # subnormals, infinities and the largest values included, in a random order.
    bits = np.random.default_rng(17).permutation(np.arange(1 << 16, dtype=np.uint32)).astype(np.uint16)
    values = bits.view(kind)
    values = values[~np.isnan(values.astype(np.float32))]
    a, b, c = values, np.roll(values, 1), np.roll(values, 7)
    got, want = gpu.halfround(a, b, c), emulated.halfround(a, b, c)
    for name, on_gpu, on_cpu in zip(("fused", "converted"), got, want):
        nan = np.isnan(on_gpu.astype(np.float32))
        assert np.array_equal(nan, np.isnan(on_cpu.astype(np.float32))), f"{dtype} {name}: NaN in one result, not the other"
        mismatched = np.flatnonzero((on_gpu.view(np.uint16) != on_cpu.view(np.uint16)) & ~nan)
        assert mismatched.size == 0, f"{dtype} {name}: {mismatched.size} results differ, the first for {a[mismatched[0]]!r}, {b[mismatched[0]]!r}, {c[mismatched[0]]!r}"


# Float-to-integer intrinsics (__float2int_rn and kin) on their boundaries:
# the GPU's cvt against the table both sides follow (saturation, NaN to 0,
# each rounding), and against the emulator (tests/runtime/conversion_support.py).
@pytest.mark.parametrize("source", ["f32", "f64"])
def test_conversions_match_the_table_and_the_emulator(tmp_path: Any, source: str) -> None:
    from runtime.conversion_support import CONVERSIONS, boundaries, mismatches

    project = tmp_path / "project"
    write_project(project, {**CONVERSIONS, "CMakeLists.txt": HALFROUND["CMakeLists.txt"].replace("halfround", "conversions")})
    gpu = _build_for_this_gpu(project, tmp_path / "gpu", "conversions")
    emulated = aotc.kernels.over(aotc.load(declared_library(tmp_path / "emulated", project / "manifest.yaml"), backend="emulator"))
    values = boundaries(source)
    names = ("i32", "u32", "i64", "u64")
    on_gpu, on_cpu = dict(zip(names, gpu.convert(values))), dict(zip(names, emulated.convert(values)))
    assert mismatches(source, values, on_gpu) == [], "the GPU departs from the table"
    for name in names:
        assert np.array_equal(on_gpu[name], on_cpu[name]), f"{source} to {name}: the emulator departs from the GPU"
