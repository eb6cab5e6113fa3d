"""Run the rowops kernels against their NumPy references, from NumPy and, where
PyTorch is installed, through torch.ops.rowops and torch.compile.

    AOTC_BACKEND=emulator python tests/check.py

(From tests/, `import rowops` finds the installed package, with its kernels,
not the source folder, which has none.)
"""

from __future__ import annotations

import numpy as np

import rowops
from rowops import reference

rng = np.random.default_rng(11)
checked = []

# NumPy: every dtype each family declares, rows longer than a block's chunk, large magnitudes.
for dtype in (np.float32, np.float64):
    x = (rng.normal(size=(9, 1500)) * 300).astype(dtype)
    np.testing.assert_allclose(rowops.softmax(x), reference.softmax(x), rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-30)
    checked.append(f"softmax {np.dtype(dtype).name}")
# A leading batch dimension: softmax declares it optional, so (batch, rows, cols) works too.
x = rng.normal(size=(3, 4, 600))
np.testing.assert_allclose(rowops.softmax(x), reference.softmax(x), rtol=1e-13, atol=1e-30)
checked.append("batched softmax")
for dtype in (np.int32, np.int64):
    x = rng.integers(-1000, 1000, size=(5, 3000)).astype(dtype)
    np.testing.assert_array_equal(rowops.scan(x), reference.scan(x))
    checked.append(f"scan {np.dtype(dtype).name}")
x = rng.normal(size=(5, 3000))
np.testing.assert_allclose(rowops.scan(x), reference.scan(x), rtol=1e-10, atol=1e-10)
checked.append("scan float64")
# The histogram's width is the caller's (bins); its counts start at zero (fill: 0).
for dtype in (np.float32, np.float64):
    x = rng.normal(size=(6, 2500)).astype(dtype)
    for bins in (1, 7, 300):
        np.testing.assert_array_equal(rowops.histogram(x, bins, -2.0, 2.0), reference.histogram(x, bins, -2.0, 2.0))
    checked.append(f"histogram {np.dtype(dtype).name}")
x, g, h = rng.normal(size=(7, 300)), rng.normal(size=300), rng.normal(size=300)
np.testing.assert_allclose(rowops.scale_shift(x, g, h), reference.scale_shift(x, g, h), rtol=1e-12, atol=1e-12)
checked.append("scale_shift")

try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    ops = rowops.kernels().torch_ops()  # torch.ops.rowops
    t = torch.randn(4, 700, dtype=torch.float64)
    g, h = torch.randn(700, dtype=torch.float64), torch.randn(700, dtype=torch.float64)
    for name, args in (("softmax", (t,)), ("scan", (t,)), ("histogram", (t, 16, -1.0, 1.0)), ("scale_shift", (t, g, h))):
        result = torch.library.opcheck(getattr(ops, name).default, args)
        assert all(v == "SUCCESS" for v in result.values()), result
    compiled = torch.compile(lambda x: rowops.scan(rowops.softmax(x)), fullgraph=True)
    np.testing.assert_allclose(compiled(t).numpy(), reference.scan(reference.softmax(t.numpy())), rtol=1e-12)
    # softmax's backward: (its manifest entry names softmax_backward) checked against finite differences.
    assert torch.autograd.gradcheck(rowops.softmax, (t[:2, :30].clone().requires_grad_(True),), eps=1e-6, atol=1e-7)
    assert torch.autograd.gradcheck(rowops.softmax, (t[:4, :30].reshape(2, 2, 30).clone().requires_grad_(True),), eps=1e-6, atol=1e-7)
    # scale_shift's backward is two kernels: scale_shift_grad_x for x, scale_shift_grad_params for g and h.
    small = (t[:3, :20].clone(), g[:20].clone(), h[:20].clone())
    assert torch.autograd.gradcheck(rowops.scale_shift, tuple(a.requires_grad_(True) for a in small), eps=1e-6, atol=1e-7)
    checked.append("torch.library.opcheck, torch.compile(fullgraph=True) and gradcheck")

print(f"rowops: {len(rowops.kernels().library)} kernels agree with the NumPy references: {', '.join(checked)}")
