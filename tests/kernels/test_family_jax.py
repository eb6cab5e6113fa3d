"""aotc/kernels/_jax.py: a declared family's generated binding takes JAX arrays,
eagerly and under jit and vmap, on the emulator, against the example's NumPy
references; inout arrays come back new, and mistakes are one line."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from aotc.errors import ArgumentError, ArgumentTypeError, KernelFaultError
from conftest import first_fault
from declared_support import axpy, declared_library, reference, rowops, write_project  # noqa: F401 - fixtures

jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True, scope="module")
def x64() -> Any:
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 5)])  # softmax's batch is optional
def test_softmax_eager_and_jitted(rowops: Any, dtype: Any, shape: tuple[int, ...]) -> None:  # noqa: F811
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    expected = reference.softmax(x)
    for run in (lambda f: f, jax.jit):
        y = run(rowops.softmax)(jnp.asarray(x))
        assert isinstance(y, jax.Array) and y.dtype == dtype and y.shape == shape
        np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_scan_and_vmap(rowops: Any) -> None:  # noqa: F811
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    mapped = jax.jit(jax.vmap(rowops.scan))(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(mapped), np.stack([reference.scan(x[i]) for i in range(2)]))


def test_an_inout_array_comes_back_new(axpy: Any) -> None:  # noqa: F811
    x, y = jnp.ones((2, 3)), jnp.full((2, 3), 2.0)
    out = axpy.axpy(x, y, 0.5, threads=64)
    np.testing.assert_array_equal(np.asarray(out), np.full((2, 3), 2.5))
    np.testing.assert_array_equal(np.asarray(y), np.full((2, 3), 2.0))  # JAX's arrays are immutable
    jitted = jax.jit(lambda a, b: axpy.axpy(a, b, 0.25, threads=128))(x, y)
    np.testing.assert_array_equal(np.asarray(jitted), np.full((2, 3), 2.25))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda ops, x: ops.softmax(x, y=x), ArgumentError, r"^softmax: y: not taken with JAX arrays \(JAX arrays are immutable; the result is returned\)$"),
        (lambda ops, x: ops.softmax(x, stream=0), ArgumentError, r"^softmax: stream: not taken with JAX arrays"),
        (lambda ops, x: ops.softmax(x[0]), ArgumentError, r"^softmax: x: expected a 2-D or 3-D array"),
        (lambda ops, x: ops.softmax(x.astype(jnp.int32)), ArgumentError, r"^softmax: x: dtype i32, but its kernels take f32 or f64 there$"),
        (lambda ops, x: ops.softmax(x.astype(jnp.complex64)), ArgumentError, r"^softmax: x: dtype complex64, but its kernels take f32 or f64 there$"),
    ],
)
def test_mistakes_are_one_line_while_tracing(rowops: Any, call: Any, error: type, message: str) -> None:  # noqa: F811
    x = jnp.ones((3, 5), jnp.float32)
    with pytest.raises(error) as eager:
        call(rowops, x)
    assert re.match(message, str(eager.value)) and "\n" not in str(eager.value)
    with pytest.raises(error) as jitted:
        jax.jit(lambda t: call(rowops, t))(x)
    assert re.match(message, str(jitted.value).splitlines()[0])


def test_a_traced_scalar_is_refused(axpy: Any) -> None:  # noqa: F811
    x = jnp.ones((2, 3))
    with pytest.raises(ArgumentTypeError) as info:
        jax.jit(lambda a, alpha: axpy.axpy(a, a, alpha, threads=64))(x, 0.5)
    assert str(info.value).splitlines()[0] == "axpy: alpha: a traced value; a family's scalar arguments are Python numbers (under jax.jit, mark alpha static)"


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 5)])
def test_grad_through_the_backward_pairing(rowops: Any, shape: tuple[int, ...]) -> None:  # noqa: F811
    """softmax declares softmax_backward as its backward: jax.grad runs it."""
    x = np.random.default_rng(2).standard_normal(shape)
    weights = np.random.default_rng(3).standard_normal(shape)
    grad = jax.jit(jax.grad(lambda t: (rowops.softmax(t) * weights).sum()))(jnp.asarray(x))
    y = reference.softmax(x)
    expected = y * (weights - (weights * y).sum(-1, keepdims=True))  # softmax's vector-Jacobian product
    np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-10, atol=1e-12)
    from jax.test_util import check_grads

    check_grads(rowops.softmax, (jnp.asarray(x),), order=1, modes=("rev",), eps=1e-6)


def test_a_scalar_that_is_not_a_number_is_refused(axpy: Any) -> None:  # noqa: F811
    x = jnp.ones((2, 3))
    with pytest.raises(ArgumentTypeError, match=r"^axpy: alpha: expected a number, got list$"):
        axpy.axpy(x, x, [0.5], threads=64)
    with pytest.raises(ArgumentTypeError, match=r"^axpy: alpha: expected a number, got a JAX array of shape \(1,\)$"):
        axpy.axpy(x, x, jnp.ones(1), threads=64)


def test_a_concrete_0d_jax_array_is_its_number(axpy: Any) -> None:  # noqa: F811
    """Outside jit, jnp.float32(0.5) stands for 0.5, as a 0-d NumPy array does on the NumPy route."""
    x, y = jnp.arange(6.0).reshape(2, 3), jnp.ones((2, 3))
    expected = np.asarray(axpy.axpy(x, y, 0.5, threads=64))
    np.testing.assert_array_equal(np.asarray(axpy.axpy(x, y, jnp.float32(0.5), threads=64)), expected)
    np.testing.assert_array_equal(np.asarray(axpy.axpy(x, y, jnp.asarray(0.5), threads=jnp.int32(64))), expected)
    # A 0-d NumPy array too, which is unhashable: the callback's key once raised Python's TypeError.
    np.testing.assert_array_equal(np.asarray(axpy.axpy(x, y, np.array(0.5), threads=np.array(64))), expected)
    with pytest.raises(ArgumentTypeError, match=r"^axpy: alpha: expected a number, got an array of shape \(1,\)$"):
        axpy.axpy(x, y, np.array([0.5]), threads=64)


@pytest.fixture
def softmax_launches(rowops: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:  # noqa: F811
    """The shapes of x at each call of softmax's callback (on the CPU, the direct route's, Layout.run)."""
    family = rowops.layout("softmax")
    run = family.run
    shapes: list[tuple[int, ...]] = []

    def counting(values: dict[str, Any], *args: Any) -> Any:
        if isinstance(values["x"], np.ndarray):  # the callback's view of XLA's buffer, not the caller's JAX array
            shapes.append(values["x"].shape)
        return run(values, *args)

    monkeypatch.setattr(family, "run", counting)
    return shapes


@pytest.mark.parametrize("in_axes", [0, 1])
def test_vmap_maps_onto_the_optional_batch(rowops: Any, softmax_launches: list[Any], in_axes: int) -> None:  # noqa: F811
    """softmax's x may leave out its leading batch: vmap's axis becomes it, one launch for every example."""
    x = np.random.default_rng(6).standard_normal((4, 3, 7))
    mapped = jax.jit(jax.vmap(rowops.softmax, in_axes=in_axes))(jnp.asarray(x))
    examples = np.moveaxis(x, in_axes, 0)
    np.testing.assert_allclose(np.asarray(mapped), reference.softmax(examples), rtol=1e-12)
    assert softmax_launches == [examples.shape]


def test_vmap_of_a_batched_call_and_nested_vmaps(rowops: Any, softmax_launches: list[Any]) -> None:  # noqa: F811
    """A call that has its batch already, or a second vmap over the first, maps example by example."""
    x = np.random.default_rng(7).standard_normal((2, 4, 3, 7))
    nested = jax.jit(jax.vmap(jax.vmap(rowops.softmax)))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(nested), reference.softmax(x.reshape(8, 3, 7)).reshape(x.shape), rtol=1e-12)
    assert softmax_launches == [(4, 3, 7), (4, 3, 7)]  # the inner vmap onto the batch, the outer one sequential
    softmax_launches.clear()
    batched = jax.jit(jax.vmap(rowops.softmax))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(batched), np.asarray(nested), rtol=1e-12)
    assert softmax_launches == [(4, 3, 7), (4, 3, 7)]


def test_vmap_of_grad_and_an_unmapped_array(rowops: Any, softmax_launches: list[Any]) -> None:  # noqa: F811
    x = np.random.default_rng(8).standard_normal((5, 3, 7))
    weights = np.random.default_rng(9).standard_normal((3, 7))
    grads = jax.jit(jax.vmap(jax.grad(lambda t: (rowops.softmax(t) * weights).sum())))(jnp.asarray(x))
    y = reference.softmax(x)
    np.testing.assert_allclose(np.asarray(grads), y * (weights - (weights * y).sum(-1, keepdims=True)), rtol=1e-10, atol=1e-12)
    assert softmax_launches == [(5, 3, 7)]
    # softmax_backward's y not mapped: broadcast along the mapped axis, still one launch.
    grad_y = np.random.default_rng(10).standard_normal((5, 3, 7))
    out = jax.vmap(rowops.softmax_backward, in_axes=(0, None))(jnp.asarray(grad_y), jnp.asarray(y[0]))
    np.testing.assert_allclose(np.asarray(out), y[0] * (grad_y - (grad_y * y[0]).sum(-1, keepdims=True)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("differentiate", "message"),
    [
        (lambda ops, x: jax.grad(lambda t: ops.softmax_backward(t, x).sum())(x), "softmax_backward: its manifest declares no backward for it, so it cannot be differentiated"),
        (lambda ops, x: jax.jit(jax.grad(lambda t: ops.scan(t).sum()))(x), "scan: its manifest declares no backward for it, so it cannot be differentiated"),
        (lambda ops, x: jax.jvp(lambda t: ops.softmax_backward(x, t), (x,), (x,)), "softmax_backward: its manifest declares no backward for it"),
    ],
)
def test_a_family_without_a_gradient_says_so_in_one_line(rowops: Any, differentiate: Any, message: str) -> None:  # noqa: F811
    with pytest.raises(ArgumentError) as info:
        differentiate(rowops, jnp.ones((3, 5)))
    assert str(info.value).splitlines()[0].startswith(message)


def test_an_undifferentiated_family_inside_a_gradient_is_fine(rowops: Any) -> None:  # noqa: F811
    """Only a tangent that is not zero asks for the derivative: a constant's call is taken."""
    x = jnp.asarray(np.random.default_rng(11).standard_normal((3, 5)))
    y = rowops.softmax(x)
    grad = jax.grad(lambda w: (w * rowops.softmax_backward(x, y)).sum())(jnp.ones((3, 5)))
    np.testing.assert_allclose(np.asarray(grad), np.asarray(rowops.softmax_backward(x, y)))


