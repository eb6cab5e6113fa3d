"""examples/warpnorm: a row softmax and a layernorm written one warp a row with
__shfl_xor_sync butterfly reductions, and their gradient kernels, against the
example's NumPy references: from NumPy, PyTorch (opcheck, gradcheck,
torch.compile) and JAX (jit, grad), at f32 and f64, and at f16 and bf16 (the
sums in f32); clean under the emulator's warp-level checks, with a dropped
shuffle lane named; and compiled by nvcc for sm_80.

The library is the example's manifest rendered by the real codegen
(``declared_library``), so the emulator runs the sources the wheel ships.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from aotc.build.codegen import render_kernel
from aotc.build.manifest import load_manifest
from aotc.errors import KernelFaultError
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes
from conftest import first_fault
from declared_support import WARPNORM, warpnorm  # noqa: F401 - fixtures
from declared_support import warpnorm_reference as reference

RNG = np.random.default_rng(34)
DTYPES = [np.float32, np.float64]
WARPS = 4  # the manifest's warps a block: rows a block
FAMILIES = ("layernorm", "layernorm_grad_params", "layernorm_grad_x", "softmax", "softmax_backward")

# Per dtype: the kernels sum in float (f32) or double (f64), in another order
# than the float64 reference, and exp and sqrt are the C library's.
SOFTMAX_TOLERANCE = {np.float32: {"rtol": 2e-6, "atol": 1e-30}, np.float64: {"rtol": 1e-13, "atol": 1e-300}}
# y is about 1 in size, so an absolute bound too; the gradients sum over a
# row (grad_x) or over the rows (grad_gamma, grad_beta).
LAYERNORM_TOLERANCE = {np.float32: {"rtol": 1e-5, "atol": 1e-5}, np.float64: {"rtol": 1e-12, "atol": 1e-12}}
GRADIENT_TOLERANCE = {np.float32: {"rtol": 1e-4, "atol": 1e-4}, np.float64: {"rtol": 1e-11, "atol": 1e-11}}

# Rows of one lane to many warps' worth, 32 and not a multiple of 32; row counts
# of one, below and above a block's WARPS rows, none a multiple of it but one.
SHAPES = [(1, 1), (3, 31), (5, 32), (6, 33), (8, 100), (13, 1000), (2, 4099)]


def _layernorm_inputs(shape: tuple[int, int], dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = (RNG.normal(size=shape) * 3 + 0.5).astype(dtype)
    return x, RNG.normal(size=shape[1]).astype(dtype), RNG.normal(size=shape[1]).astype(dtype)


# ---- NumPy ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_matches_the_reference(warpnorm: Any, shape: tuple[int, int], dtype: Any) -> None:  # noqa: F811
    x = (RNG.normal(size=shape) * 300).astype(dtype)  # large magnitudes: only the max shift keeps exp finite
    y = warpnorm.softmax(x)
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_allclose(y, reference.softmax(x), **SOFTMAX_TOLERANCE[dtype])
    grad_y = RNG.normal(size=shape).astype(dtype)
    (grad_x,) = warpnorm.layout("softmax").gradients({"x": x, "y": y}, {"y": grad_y}, {}).values()
    np.testing.assert_allclose(grad_x, reference.softmax_backward(grad_y, y), **GRADIENT_TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_layernorm_matches_the_reference(warpnorm: Any, shape: tuple[int, int], dtype: Any) -> None:  # noqa: F811
    x, gamma, beta = _layernorm_inputs(shape, dtype)
    y, mean, rstd = warpnorm.layernorm(x, gamma, beta, 1e-5)
    want_y, want_mean, want_rstd = reference.layernorm(x, gamma, beta, 1e-5)
    assert (y.dtype, mean.dtype, rstd.dtype) == (dtype, dtype, dtype)  # acc: f32 sums for f32, f64 for f64
    np.testing.assert_allclose(y, want_y, **LAYERNORM_TOLERANCE[dtype])
    np.testing.assert_allclose(mean, want_mean, **LAYERNORM_TOLERANCE[dtype])
    np.testing.assert_allclose(rstd, want_rstd, **LAYERNORM_TOLERANCE[dtype])

    # Both gradient kernels, from the gradient of y alone (mean's and rstd's are zeros).
    grad_y = RNG.normal(size=shape).astype(dtype)
    values = {"x": x, "gamma": gamma, "beta": beta, "mean": mean, "rstd": rstd, "eps": 1e-5}
    grads = warpnorm.layout("layernorm").gradients(values, {"y": grad_y}, {})
    assert sorted(grads) == ["beta", "gamma", "x"]
    for name, want in zip(("x", "gamma", "beta"), reference.layernorm_backward(grad_y, x, gamma, 1e-5)):
        assert grads[name].dtype == dtype
        np.testing.assert_allclose(grads[name], want, **GRADIENT_TOLERANCE[dtype], err_msg=f"grad_{name}")


def test_layernorm_variance_is_taken_around_the_mean(warpnorm: Any) -> None:  # noqa: F811
    """Rows whose mean dwarfs their spread: E[x^2] - E[x]^2 would cancel to
    noise here (about 1e-4 of the variance in float64); two passes do not."""
    x = 1e6 + RNG.normal(size=(5, 300))
    gamma, beta = np.ones(300), np.zeros(300)
    y, _, rstd = warpnorm.layernorm(x, gamma, beta, 0.0)
    want_y, _, want_rstd = reference.layernorm(x, gamma, beta, 0.0)
    np.testing.assert_allclose(rstd, want_rstd, rtol=1e-9)
    np.testing.assert_allclose(y, want_y, rtol=1e-9, atol=1e-9)


# ---- PyTorch ----------------------------------------------------------------------------------


class TestTorch:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")
    CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")

    def test_opcheck(self, warpnorm: Any) -> None:  # noqa: F811
        torch = self.torch
        ops = warpnorm.torch_ops()
        x = torch.randn(6, 45, dtype=torch.float64, requires_grad=True)
        gamma, beta = (torch.randn(45, dtype=torch.float64, requires_grad=True) for _ in range(2))
        for op, args in ((ops.softmax, (x,)), (ops.layernorm, (x, gamma, beta, 1e-5))):
            assert torch.library.opcheck(op.default, args, test_utils=self.CHECKS) == dict.fromkeys(self.CHECKS, "SUCCESS")

    def test_gradcheck_softmax(self, warpnorm: Any) -> None:  # noqa: F811
        torch = self.torch
        x = torch.randn(5, 37, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t: warpnorm.softmax(t), (x,), eps=1e-6, atol=1e-7)

    def test_gradcheck_layernorm_in_every_input_and_result(self, warpnorm: Any) -> None:  # noqa: F811
        """All three results: the gradients of mean and rstd reach grad_x too."""
        torch = self.torch
        x = (torch.randn(5, 37, dtype=torch.float64) * 2 + 1).requires_grad_()
        gamma, beta = (torch.randn(37, dtype=torch.float64, requires_grad=True) for _ in range(2))
        assert torch.autograd.gradcheck(lambda *a: warpnorm.layernorm(*a, 1e-5), (x, gamma, beta), eps=1e-6, atol=1e-7)

    def test_layernorm_agrees_with_pytorch(self, warpnorm: Any) -> None:  # noqa: F811
        torch = self.torch
        x = torch.randn(7, 70, dtype=torch.float64, requires_grad=True)
        gamma, beta = (torch.randn(70, dtype=torch.float64, requires_grad=True) for _ in range(2))
        ours = [t.detach().clone().requires_grad_() for t in (x, gamma, beta)]
        torch.nn.functional.layer_norm(x, (70,), gamma, beta, 1e-5).square().sum().backward()
        warpnorm.layernorm(*ours, 1e-5)[0].square().sum().backward()
        for theirs, mine in zip((x, gamma, beta), ours):
            torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-12, atol=1e-12)

    def test_a_compiled_training_step_runs_the_gradient_kernels(self, warpnorm: Any) -> None:  # noqa: F811
        torch = self.torch

        def loss(x: Any, gamma: Any, beta: Any) -> Any:
            y = warpnorm.layernorm(x, gamma, beta, 1e-5)[0]
            return (warpnorm.softmax(y) * torch.arange(y.shape[1], dtype=y.dtype)).sum()

        x, gamma, beta = torch.randn(9, 50), torch.randn(50), torch.randn(50)
        eager = [t.clone().requires_grad_() for t in (x, gamma, beta)]
        want = loss(*eager)
        want.backward()
        traced = [t.clone().requires_grad_() for t in (x, gamma, beta)]
        got = torch.compile(loss, fullgraph=True, backend="aot_eager")(*traced)
        got.backward()
        torch.testing.assert_close(got, want)
        for a, b in zip(eager, traced):
            assert b.grad is not None
            torch.testing.assert_close(b.grad, a.grad)


# ---- JAX --------------------------------------------------------------------------------------


class TestJax:
    jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")

    def test_jit(self, warpnorm: Any) -> None:  # noqa: F811
        jax = self.jax
        x, gamma, beta = _layernorm_inputs((6, 77), np.float32)
        y = jax.jit(warpnorm.softmax)(jax.numpy.asarray(x))
        np.testing.assert_allclose(np.asarray(y), reference.softmax(x), **SOFTMAX_TOLERANCE[np.float32])
        got = jax.jit(lambda *a: warpnorm.layernorm(*a, 1e-5))(*(jax.numpy.asarray(a) for a in (x, gamma, beta)))
        for a, b in zip(got, reference.layernorm(x, gamma, beta, 1e-5)):
            np.testing.assert_allclose(np.asarray(a), b, **LAYERNORM_TOLERANCE[np.float32])

    def test_grad_of_layernorm(self, warpnorm: Any) -> None:  # noqa: F811
        jax = self.jax
        x, gamma, beta = _layernorm_inputs((5, 70), np.float64)
        grad_y = RNG.normal(size=x.shape)
        with jax.enable_x64(True):
            loss = jax.jit(jax.grad(lambda *a: (warpnorm.layernorm(*a, 1e-5)[0] * grad_y).sum(), argnums=(0, 1, 2)))
            got = loss(*(jax.numpy.asarray(a) for a in (x, gamma, beta)))
        for name, a, b in zip(("x", "gamma", "beta"), got, reference.layernorm_backward(grad_y, x, gamma, 1e-5)):
            np.testing.assert_allclose(np.asarray(a), b, **GRADIENT_TOLERANCE[np.float64], err_msg=f"grad_{name}")


# ---- the emulator's warp-level checks ---------------------------------------------------------

MASK = "#define WARPNORM_FULL_MASK 0xffffffffu\n"


def _softmax_source(mask: str = MASK) -> bytes:
    """softmax_f32 as the build renders it, with the reductions' mask ``mask``."""
    manifest = load_manifest(WARPNORM / "manifest.yaml")
    kernel = next(k for k in manifest.kernels if k.name == "softmax_f32")
    source = render_kernel(manifest, kernel)
    assert source.count(MASK) == 1, "the reductions' mask is no longer one #define in warp_common.cuh"
    return source.replace(MASK, mask).encode()


