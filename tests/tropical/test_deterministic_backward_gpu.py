"""On a GPU, whose block order is its own: backward gradients are the same bits
run to run, and equal the sums in the kernels' fixed order."""

from __future__ import annotations

import numpy as np
import pytest

import aotc
from aotc import tropical
from conftest import installed_library

pytestmark = pytest.mark.gpu  # skipped with the probe's reason where there is no GPU (conftest.py)


def test_gradients_are_bit_identical_run_to_run_and_in_fixed_order() -> None:
    api = tropical.over(aotc.load(installed_library()))
    m, k, n = 2000, 3, 3000
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    grad_c = (rng.choice([-1.0, 1.0], (m, n)) * 10.0 ** rng.uniform(-8, 8, (m, n))).astype(np.float32)
    kstar = np.where(rng.random((m, n)) < 0.8, 0, rng.integers(-1, k, (m, n))).astype(np.int32)
    runs = [api.matmul_backward(grad_c, kstar, a, b, "maxplus") for _ in range(5)]
    for grad_a, grad_b in runs[1:]:
        assert grad_a.tobytes() == runs[0][0].tobytes() and grad_b.tobytes() == runs[0][1].tobytes()
    # Row 17 of grad_A, left to right; column 29 of grad_B, top to bottom.
    row, column = np.zeros(k, np.float32), np.zeros(k, np.float32)
    for j in np.flatnonzero(kstar[17] >= 0):
        row[kstar[17, j]] += grad_c[17, j]
    for i in np.flatnonzero(kstar[:, 29] >= 0):
        column[kstar[i, 29]] += grad_c[i, 29]
    assert runs[0][0][17].tobytes() == row.tobytes()
    assert runs[0][1][:, 29].tobytes() == column.tobytes()
