"""Run the warpnorm kernels against their NumPy references, from NumPy (f32,
f64, f16, and bf16 where ml_dtypes is installed) and, where PyTorch is
installed, through torch.ops.warpnorm, gradcheck, torch.compile, and autograd
in torch.float16 and torch.bfloat16.

    AOTC_BACKEND=emulator python tests/check.py

(From tests/, `import warpnorm` finds the installed package, with its kernels,
not the source folder, which has none.)
"""

from __future__ import annotations

import numpy as np

import warpnorm
from warpnorm import reference

rng = np.random.default_rng(7)
checked = []

# Per dtype, as the README states: the kernels sum in float (f32) or double (f64).
TOLERANCE = {np.float32: {"rtol": 1e-5, "atol": 1e-5}, np.float64: {"rtol": 1e-12, "atol": 1e-12}}

# Rows longer than a warp and not a multiple of 32; 13 rows, not a multiple of a block's 4 warps.
for dtype in (np.float32, np.float64):
    x = (rng.normal(size=(13, 1000)) * 3).astype(dtype)
    gamma, beta = rng.normal(size=1000).astype(dtype), rng.normal(size=1000).astype(dtype)
    np.testing.assert_allclose(warpnorm.softmax(x), reference.softmax(x), **TOLERANCE[dtype])
    y, mean, rstd = warpnorm.kernels().layernorm(x, gamma, beta, 1e-5)
    for got, want in zip((y, mean, rstd), reference.layernorm(x, gamma, beta, 1e-5)):
        np.testing.assert_allclose(got, want, **TOLERANCE[dtype])
    checked.append(f"softmax and layernorm {np.dtype(dtype).name}")

# f16, and bf16 where ml_dtypes gives NumPy that type: sums in float, one rounding
# to the half type on the store (half its ulp, relative: 2^-11 and 2^-8); the
# references take the half inputs' values as float32, and mean and rstd are float.
HALF_TOLERANCE = {"float16": {"rtol": 5e-4, "atol": 1e-5}, "bfloat16": {"rtol": 4e-3, "atol": 1e-5}}
halves = [np.dtype(np.float16)]
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
if ml_dtypes is not None:
    halves.append(np.dtype(ml_dtypes.bfloat16))
for dtype in halves:
    x = (rng.normal(size=(13, 100)) * 3).astype(np.float32).astype(dtype)
    gamma, beta = rng.normal(size=100).astype(dtype), rng.normal(size=100).astype(dtype)
    wide = [a.astype(np.float32) for a in (x, gamma, beta)]
    p = warpnorm.softmax(x)
    assert p.dtype == dtype
    np.testing.assert_allclose(p.astype(np.float32), reference.softmax(wide[0]), **HALF_TOLERANCE[dtype.name])
    y, mean, rstd = warpnorm.kernels().layernorm(x, gamma, beta, 1e-5)
    assert (y.dtype, mean.dtype, rstd.dtype) == (dtype, np.float32, np.float32)
    want_y, want_mean, want_rstd = reference.layernorm(*wide, 1e-5)
    np.testing.assert_allclose(y.astype(np.float32), want_y, **HALF_TOLERANCE[dtype.name])
    np.testing.assert_allclose(mean, want_mean, **TOLERANCE[np.float32])
    np.testing.assert_allclose(rstd, want_rstd, **TOLERANCE[np.float32])
    checked.append(f"softmax and layernorm {dtype.name}")

try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    ops = warpnorm.kernels().torch_ops()  # torch.ops.warpnorm
    x = torch.randn(6, 70, dtype=torch.float64, requires_grad=True)
    gamma = torch.randn(70, dtype=torch.float64, requires_grad=True)
    beta = torch.randn(70, dtype=torch.float64, requires_grad=True)
    for op, args in ((ops.softmax, (x,)), (ops.layernorm, (x, gamma, beta, 1e-5))):
        result = torch.library.opcheck(op.default, args)
        assert all(v == "SUCCESS" for v in result.values()), result
    # softmax_backward; and layernorm's two gradient kernels, layernorm_grad_x and layernorm_grad_params.
    assert torch.autograd.gradcheck(warpnorm.softmax, (x[:3, :40].detach().requires_grad_(),), eps=1e-6, atol=1e-7)
    small = tuple(t[:3, :40].detach().requires_grad_() if t.dim() == 2 else t[:40].detach().requires_grad_() for t in (x, gamma, beta))
    assert torch.autograd.gradcheck(warpnorm.layernorm, small, eps=1e-6, atol=1e-7)
    compiled = torch.compile(lambda x, g, b: warpnorm.softmax(warpnorm.layernorm(x, g, b)), fullgraph=True)
    want = reference.softmax(reference.layernorm(x.detach().numpy(), gamma.detach().numpy(), beta.detach().numpy())[0])
    np.testing.assert_allclose(compiled(x, gamma, beta).detach().numpy(), want, rtol=1e-12)
    checked.append("torch.library.opcheck, gradcheck and torch.compile(fullgraph=True)")
    # Half tensors through autograd: the gradients round once to the half type
    # too, after float sums; held to twice the forward's bound (atol 1e-4).
    for kind, rtol in ((torch.float16, 5e-4), (torch.bfloat16, 4e-3)):
        half = [t.detach().to(kind).requires_grad_() for t in (x, gamma, beta)]
        grad_y = torch.randn(x.shape, dtype=torch.float64).to(kind)
        wide = [t.detach().double().numpy() for t in (*half, grad_y)]
        y = warpnorm.layernorm(*half)
        assert y.dtype is kind
        np.testing.assert_allclose(y.detach().double().numpy(), reference.layernorm(*wide[:3])[0], rtol=rtol, atol=1e-5)
        for got, want in zip(torch.autograd.grad(y, half, grad_y), reference.layernorm_backward(wide[3], *wide[:2])):
            assert got.dtype is kind
            np.testing.assert_allclose(got.double().numpy(), want, rtol=2 * rtol, atol=1e-4)
        p = warpnorm.softmax(half[0])
        np.testing.assert_allclose(p.detach().double().numpy(), reference.softmax(wide[0]), rtol=rtol, atol=1e-5)
        (got,) = torch.autograd.grad(p, half[:1], grad_y)
        want = reference.softmax_backward(wide[3], p.detach().double().numpy())
        np.testing.assert_allclose(got.double().numpy(), want, rtol=2 * rtol, atol=1e-4)
    checked.append("torch.float16 and torch.bfloat16 through autograd")

print(f"warpnorm: {len(warpnorm.kernels().library)} kernels agree with the NumPy references: {', '.join(checked)}")
