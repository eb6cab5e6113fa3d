"""aotc/tropical/_jax.py: JAX arrays through the tropical kernels on the emulator,
eagerly and under jit, grad, vmap and a jitted training step, against aotc.reference;
and the custom call a cuda lowering holds."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from aotc import reference, tropical
from aotc.errors import ArgumentError, ArgumentTypeError, NoKernelImageError

jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
jnp = pytest.importorskip("jax.numpy")
from jax.test_util import check_grads  # noqa: E402 - after the skip

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")


@pytest.fixture(autouse=True, scope="module")
def x64() -> Any:
    """float64 and int64 arrays stay what they are (JAX's default makes them 32-bit)."""
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


def distinct(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray:
    """Distinct values: every argmax is tie-free, so gradients are well defined."""
    values = np.random.default_rng(seed).permutation(int(np.prod(shape))).astype(dtype) / 7 + 1
    return values.reshape(shape)


CASES = [  # (semiring, dtype, shape of a, shape of b): 2-D, batched, broadcast either way
    ("maxplus", np.float32, (5, 7), (7, 4)),
    ("minplus", np.float64, (3, 5, 7), (7, 4)),
    ("maxmul", np.float64, (5, 7), (3, 7, 4)),
    ("maxplus", np.float64, (2, 5, 7), (2, 7, 4)),
]


@pytest.mark.parametrize(("semiring", "dtype", "shape_a", "shape_b"), CASES)
def test_products_eager_and_jitted_match_the_reference(semiring: str, dtype: Any, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> None:
    a, b = distinct(shape_a, dtype, 1), distinct(shape_b, dtype, 2)
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    expected_c, expected_k = reference.matmul_argmax(a, b, semiring)
    for run in (lambda f: f, jax.jit):
        c = run(lambda x, y: tropical.matmul(x, y, semiring))(ja, jb)
        assert isinstance(c, jax.Array) and c.dtype == dtype
        np.testing.assert_array_equal(np.asarray(c), expected_c)
        c, k = run(lambda x, y: tropical.matmul_argmax(x, y, semiring))(ja, jb)
        np.testing.assert_array_equal(np.asarray(c), expected_c)
        np.testing.assert_array_equal(np.asarray(k), expected_k)


@pytest.mark.parametrize(("semiring", "dtype", "shape_a", "shape_b"), CASES)
def test_grad_is_the_backward_kernels(semiring: str, dtype: Any, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> None:
    a, b = distinct(shape_a, dtype, 3), distinct(shape_b, dtype, 4)
    weights = distinct((*np.broadcast_shapes(shape_a[:-2], shape_b[:-2]), shape_a[-2], shape_b[-1]), dtype, 5)
    loss = jax.jit(jax.grad(lambda x, y: (tropical.matmul(x, y, semiring) * weights).sum(), argnums=(0, 1)))
    grad_a, grad_b = loss(jnp.asarray(a), jnp.asarray(b))
    _, k = reference.matmul_argmax(a, b, semiring)
    expected_a, expected_b = reference.matmul_backward(weights, k, a, b, semiring)
    np.testing.assert_allclose(np.asarray(grad_a), expected_a, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(grad_b), expected_b, rtol=1e-6)
    # The same as an explicit call of the backward kernels.
    explicit = tropical.matmul_backward(jnp.asarray(weights), jnp.asarray(k), jnp.asarray(a), jnp.asarray(b), semiring)
    np.testing.assert_allclose(np.asarray(explicit[0]), expected_a, rtol=1e-6)


def test_check_grads_in_float64() -> None:
    # Random reals: no two terms tie (distinct() values can sum alike), so the product is smooth around them.
    rng = np.random.default_rng(6)
    a, b = jnp.asarray(rng.uniform(1, 2, (4, 6))), jnp.asarray(rng.uniform(1, 2, (6, 3)))
    check_grads(lambda x, y: tropical.matmul(x, y, "maxplus"), (a, b), order=1, modes=("rev",), eps=1e-4)
    check_grads(lambda x, y: tropical.matmul(x, y, "maxmul"), (a, b), order=1, modes=("rev",), eps=1e-4)


@pytest.mark.parametrize("order", ["grad of grad", "hessian"])
def test_a_second_derivative_is_refused_in_one_line(order: str) -> None:
    # The gradient kernels declare no backward: as PyTorch's formula says it,
    # not XLA's "Buffer callbacks do not support JVP".
    a = jnp.asarray(distinct((2, 2), np.float64, 12))
    first = jax.grad(lambda x: tropical.matmul(x, x).sum())
    second = jax.grad(lambda x: first(x).sum()) if order == "grad of grad" else jax.hessian(lambda x: tropical.matmul(x, x).sum())
    with pytest.raises(ArgumentError) as info:
        second(a)
    message = r"tropical\.matmul: a second derivative: its gradient kernels declare no backward in the manifest, so it cannot be differentiated twice"
    assert re.fullmatch(message, str(info.value).splitlines()[0])  # JAX appends a note on its own frames
    np.testing.assert_array_equal(np.asarray(first(a)).shape, (2, 2))  # the first derivative still runs


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
def test_vmap_runs_the_batched_kernels(in_axes: tuple[Any, Any]) -> None:
    a = distinct((4, 5, 7) if in_axes[0] == 0 else (5, 7), np.float32, 8)
    b = distinct((4, 7, 3) if in_axes[1] == 0 else (7, 3), np.float32, 9)
    mapped = jax.vmap(lambda x, y: tropical.matmul(x, y, "minplus"), in_axes=in_axes)(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_array_equal(np.asarray(mapped), reference.matmul(a, b, "minplus"))


def test_vmap_of_batched_operands_and_vmap_of_grad() -> None:
    a, b = distinct((2, 3, 5, 7), np.float64, 10), distinct((7, 4), np.float64, 11)
    nested = jax.vmap(lambda x: tropical.matmul(x, jnp.asarray(b)))(jnp.asarray(a))  # each x is a batch of 3
    np.testing.assert_array_equal(np.asarray(nested), reference.matmul(a.reshape(6, 5, 7), b, "maxplus").reshape(2, 3, 5, 4))
    grads = jax.vmap(jax.grad(lambda x, y: tropical.matmul(x, y).sum()), in_axes=(0, None))(jnp.asarray(a[0]), jnp.asarray(b))
    for i in range(3):
        _, k = reference.matmul_argmax(a[0, i], b, "maxplus")
        expected, _ = reference.matmul_backward(np.ones((5, 4)), k, a[0, i], b, "maxplus")
        np.testing.assert_array_equal(np.asarray(grads[i]), expected)


def test_a_jitted_training_step() -> None:
    """A tropical layer's weights learn by SGD, each step one jitted function."""
    x, target = jnp.asarray(distinct((6, 5), np.float32, 12)), jnp.asarray(distinct((6, 3), np.float32, 13))

    @jax.jit
    def step(w: Any) -> tuple[Any, Any]:
        loss, grad = jax.value_and_grad(lambda w: ((tropical.matmul(x, w) - target) ** 2).mean())(w)
        return w - 0.05 * grad, loss

    w = jnp.asarray(distinct((5, 3), np.float32, 14))
    losses = []
    for _ in range(5):
        w, loss = step(w)
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(losses[0], np.mean((reference.matmul(np.asarray(x), np.asarray(distinct((5, 3), np.float32, 14)), "maxplus") - np.asarray(target)) ** 2), rtol=1e-5)


def test_other_semirings_and_dtypes_run_without_a_gradient() -> None:
    a, b = np.random.default_rng(15).random((5, 6)) > 0.5, np.random.default_rng(16).random((6, 4)) > 0.5
    np.testing.assert_array_equal(np.asarray(tropical.matmul(jnp.asarray(a), jnp.asarray(b), "andor")), reference.matmul(a, b, "andor"))
    ai, bi = distinct((5, 6), np.int32, 17).astype(np.int32), distinct((6, 4), np.int32, 18).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(jax.jit(tropical.matmul)(jnp.asarray(ai), jnp.asarray(bi))), reference.matmul(ai, bi, "maxplus"))
    pairs_a = np.stack([distinct((5, 6), np.float32, 19), np.ones((5, 6), np.float32)], axis=-1)
    pairs_b = np.stack([distinct((6, 4), np.float32, 20), np.ones((6, 4), np.float32)], axis=-1)
    counted = tropical.matmul(jnp.asarray(pairs_a), jnp.asarray(pairs_b), "counting")
    np.testing.assert_array_equal(np.asarray(counted), reference.matmul(pairs_a, pairs_b, "counting"))
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul_backward: semiring: 'andor' has no gradient"):
        tropical.matmul_backward(jnp.zeros((5, 4)), jnp.zeros((5, 4), jnp.int32), jnp.asarray(a), jnp.asarray(b), "andor")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda a, b: tropical.matmul(a, b, out=a), ArgumentError, r"^tropical\.matmul: out: not taken with JAX arrays \(JAX arrays are immutable"),
        (lambda a, b: tropical.matmul(a, b, stream=0), ArgumentError, r"^tropical\.matmul: stream: not taken with JAX arrays \(under JAX the kernels run on XLA's own stream\)$"),
        (lambda a, b: tropical.matmul(a, a), ArgumentError, r"^tropical\.matmul: b: shape \(5, 7\) gives K=5, but a gave K=7$"),
        (lambda a, b: tropical.matmul(a, b.astype(jnp.float64)), ArgumentError, r"^tropical\.matmul: b: dtype f64 does not match a's f32$"),
        (lambda a, b: tropical.matmul(a[0], b), ArgumentError, r"^tropical\.matmul: a: expected a 2-D or 3-D array \(\[batch\], M, K\), got shape \(7,\)$"),
        (lambda a, b: tropical.matmul(a, b, "maxmin"), ArgumentError, r"^tropical\.matmul: semiring: unknown 'maxmin'"),
        (lambda a, b: tropical.matmul(a, [[1.0]]), ArgumentTypeError, r"^tropical\.matmul: b: expected a JAX or NumPy array beside JAX arrays, got list$"),
    ],
)
def test_mistakes_are_one_line_naming_the_argument(call: Any, error: type, message: str) -> None:
    """Raised while tracing, so under jit too; there jax.jit appends its own note on
    filtered frames below the line."""
    import re

    a, b = jnp.asarray(distinct((5, 7), np.float32, 21)), jnp.asarray(distinct((7, 3), np.float32, 22))
    with pytest.raises(error) as eager:
        call(a, b)
    assert re.match(message, str(eager.value)) and "\n" not in str(eager.value)
    with pytest.raises(error) as jitted:
        jax.jit(call)(a, b)
    assert re.match(message, str(jitted.value).splitlines()[0])


def test_a_cuda_lowering_holds_xlas_buffer_callback() -> None:
    """Checked without a GPU: lowered for the cuda platform, the product is XLA's
    GPU buffer callback, which hands the callback XLA's stream."""
    a, b = jnp.zeros((5, 7), jnp.float32), jnp.zeros((7, 3), jnp.float32)
    text = jax.jit(tropical.matmul).trace(a, b).lower(lowering_platforms=("cuda",)).as_text()
    assert "stablehlo.custom_call @xla_buffer_python_gpu_callback" in text
    assert "(tensor<5x7xf32>, tensor<7x3xf32>) -> tensor<5x3xf32>" in text
    grad_text = jax.jit(jax.grad(lambda x, y: tropical.matmul(x, y).sum())).trace(a, b).lower(lowering_platforms=("cuda",)).as_text()
    assert grad_text.count("xla_buffer_python_gpu_callback") == 2  # argmax forward, then the backward kernels


def test_importing_aotc_imports_no_jax() -> None:
    code = "import sys, aotc, aotc.tropical, aotc.kernels; print('jax' in sys.modules, 'jaxlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_an_error_inside_the_callback_reaches_an_eager_caller_as_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the ordinary call path raises inside XLA's callback (here: no image
    for the device, as on a GPU the wheel was not built for) is raised again
    as itself by an eager call, forward and backward alike."""
    line = "gemm_maxplus_f32: no kernel image for sm_70 (the wheel holds SASS 75, 80; PTX 120)"

    def no_image(*args: Any, **kwargs: Any) -> None:
        raise NoKernelImageError(line)

    a, b = jnp.ones((3, 4), jnp.float32), jnp.ones((4, 5), jnp.float32)
    c, k = tropical.matmul_argmax(a, b)
    # What loads a kernel, inside each callback's launch (new shapes: no call plan skips it).
    monkeypatch.setattr(tropical._library(), "kernel", no_image)  # noqa: SLF001
    a, b, c, k = jnp.ones((2, 4), jnp.float32), jnp.ones((4, 6), jnp.float32), jnp.ones((2, 6), jnp.float32), jnp.zeros((2, 6), jnp.int32)
    for call in (lambda: tropical.matmul(a, b), lambda: tropical.matmul_argmax(a, b), lambda: tropical.matmul_backward(jnp.ones_like(c), k, a, b)):
        with pytest.raises(NoKernelImageError) as info:
            call()
        assert str(info.value) == line
