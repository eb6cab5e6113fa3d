"""A gradient kernel takes the sizes the forward call bound, by name, as it
takes its arguments (aotc/kernels/_gradients.py): the sizes test package's
row sum, whose gradient kernel names cols (its out array's alone) and saves
nothing, differentiated from NumPy, PyTorch's autograd, torch.func,
torch.compile and JAX, against the reference gradient; and no route keeps
its input alive for it, where the same sum that saves x does."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest

from aotc.build._backward_fields import Gradient
from aotc.build.manifest import load_manifest
from declared_support import SIZES, row_sums  # noqa: F401 - fixtures

RNG = np.random.default_rng(47)
SHAPES = [(3, 5), (2, 3, 7)]  # the batch is optional


def reference_grad(grad_y: np.ndarray, cols: int) -> np.ndarray:
    """d(sum_c x[..., c])/dx: each row's gradient, along its cols."""
    return np.repeat(np.asarray(grad_y)[..., None], cols, axis=-1)


def test_the_gradient_kernel_saves_nothing() -> None:
    kernels = {k.name: k for k in load_manifest(SIZES / "manifest.yaml").kernels}
    assert kernels["rowsum_f32"].backward == Gradient((("rowsum_grad_f32", ()),))
    assert kernels["rowsum_saving_f64"].backward == Gradient((("rowsum_saving_grad_f64", ("x",)),))
    cols = next(p for p in kernels["rowsum_grad_f32"].signature.params if p.name == "cols")
    assert (cols.dim, cols.extent) == (False, True)  # the bindings' caller would pass it: here, the forward call


@pytest.mark.parametrize("shape", SHAPES)
def test_numpy_gradients(row_sums: Any, shape: tuple[int, ...]) -> None:  # noqa: F811
    x = RNG.normal(size=shape)
    grad_y = RNG.normal(size=shape[:-1])
    np.testing.assert_allclose(row_sums.rowsum(x), x.sum(-1), rtol=1e-12)
    grads = row_sums.layout("rowsum").gradients({"x": x}, {"y": grad_y}, {})
    assert sorted(grads) == ["x"]
    np.testing.assert_array_equal(grads["x"], reference_grad(grad_y, shape[-1]))


