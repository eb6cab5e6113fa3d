"""On a GPU, with JAX's CUDA build: the buffer_callback route runs on XLA's own
stream, under jit, grad and vmap, against aotc.reference."""

from __future__ import annotations

import numpy as np
import pytest

from aotc import reference, tropical

pytestmark = pytest.mark.gpu  # skipped with the probe's reason where there is no GPU (conftest.py)

jax = pytest.importorskip("jax", reason="JAX is not installed (the GPU suite needs jax with its CUDA plugin)")


@pytest.fixture(autouse=True)
def jax_on_a_gpu() -> None:
    if jax.default_backend() != "gpu":
        pytest.skip(f"JAX runs on {jax.default_backend()} here: install jax[cuda13] (or cuda12) for its GPU backend")


def test_jit_grad_and_vmap_on_xlas_stream() -> None:
    import jax.numpy as jnp

    rng = np.random.default_rng(23)
    a, b = rng.uniform(1, 2, (4, 300, 70)).astype(np.float32), rng.uniform(1, 2, (70, 500)).astype(np.float32)
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    assert ja.devices().pop().platform == "gpu"
    c = jax.jit(tropical.matmul)(ja, jb)
    np.testing.assert_array_equal(np.asarray(c), reference.matmul(a, b, "maxplus"))
    mapped = jax.jit(jax.vmap(tropical.matmul, in_axes=(0, None)))(ja, jb)
    np.testing.assert_array_equal(np.asarray(mapped), np.asarray(c))
    grad_a, grad_b = jax.jit(jax.grad(lambda x, y: tropical.matmul(x, y).sum(), argnums=(0, 1)))(ja, jb)
    _, k = reference.matmul_argmax(a, b, "maxplus")
    expected_a, expected_b = reference.matmul_backward(np.ones(c.shape, np.float32), k, a, b, "maxplus")
    np.testing.assert_allclose(np.asarray(grad_a), expected_a, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(grad_b), expected_b, rtol=1e-5)
