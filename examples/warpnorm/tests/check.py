"""Run the warpnorm kernels against their NumPy references, from NumPy and,
where PyTorch is installed, through torch.ops.warpnorm, gradcheck and
torch.compile.

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

print(f"warpnorm: {len(warpnorm.kernels().library)} kernels agree with the NumPy references: {', '.join(checked)}")