class TestTorch:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

    @pytest.mark.parametrize("shape", SHAPES)
    @pytest.mark.parametrize("through", ["binding", "op"])
    def test_backward(self, row_sums: Any, shape: tuple[int, ...], through: str) -> None:  # noqa: F811
        torch = self.torch
        call = row_sums.rowsum if through == "binding" else row_sums.torch_ops().rowsum
        weights = torch.from_numpy(RNG.normal(size=shape[:-1]))
        for dtype in (torch.float64, torch.float32):
            x = torch.from_numpy(RNG.normal(size=shape)).to(dtype).requires_grad_()
            for _ in range(2):  # a first call, then a repeat one (a recorded call's plans)
                x.grad = None
                (call(x) * weights.to(dtype)).sum().backward()
                torch.testing.assert_close(x.grad, torch.from_numpy(reference_grad(weights.numpy(), shape[-1])).to(dtype))

    @pytest.mark.parametrize(("family", "kept"), [("rowsum", False), ("rowsum_saving", True)])
    @pytest.mark.parametrize("through", ["binding", "op"])
    def test_the_input_is_not_kept_alive(self, row_sums: Any, family: str, kept: bool, through: str) -> None:  # noqa: F811
        """rowsum's backward needs x's cols, not x: once the caller drops x, it is
        gone before the backward runs. rowsum_saving, which saves x for its cols, keeps it."""
        torch = self.torch
        call = getattr(row_sums, family) if through == "binding" else getattr(row_sums.torch_ops(), family)
        leaf = torch.from_numpy(RNG.normal(size=(4, 6))).requires_grad_()
        x = leaf * 2.0  # not a leaf: autograd's graph holds a leaf it accumulates into, not this
        y = call(x)
        alive = weakref.ref(x)
        del x
        gc.collect()
        assert (alive() is not None) is kept
        y.sum().backward()
        torch.testing.assert_close(leaf.grad, torch.full((4, 6), 2.0, dtype=torch.float64))

    def test_torch_func_grad_and_vjp(self, row_sums: Any) -> None:  # noqa: F811
        torch = self.torch
        x = torch.from_numpy(RNG.normal(size=(2, 3, 5)))
        weights = torch.from_numpy(RNG.normal(size=(2, 3)))
        want = torch.from_numpy(reference_grad(weights.numpy(), 5))
        torch.testing.assert_close(torch.func.grad(lambda t: (row_sums.rowsum(t) * weights).sum())(x), want)
        torch.testing.assert_close(torch.func.vjp(row_sums.rowsum, x)[1](weights)[0], want)

    @pytest.mark.parametrize("dynamic", [False, True])
    def test_a_compiled_training_step(self, row_sums: Any, dynamic: bool) -> None:  # noqa: F811
        """Compiled, the forward's sizes may be symbolic: the gradient op takes them so."""
        torch = self.torch
        weights = torch.from_numpy(RNG.normal(size=(3, 4)))
        step = torch.compile(lambda t: (row_sums.rowsum(t) * weights).sum(), fullgraph=True, backend="aot_eager", dynamic=dynamic)
        x = torch.from_numpy(RNG.normal(size=(3, 4, 9))).requires_grad_()
        step(x).backward()
        torch.testing.assert_close(x.grad, torch.from_numpy(reference_grad(weights.numpy(), 9)))

    def test_opcheck_with_gradients(self, row_sums: Any) -> None:  # noqa: F811
        torch = self.torch
        x = torch.from_numpy(RNG.normal(size=(3, 8))).requires_grad_()
        checks = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
        assert torch.library.opcheck(row_sums.torch_ops().rowsum.default, (x,), test_utils=checks) == dict.fromkeys(checks, "SUCCESS")


class TestJax:
    jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")

    @pytest.mark.parametrize("shape", SHAPES)
    def test_grad_eager_and_jitted(self, row_sums: Any, shape: tuple[int, ...]) -> None:  # noqa: F811
        jax = self.jax
        weights = RNG.normal(size=shape[:-1]).astype(np.float32)
        x = jax.numpy.asarray(RNG.normal(size=shape).astype(np.float32))
        for wrap in (lambda f: f, jax.jit):
            grad = wrap(jax.grad(lambda t: (row_sums.rowsum(t) * weights).sum()))(x)
            np.testing.assert_array_equal(np.asarray(grad), reference_grad(weights, shape[-1]))

    def test_vmap_of_grad(self, row_sums: Any) -> None:  # noqa: F811
        jax = self.jax
        weights = RNG.normal(size=3).astype(np.float32)
        x = jax.numpy.asarray(RNG.normal(size=(2, 3, 6)).astype(np.float32))
        grads = jax.jit(jax.vmap(jax.grad(lambda t: (row_sums.rowsum(t) * weights).sum())))(x)
        np.testing.assert_array_equal(np.asarray(grads), np.broadcast_to(reference_grad(weights, 6), (2, 3, 6)))

    @pytest.mark.parametrize(("family", "kept"), [("rowsum", False), ("rowsum_saving", True)])
    def test_an_eager_vjp_keeps_no_input_alive(self, row_sums: Any, family: str, kept: bool) -> None:  # noqa: F811
        """jax.vjp's function holds the residuals: rowsum's are nothing, rowsum_saving's x."""
        jax = self.jax
        with jax.enable_x64(True):
            x = jax.numpy.asarray(RNG.normal(size=(4, 6)))
            _, backward = jax.vjp(getattr(row_sums, family), x)
            alive = weakref.ref(x)
            del x
            gc.collect()
            assert (alive() is not None) is kept
            (grad,) = backward(jax.numpy.ones(4))
        np.testing.assert_array_equal(np.asarray(grad), np.ones((4, 6)))
