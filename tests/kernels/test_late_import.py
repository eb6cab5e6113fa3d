"""An entry made before PyTorch is imported (a first NumPy call, then
``import torch``) gives tensor calls the same plans as one made after: the
entry's source is the same either way, and PyTorch's types and checks are
bound into it when they arrive (aotc.kernels._entry.bind_arrays)."""

from __future__ import annotations

from typing import Any

import pytest

from declared_support import rowops, run_fresh  # noqa: F401 - fixtures

pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

LATE = """\
import sys
import numpy as np
import aotc.kernels

kernels = aotc.kernels.load(sys.argv[1], backend="emulator")
softmax = kernels.softmax  # the entry, held: later calls go through this reference
x = np.random.default_rng(0).normal(size=(3, 7))
softmax(x)
assert "torch" not in sys.modules
import torch
from aotc.kernels._binding import Layout

t, out = torch.from_numpy(x), torch.empty(3, 7, dtype=torch.float64)
softmax(t), softmax(t, y=out)  # the full path, through the op: each leaves its plan
full, missed = Layout.full, []
Layout.full = lambda self, *args: missed.append(self.name) or full(self, *args)
for _ in range(3):
    got = softmax(t)
    softmax(t, y=out)
assert missed == [], missed
assert torch.allclose(got, torch.softmax(t, dim=-1)) and torch.equal(got, out)
print("planned after a late import")
"""


def test_tensor_calls_take_plans_when_torch_is_imported_after_the_entry_was_made(rowops: Any, tmp_path: Any) -> None:  # noqa: F811
    assert run_fresh(tmp_path, LATE, rowops.library.folder) == "planned after a late import"