def test_a_repeat_cpu_call_takes_a_numpy_call_plan(axpy: Any) -> None:  # noqa: F811
    """On the CPU XLA's buffers arrive as NumPy views: the generated entry's
    plan takes the repeat calls, inout aliasing and axis keyword included."""
    family = axpy.layout("axpy")
    family.plans.clear()
    step = jax.jit(lambda a, b: axpy.axpy(a, b, 2.0, threads=128))
    x, y = jnp.full((3, 4), 0.5), jnp.ones((3, 4))
    y = step(x, y)  # decides everything, and leaves a plan
    [(key, plan)] = family.plans.tagged("numpy").items()
    taken: list[Any] = []
    family.plans.plans[key] = lambda *args: taken.append(args) or plan(*args)
    for _ in range(2):
        y = step(x, y)
    np.testing.assert_array_equal(np.asarray(y), np.full((3, 4), 4.0))  # 1 + 3 * (2 * 0.5)
    assert len(taken) == 2


# A kernel that reads a neighbour's slot of shared memory, which no thread of a
# partial last block wrote: the emulator's init check names the read.
UNWRITTEN = {
    "manifest.yaml": """\
library: unwritten
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  peek:
    template: peek.cu.j2
    axes: {dtype: [f32]}
    name: "peek_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [n]}
      y: {array: dtype, role: out, shape: [n]}
      n: i32
    launch:
      grid: ["cdiv(n, 64)"]
      block: [64]
""",
    "templates/peek.cu.j2": """\
extern "C" __global__ void {{ kernel_name }}({{ params }})
{
    __shared__ float seen[64];
    int i = blockIdx.x * 64 + threadIdx.x;
    if (i < n) seen[threadIdx.x] = x[i];
    __syncthreads();
    if (i < n) y[i] = seen[(threadIdx.x + 1) % 64];
}
""",
}


def test_a_kernel_fault_reaches_the_caller_as_one_line(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator's checks see a fault inside XLA's callback: an eager call
    raises it as itself; under jit, XLA's error ends with the same line."""
    import aotc
    import aotc.kernels

    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "init")
    ops = aotc.kernels.over(aotc.load(declared_library(tmp_path, write_project(tmp_path / "project", UNWRITTEN)), backend="emulator"))
    np.testing.assert_array_equal(np.asarray(ops.peek(jnp.arange(64.0, dtype=jnp.float32))), np.roll(np.arange(64.0), -1))  # whole blocks: clean
    line = (
        "peek_f32: init check: uninitialized read: block (0, 0, 0) thread (39, 0, 0) reads shared "
        "peek_f32::seen + 160 bytes (of 256), which no thread of the block has written (peek_f32:7)"
    )
    with pytest.raises(KernelFaultError) as info:
        ops.peek(jnp.ones(40, jnp.float32))
    assert first_fault(info.value) == line
    with pytest.raises(jax.errors.JaxRuntimeError) as wrapped:
        jax.jit(ops.peek)(jnp.ones(40, jnp.float32)).block_until_ready()
    assert first_fault(str(wrapped.value).rstrip()).endswith(f"KernelFaultError: {line}")
