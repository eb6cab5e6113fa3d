"""On a GPU, which refuses a grid past 65535 blocks on y or z: tall products
and batches of more than 65,535 are launched in parts and are right
(the emulator's twin: tests/tropical/test_grid_split.py)."""

from __future__ import annotations

import numpy as np
import pytest

import aotc
from aotc import reference, tropical
from conftest import installed_library

pytestmark = pytest.mark.gpu  # skipped with the probe's reason where there is no GPU (conftest.py)
RNG = np.random.default_rng(65536)


@pytest.fixture(scope="module")
def api() -> tropical.Tropical:
    return tropical.over(aotc.load(installed_library()))


def test_a_tall_product(api: tropical.Tropical) -> None:
    a = RNG.normal(size=(8_400_000, 1)).astype(np.float32)
    b = RNG.normal(size=(1, 1)).astype(np.float32)
    np.testing.assert_array_equal(api.matmul(a, b), a + b)
    c, k = api.matmul_argmax(a, b, "minplus")
    np.testing.assert_array_equal(c, a + b)
    np.testing.assert_array_equal(k, np.zeros((8_400_000, 1), np.int32))


def test_a_batch_of_70000_products_and_its_gradient(api: tropical.Tropical) -> None:
    a = RNG.normal(size=(70_000, 2, 3)).astype(np.float32)
    b = RNG.normal(size=(3, 2)).astype(np.float32)  # broadcast over the batch: its gradient is one sum
    c, k = api.matmul_argmax(a, b)
    want_c, want_k = reference.matmul_argmax(a, b, "maxplus")
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(k, want_k)
    grad_c = RNG.normal(size=c.shape).astype(np.float32)
    grad_a, grad_b = api.matmul_backward(grad_c, k, a, b)
    np.testing.assert_array_equal(grad_a, reference.matmul_backward_a(grad_c, k, a, b, "maxplus"))
    np.testing.assert_allclose(grad_b, reference.matmul_backward_b(grad_c, k, a, b, "maxplus"), rtol=1e-3, atol=1e-2)  # float sums of 70,000 terms, in two orders