def _run_softmax(source: bytes, checks: str, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray]:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", checks)
    library = load_library_bytes(compile_library_bytes(source, ["softmax_f32"], source_name="softmax_f32.cu"))
    x = RNG.normal(size=(6, 45)).astype(np.float32)  # two blocks, the second with two spare warps
    y = np.full_like(x, np.nan)
    args = [ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data), ctypes.c_int(6), ctypes.c_int(45)]
    library.launch("softmax_f32", -(-6 // WARPS), 32 * WARPS, 0, args)
    return y, x


def test_the_reductions_are_clean_under_the_warp_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    y, x = _run_softmax(_softmax_source(), "race,init,sync", monkeypatch)
    np.testing.assert_allclose(y, reference.softmax(x), **SOFTMAX_TOLERANCE[np.float32])


def test_a_lane_dropped_from_the_shuffle_mask_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lane 31 left out of the mask, as a mask written for 31 columns would: it
    still calls the shuffle, which CUDA leaves undefined (on a GPU, most often
    a plausible wrong max), and the sync check names the lane and the line."""
    with pytest.raises(KernelFaultError) as caught:
        _run_softmax(_softmax_source("#define WARPNORM_FULL_MASK 0x7fffffffu\n"), "sync", monkeypatch)
    text = first_fault(caught.value)
    assert re.match(
        r"softmax_f32: sync check: lane not in mask: in block \(0, 0, 0\) warp 0, lane 31 \(thread \(31, 0, 0\)\) "
        r"calls __shfl_xor_sync with mask 0x7fffffff, which does not name lane 31 \(softmax_f32\.cu:\d+\)$",
        text,
    ), text


# ---- the half types ---------------------------------------------------------------------------
# f16 and bf16 arrays as a user passes them: NumPy's float16 and ml_dtypes'
# bfloat16, torch.float16 and torch.bfloat16, jnp.float16 and jnp.bfloat16.
# Their sums are f32 (the manifest's acc), and so are layernorm's mean and rstd.
# The references take the half inputs' values (exact in float32) and compute in
# float64, so what is left is the kernels' f32 sums and one rounding to the half type.

HALVES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
HALF_SHAPES = [(3, 31), (6, 77)]  # lanes with no column; a second block with two spare warps
# Rounding the result to the half type is at most half its ulp, relative: 2^-11
# (f16) and 2^-8 (bf16), a bound a store that truncates breaks; the float sums
# add far less, and atol covers them where y is near 0 (and f16's subnormals).
HALF_TOLERANCE = {"f16": {"rtol": 5e-4, "atol": 1e-5}, "bf16": {"rtol": 4e-3, "atol": 1e-5}}
# The gradients round once to the half type as well (their largest relative
# error is that bound, as y's is); twice it leaves room for the f32 sums before
# it: grad_x is a difference of terms as large as gamma * grad_y (a few units)
# that may cancel near 0, where atol, some 100 times f32's error in such terms,
# holds it, and grad_gamma and grad_beta add over the rows.
HALF_GRADIENT_TOLERANCE = {"f16": {"rtol": 1e-3, "atol": 1e-4}, "bf16": {"rtol": 8e-3, "atol": 1e-4}}


def _half_inputs(shape: tuple[int, int], dtype: str) -> tuple[np.ndarray, ...]:
    """x, gamma, beta and grad_y as NumPy arrays of the half type."""
    x, gamma, beta = _layernorm_inputs(shape, np.float32)
    return tuple(a.astype(HALVES[dtype]) for a in (x, gamma, beta, RNG.normal(size=shape).astype(np.float32)))


def _wide(array: Any) -> np.ndarray:
    """A half array's values as float32 (exact), from NumPy, PyTorch or JAX."""
    if hasattr(array, "detach"):
        return array.detach().float().numpy()
    return np.asarray(array).astype(np.float32)


def _assert_half(got: Any, want: np.ndarray, tolerance: dict[str, float], what: str) -> None:
    np.testing.assert_allclose(_wide(got), want, **tolerance, err_msg=what)


@pytest.mark.parametrize("dtype", sorted(HALVES))
@pytest.mark.parametrize("shape", HALF_SHAPES)
def test_half_arrays_from_numpy(warpnorm: Any, shape: tuple[int, int], dtype: str) -> None:  # noqa: F811
    x, gamma, beta, grad_y = _half_inputs(shape, dtype)
    wide = [_wide(a) for a in (x, gamma, beta, grad_y)]
    y = warpnorm.softmax(x)
    assert y.dtype == HALVES[dtype] and y.shape == shape
    _assert_half(y, reference.softmax(wide[0]), HALF_TOLERANCE[dtype], "softmax")
    (grad_x,) = warpnorm.layout("softmax").gradients({"x": x, "y": y}, {"y": grad_y}, {}).values()
    assert grad_x.dtype == HALVES[dtype]
    _assert_half(grad_x, reference.softmax_backward(wide[3], _wide(y)), HALF_GRADIENT_TOLERANCE[dtype], "softmax grad_x")

    y, mean, rstd = warpnorm.layernorm(x, gamma, beta, 1e-5)
    assert (y.dtype, mean.dtype, rstd.dtype) == (HALVES[dtype], np.float32, np.float32)  # acc: f32 sums
    want_y, want_mean, want_rstd = reference.layernorm(*wide[:3], 1e-5)
    _assert_half(y, want_y, HALF_TOLERANCE[dtype], "layernorm y")
    np.testing.assert_allclose(mean, want_mean, **LAYERNORM_TOLERANCE[np.float32])  # float sums of exact half values
    np.testing.assert_allclose(rstd, want_rstd, **LAYERNORM_TOLERANCE[np.float32])
    values = {"x": x, "gamma": gamma, "beta": beta, "mean": mean, "rstd": rstd, "eps": 1e-5}
    grads = warpnorm.layout("layernorm").gradients(values, {"y": grad_y}, {})
    for name, want in zip(("x", "gamma", "beta"), reference.layernorm_backward(wide[3], wide[0], wide[1], 1e-5)):
        assert grads[name].dtype == HALVES[dtype]
        _assert_half(grads[name], want, HALF_GRADIENT_TOLERANCE[dtype], f"layernorm grad_{name}")


@pytest.mark.parametrize("dtype", sorted(HALVES))
def test_half_tensors_through_autograd(warpnorm: Any, dtype: str) -> None:  # noqa: F811
    """torch.float16 and torch.bfloat16 through torch.ops.warpnorm: forward, and
    torch.autograd.grad through the three gradient kernels at the half type."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")
    kind = getattr(torch, HALVES[dtype].name)
    x, gamma, beta, grad_y = (torch.from_numpy(_wide(a)).to(kind) for a in _half_inputs((6, 77), dtype))
    x, gamma, beta = (t.requires_grad_() for t in (x, gamma, beta))
    wide = [_wide(t) for t in (x, gamma, beta, grad_y)]

    y = warpnorm.softmax(x)
    assert y.dtype is kind
    _assert_half(y, reference.softmax(wide[0]), HALF_TOLERANCE[dtype], "softmax")
    (grad_x,) = torch.autograd.grad(y, (x,), grad_y)
    assert grad_x.dtype is kind
    _assert_half(grad_x, reference.softmax_backward(wide[3], _wide(y)), HALF_GRADIENT_TOLERANCE[dtype], "softmax grad_x")

    y = warpnorm.layernorm(x, gamma, beta, 1e-5)[0]
    assert y.dtype is kind
    _assert_half(y, reference.layernorm(*wide[:3], 1e-5)[0], HALF_TOLERANCE[dtype], "layernorm y")
    grads = torch.autograd.grad(y, (x, gamma, beta), grad_y)
    for name, got, want in zip(("x", "gamma", "beta"), grads, reference.layernorm_backward(wide[3], *wide[:2], 1e-5)):
        assert got.dtype is kind
        _assert_half(got, want, HALF_GRADIENT_TOLERANCE[dtype], f"layernorm grad_{name}")


@pytest.mark.parametrize("dtype", sorted(HALVES))
def test_half_arrays_through_jax(warpnorm: Any, dtype: str) -> None:  # noqa: F811
    """jnp.float16 and jnp.bfloat16 under jax.jit, and jax.grad of layernorm at the half type."""
    jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
    x, gamma, beta, grad_y = (jax.numpy.asarray(a) for a in _half_inputs((6, 77), dtype))
    assert x.dtype == HALVES[dtype]
    wide = [_wide(a) for a in (x, gamma, beta, grad_y)]
    y = jax.jit(warpnorm.softmax)(x)
    assert y.dtype == HALVES[dtype]
    _assert_half(y, reference.softmax(wide[0]), HALF_TOLERANCE[dtype], "softmax")
    y, mean, rstd = jax.jit(lambda *a: warpnorm.layernorm(*a, 1e-5))(x, gamma, beta)
    assert (y.dtype, mean.dtype, rstd.dtype) == (HALVES[dtype], np.float32, np.float32)
    _assert_half(y, reference.layernorm(*wide[:3], 1e-5)[0], HALF_TOLERANCE[dtype], "layernorm y")
    loss = jax.jit(jax.grad(lambda *a: (warpnorm.layernorm(*a, 1e-5)[0].astype(np.float32) * wide[3]).sum(), argnums=(0, 1, 2)))
    for name, got, want in zip(("x", "gamma", "beta"), loss(x, gamma, beta), reference.layernorm_backward(wide[3], *wide[:2], 1e-5)):
        assert got.dtype == HALVES[dtype]
        _assert_half(got, want, HALF_GRADIENT_TOLERANCE[dtype], f"layernorm grad_{name}")


# ---- nvcc -------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_the_rendered_sources_compile_for_sm_80(tmp_path: Path) -> None:
    """Every declared kernel: five families at f32, f64, f16 and bf16."""
    manifest = load_manifest(WARPNORM / "manifest.yaml")
    assert {(k.family, dict(k.axes)["dtype"]) for k in manifest.kernels} == {(f, d) for f in FAMILIES for d in ("f32", "f64", *HALVES)}
    # Without the checked run's libasan preload, which is for Python, not for nvcc (it crashes it).
    env = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}
    sources = {kernel.name: render_kernel(manifest, kernel) for kernel in manifest.kernels}
    assert len(sources) == 20
    for name, text in sources.items():
        source = tmp_path / f"{name}.cu"
        source.write_text(text)
        result = subprocess.run(
            ["nvcc", "-cubin", "-arch=sm_80", "-Werror=all-warnings", "-o", str(tmp_path / f"{name}.cubin"), str(source)],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        assert result.returncode == 0, f"{name}: {result.stderr[-2000:]}"
