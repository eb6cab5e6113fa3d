"""aotc/kernels/_gradients.py: a gradient made of several kernels (rowops'
scale_shift: one kernel for x, one for g and h), run from NumPy
(``Layout.gradients``), PyTorch's autograd and JAX's vjp; and PyTorch's rules
where a call cannot be differentiated."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest

from aotc.errors import ArgumentError
from declared_support import partial, reference, rowops  # noqa: F401 - fixtures

RNG = np.random.default_rng(43)


def _inputs(rows: int = 5, cols: int = 37) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return RNG.normal(size=(rows, cols)), RNG.normal(size=cols), RNG.normal(size=cols)


def test_numpy_runs_both_gradient_kernels(rowops: Any) -> None:  # noqa: F811
    x, g, h = _inputs()
    grad_y = RNG.normal(size=x.shape)
    grads = rowops.layout("scale_shift").gradients({"x": x, "g": g, "h": h}, {"y": grad_y}, {})
    want = reference.scale_shift_backward(grad_y, x, g)
    assert sorted(grads) == ["g", "h", "x"]
    for name, expected in zip("xgh", want):
        np.testing.assert_allclose(grads[name], expected, rtol=1e-12, atol=1e-12)


def test_the_gradient_kernels_are_named_by_the_index(rowops: Any) -> None:  # noqa: F811
    kernel = rowops.kernel("scale_shift_f64")
    assert kernel.backward.kernels == (("scale_shift_grad_x_f64", ("g",)), ("scale_shift_grad_params_f64", ("x",)))
    assert kernel.backward.through == ""


def test_a_kernel_without_a_gradient_says_so_in_one_line(rowops: Any) -> None:  # noqa: F811
    with pytest.raises(ArgumentError, match=r"^scan: its manifest declares no backward for it, so it cannot be differentiated$"):
        rowops.layout("scan").gradients({"x": np.ones((2, 3))}, {"y": np.ones((2, 3))}, {})


class TestTorch:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

    def test_gradcheck(self, rowops: Any) -> None:  # noqa: F811
        torch = self.torch
        x, g, h = (torch.tensor(a).requires_grad_() for a in _inputs(3, 7))
        assert torch.autograd.gradcheck(lambda *a: rowops.scale_shift(*a), (x, g, h), eps=1e-6, atol=1e-7)

    def test_opcheck_with_gradients(self, rowops: Any) -> None:  # noqa: F811
        torch = self.torch
        args = tuple(torch.tensor(a).requires_grad_() for a in _inputs(4, 9))
        checks = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
        assert torch.library.opcheck(rowops.torch_ops().scale_shift.default, args, test_utils=checks) == dict.fromkeys(checks, "SUCCESS")

    def test_a_compiled_training_step_runs_both_gradient_kernels(self, rowops: Any) -> None:  # noqa: F811
        torch = self.torch
        x, g, h = (torch.tensor(a) for a in _inputs(6, 11))

        def loss(x: Any, g: Any, h: Any) -> Any:
            return (rowops.scale_shift(x, g, h) ** 2).sum()

        eager = [t.clone().requires_grad_() for t in (x, g, h)]
        loss(*eager).backward()
        traced = [t.clone().requires_grad_() for t in (x, g, h)]
        torch.compile(loss, fullgraph=True, backend="aot_eager")(*traced).backward()
        for a, b in zip(eager, traced):
            torch.testing.assert_close(a.grad, b.grad)

    # torch.func's vmap runs a layout's op once an example (PyTorch says so, "a
    # performance drop"), and jacrev vmaps the gradient kernels' ops so.
    @pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")
    def test_torch_func_grad_vjp_jacrev_and_vmap_agree_with_backward(self, rowops: Any) -> None:  # noqa: F811
        """The op's formula is an autograd.Function in the setup_context style,
        which the bindings apply where a transform records: each transform's
        gradient is the one loss.backward() gives."""
        torch = self.torch
        func = torch.func
        x, g, h = (torch.tensor(a) for a in _inputs(3, 6))
        weights = torch.linspace(-1.0, 2.0, 18, dtype=torch.float64).reshape(3, 6)

        def loss(x: Any, g: Any, h: Any) -> Any:
            return (rowops.scale_shift(x, g, h) * weights).sum()

        leaves = [t.clone().requires_grad_() for t in (x, g, h)]
        loss(*leaves).backward()
        want = [t.grad for t in leaves]
        for got in (func.grad(loss, argnums=(0, 1, 2))(x, g, h), func.vjp(lambda *a: rowops.scale_shift(*a), x, g, h)[1](weights)):
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b)
        jacobian = func.jacrev(lambda t: rowops.scale_shift(t, g, h))(x)  # (3, 6) by (3, 6)
        torch.testing.assert_close((jacobian * weights[..., None, None]).sum((0, 1)), want[0])
        batched = func.vmap(lambda t: rowops.scale_shift(t, g, h))(torch.stack([x, x + 1]))
        torch.testing.assert_close(batched[1], rowops.scale_shift(x + 1, g, h))
        per_example = func.vmap(func.grad(lambda t: loss(t, g, h)))(torch.stack([x, 2 * x]))
        torch.testing.assert_close(per_example[0], want[0])

    def test_a_second_derivative_is_refused_in_one_line(self, rowops: Any) -> None:  # noqa: F811
        torch = self.torch
        x, g, h = (torch.tensor(a).requires_grad_() for a in _inputs(2, 5))
        (grad_x,) = torch.autograd.grad(rowops.scale_shift(x, g, h).sum(), (x,), create_graph=True)
        with pytest.raises(ArgumentError, match=r"^scale_shift_grad_x: its manifest declares no backward for it, so it cannot be differentiated$"):
            torch.autograd.grad(grad_x.sum(), (g,))

    def test_a_family_without_a_gradient_refuses_to_be_differentiated(self, rowops: Any) -> None:  # noqa: F811
        """No silent gradient through a kernel with none: (scan(t) + t).sum() would
        give t.grad all ones, where 5, 4, 3, 2 is right along a row. The call itself
        runs: a gradient nobody takes (a metric in a training step) is no error."""
        torch = self.torch
        t = torch.ones(2, 4, requires_grad=True)
        total = (rowops.scan(t) + t).sum()
        torch.testing.assert_close(total, torch.tensor(28.0))
        with pytest.raises(ArgumentError, match=r"^scan: its manifest declares no backward for it, so it cannot be differentiated$"):
            total.backward()
        assert t.grad is None

    def test_out_refuses_autograd_as_pytorch_out_variants_do(self, rowops: Any) -> None:  # noqa: F811
        torch = self.torch
        x = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
        with pytest.raises(ArgumentError, match=r"^softmax: y: not supported while autograd records; call under torch.no_grad\(\) or drop y=$"):
            rowops.softmax(x, y=torch.empty(2, 5, dtype=torch.float64))
        with torch.no_grad():
            y = torch.empty(2, 5, dtype=torch.float64)
            assert rowops.softmax(x, y=y) is y and not y.requires_grad

    def test_tensors_the_kernels_cannot_take_are_refused_naming_the_argument(self, rowops: Any) -> None:  # noqa: F811
        torch = self.torch
        x = torch.randn(2, 5, dtype=torch.float64)
        with pytest.raises(ArgumentError, match=r"^softmax: x: a sparse_coo tensor; the kernels read dense \(strided\) tensors, pass x.to_dense\(\)$"):
            rowops.softmax(x.to_sparse())
        with warnings.catch_warnings():  # that nested tensors of the strided layout are a prototype
            warnings.simplefilter("ignore", UserWarning)
            nested = torch.nested.nested_tensor([x, x[:1]])  # strided, but of no one shape: PyTorch's sizes() raised "Internal error"
        for _ in range(2):  # the first call, then a repeat one past a plan for plain tensors
            rowops.softmax(x)
            with pytest.raises(ArgumentError, match=r"^softmax: x: a nested tensor; the kernels read tensors of one shape, pass x.to_padded_tensor\(0\) or its tensors one by one$"):
                rowops.softmax(nested)
        with pytest.raises(ArgumentError, match=r"^softmax: y: on meta, but x is on cpu$"):
            rowops.softmax(x, y=torch.empty(2, 5, dtype=torch.float64, device="meta"))
        with pytest.raises(ArgumentError, match=r"^scale_shift: g: on meta(:0)?, but x is on cpu$"):
            rowops.scale_shift(x, torch.ones(5, dtype=torch.float64, device="meta"), torch.ones(5, dtype=torch.float64))


class TestJax:
    jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")

    def test_grad_runs_both_gradient_kernels(self, rowops: Any) -> None:  # noqa: F811
        jax = self.jax
        x, g, h = _inputs(4, 13)
        grad_y = RNG.normal(size=x.shape)
        with jax.enable_x64(True):
            loss = jax.jit(jax.grad(lambda x, g, h: (rowops.scale_shift(x, g, h) * grad_y).sum(), argnums=(0, 1, 2)))
            got = loss(*(jax.numpy.asarray(a) for a in (x, g, h)))
        for a, b in zip(got, reference.scale_shift_backward(grad_y, x, g)):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12, atol=1e-12)

    def test_a_second_derivative_is_refused_in_one_line(self, rowops: Any) -> None:  # noqa: F811
        jax = self.jax
        with jax.enable_x64(True):
            x, g, h = (jax.numpy.asarray(a) for a in _inputs(2, 5))
            first = jax.grad(lambda g: rowops.scale_shift(x, g, h).sum())
            with pytest.raises(ArgumentError) as info:
                jax.grad(lambda g: first(g).sum())(g)
        message = r"scale_shift: a second derivative: its gradient kernels declare no backward in the manifest, so it cannot be differentiated twice"
        assert re.fullmatch(message, str(info.value).splitlines()[0])  # JAX appends a note on its own frames

    def test_an_extent_under_jit_is_static(self, rowops: Any) -> None:  # noqa: F811
        jax = self.jax
        x = jax.numpy.asarray(RNG.normal(size=(3, 40)))
        got = jax.jit(rowops.histogram, static_argnums=(1, 2, 3))(x, 6, -1.0, 1.0)
        np.testing.assert_array_equal(np.asarray(got), reference.histogram(np.asarray(x), 6, -1.0, 1.0))
        with pytest.raises(TypeError, match=r"^histogram: bins: a traced value; a family's scalar arguments are Python numbers \(under jax.jit, mark bins static\)\n"):
            jax.jit(rowops.histogram, static_argnums=(2, 3))(x, 6, -1.0, 1.0)


def test_a_gradient_the_backward_does_not_compute_is_refused_in_one_line(partial: Any) -> None:  # noqa: F811
    """mulw's backward computes grad_x only. A gradient asked of w is refused when
    the backward runs, on the recorded route, the op's and torch.func's, where
    PyTorch would leave w.grad None without a word; x's alone still works."""
    torch = pytest.importorskip("torch")
    x, w = torch.from_numpy(RNG.normal(size=5)), torch.from_numpy(RNG.normal(size=5))
    message = r"^mulw: w: has no gradient: the backward its manifest declares computes the gradients of x only$"
    for call in (partial.mulw, partial.torch_ops().mulw):
        xg = x.clone().requires_grad_(True)
        call(xg, w).sum().backward()
        torch.testing.assert_close(xg.grad, w)
        for wanted in ((x, w.clone().requires_grad_(True)), (x.clone().requires_grad_(True), w.clone().requires_grad_(True))):
            with pytest.raises(ArgumentError, match=message):
                call(*wanted).sum().backward()
    torch.testing.assert_close(torch.func.grad(lambda a: partial.mulw(a, w).sum())(x), w)
    with pytest.raises(ArgumentError, match=message):
        torch.func.grad(lambda b: partial.mulw(x, b).sum())(w)


def test_jax_refuses_a_gradient_the_backward_does_not_compute(partial: Any) -> None:  # noqa: F811
    """jax.grad of w, whose gradient mulw's backward does not compute, is refused
    in one line while traced (it was zeros); x's gradient, and w's passed along
    without one asked, still work, eagerly and under jax.jit."""
    jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
    with jax.enable_x64(True):  # mulw is f64; set for this test only, as later tests expect f32 defaults
        x, w = jax.numpy.asarray(RNG.normal(size=5)), jax.numpy.asarray(RNG.normal(size=5))
        for wrap in (lambda f: f, jax.jit):
            np.testing.assert_allclose(wrap(jax.grad(lambda a, b: partial.mulw(a, b).sum()))(x, w), w)
            with pytest.raises(ArgumentError) as info:  # its match would read the note JAX adds on its traceback too
                wrap(jax.grad(lambda a, b: partial.mulw(a, b).sum(), argnums=1))(x, w)
            assert str(info.value) == "mulw: w: has no gradient: the backward its manifest declares computes the gradients of x only"
