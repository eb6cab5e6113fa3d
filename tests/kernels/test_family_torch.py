"""Declared families as PyTorch custom ops (aotc.kernels._torch_ops): opcheck
passes, torch.compile(fullgraph=True) traces them, tensors reach them through
the public binding."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
import pytest

from aotc.errors import ArgumentError, ArgumentTypeError
from declared_support import axpy, reference, rowops  # noqa: F401 - fixtures

torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

OPCHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def test_the_schema_comes_from_the_declaration(rowops: Any, axpy: Any) -> None:  # noqa: F811 - the fixture imported above
    from aotc.kernels._torch_ops import schema

    assert schema(rowops.layout("softmax")) == "softmax(Tensor x, *, str? dtype=None) -> Tensor"
    assert schema(rowops.layout("softmax"), out=True) == "softmax.out(Tensor x, *, Tensor(a!) y, str? dtype=None) -> ()"
    assert schema(axpy.layout("axpy")) == "axpy(Tensor x, Tensor(a!) y, float alpha, *, str? dtype=None, int? threads=None) -> ()"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_tensors_go_through_the_op(rowops: Any, dtype: Any) -> None:  # noqa: F811 - the fixture imported above
    x = torch.randn(5, 300, dtype=dtype) * 50
    y = rowops.softmax(x)
    assert isinstance(y, torch.Tensor) and y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), reference.softmax(x.numpy()), rtol=2e-6 if dtype == torch.float32 else 1e-13, atol=1e-30)
    ops = rowops.torch_ops()
    assert torch.equal(ops.softmax(x), y)
    assert torch.equal(ops.scan(torch.arange(10).reshape(2, 5)), torch.arange(10).reshape(2, 5).cumsum(1))


@pytest.mark.parametrize("family", ["softmax", "scan"])
def test_opcheck(rowops: Any, family: str) -> None:  # noqa: F811 - the fixture imported above
    op = getattr(rowops.torch_ops(), family).default
    shapes = ((3, 17), (1, 300)) + (((2, 3, 17),) if family == "softmax" else ())  # softmax's batch is optional
    for shape in shapes:
        results = torch.library.opcheck(op, (torch.randn(shape, dtype=torch.float64),), test_utils=OPCHECKS)
        assert results == dict.fromkeys(OPCHECKS, "SUCCESS")


def test_opcheck_inout(axpy: Any) -> None:  # noqa: F811 - the fixture imported above
    op = axpy.torch_ops().axpy.default
    x, y = torch.randn(4, 33), torch.randn(4, 33)
    results = torch.library.opcheck(op, (x, y, 0.5), {"threads": 64}, test_utils=OPCHECKS)
    assert results == dict.fromkeys(OPCHECKS, "SUCCESS")
    expected = y + 0.5 * x
    assert axpy.axpy(x, y, 0.5, threads=64) is y
    torch.testing.assert_close(y, expected)


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_traces_the_binding_with_no_graph_break(rowops: Any, dynamic: bool) -> None:  # noqa: F811 - the fixture imported above
    def step(x: Any) -> Any:
        return rowops.scan(rowops.softmax(x * 2)).sum(dim=1)

    compiled = torch.compile(step, fullgraph=True, dynamic=dynamic, backend="aot_eager")
    for rows in (3, 5):
        x = torch.randn(rows, 40, dtype=torch.float64)
        torch.testing.assert_close(compiled(x), step(x))


def test_a_declared_backward_gives_softmax_its_gradient(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    """softmax's manifest entry names softmax_backward as its backward: gradcheck
    holds through the public binding, on the emulator's kernels."""
    x = (torch.randn(3, 40, dtype=torch.float64) * 3).requires_grad_(True)
    assert torch.autograd.gradcheck(rowops.softmax, (x,), eps=1e-6, atol=1e-7)
    y = rowops.softmax(x)
    weights = torch.randn(3, 40, dtype=torch.float64)
    (grad,) = torch.autograd.grad((y * weights).sum(), x)
    expected = y * (weights - (weights * y).sum(dim=1, keepdim=True))  # softmax's own formula
    torch.testing.assert_close(grad, expected.detach())


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_batch_dimension_traces_and_differentiates(rowops: Any, dynamic: bool) -> None:  # noqa: F811 - the fixture imported above
    """softmax's optional batch: fake shapes keep the input's rank, compiled and eager agree, and so do gradients."""
    compiled = torch.compile(lambda x: rowops.softmax(x).square().sum(), fullgraph=True, dynamic=dynamic, backend="aot_eager")
    for shape in ((2, 3, 20), (3, 20), (4, 3, 20)):
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        (grad,) = torch.autograd.grad(compiled(x), x)
        expected_x = x.detach().clone().requires_grad_(True)
        (expected,) = torch.autograd.grad(torch.softmax(expected_x, dim=-1).square().sum(), expected_x)
        torch.testing.assert_close(grad, expected)
    x = (torch.randn(2, 3, 30, dtype=torch.float64) * 3).requires_grad_(True)
    assert torch.autograd.gradcheck(rowops.softmax, (x,), eps=1e-6, atol=1e-7)


def _ops_run(call: Any, namespace: str = "rowops") -> tuple[list[str], Any]:
    """The ``<namespace>::`` ops the dispatcher ran during ``call()``, and its result."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        result = call()
    return sorted({e.name for e in profile.events() if e.name.startswith(f"{namespace}::")}), result


def test_a_plain_eager_call_skips_the_dispatcher_recorded_or_not(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    """Where no mode or transform would see the op, the generated entry runs the
    op's kernel itself (aotc.arrays.torch_direct); where autograd records, inside
    an autograd.Function with the same formula (aotc.kernels._torch_recorded)."""
    x = torch.randn(3, 40, dtype=torch.float64)
    rowops.softmax(x)  # the first tensor call registers the ops and opens the entry's tensor branch
    for _ in range(2):  # the second takes the kernel's plan
        ran, y = _ops_run(lambda: rowops.softmax(x))
        assert ran == []
        torch.testing.assert_close(y, torch.softmax(x, dim=-1))
    x.requires_grad_(True)
    ran, y = _ops_run(lambda: rowops.softmax(x))
    assert ran == [] and type(y.grad_fn).__name__ == "RecordedBackward"
    ran, _ = _ops_run(lambda: y.sum().backward())
    assert ran == [] and x.grad is not None  # softmax_backward's kernel, past the dispatcher too
    with torch.no_grad():
        assert _ops_run(lambda: rowops.softmax(x))[0] == []
    with torch.inference_mode():
        assert _ops_run(lambda: rowops.softmax(torch.ones(2, 3, dtype=torch.float64)))[0] == ["rowops::softmax"]
    from torch.utils._python_dispatch import TorchDispatchMode

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    with Watch():
        assert _ops_run(lambda: rowops.softmax(x.detach()))[0] == ["rowops::softmax"]


def test_an_axis_of_one_value_named_with_tensors(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    """The op has no keyword for an axis of one value: named with that value it is
    dropped, with another refused in the line a NumPy call gives."""
    x = torch.randn(2, 30, dtype=torch.float64)
    torch.testing.assert_close(rowops.softmax(x, threads=256), torch.softmax(x, dim=-1))
    with pytest.raises(ArgumentError, match=r"^softmax: threads: 128 is not one of its values \(256\)$"):
        rowops.softmax(x, threads=128)
    with pytest.raises(ArgumentError, match=r"^softmax: threads: 128 is not one of its values \(256\)$"):
        rowops.softmax(x.numpy(), threads=128)


def test_an_inout_tensor_call_takes_its_plan_and_still_names_an_overlap(axpy: Any) -> None:  # noqa: F811 - the fixture imported above
    family = axpy.layout("axpy")
    x, y = torch.randn(4, 33, dtype=torch.float64), torch.randn(4, 33, dtype=torch.float64)
    axpy.axpy(x, y, 1.0, threads=64)  # registers the ops; the op's kernel leaves a plan
    family.plans.clear()
    for alpha in (0.5, 2.0):  # the first leaves the plan, the second takes it
        expected, before = y + alpha * x, y._version  # noqa: SLF001 - autograd's version counter
        ran, result = _ops_run(lambda alpha=alpha: axpy.axpy(x, y, alpha, threads=64), "axpylib")
        assert ran == [] and result is y  # the entry ran the op's kernel: nothing records
        torch.testing.assert_close(y, expected)
        assert y._version > before  # noqa: SLF001 - as for PyTorch's own in-place ops
    assert len(family.plans.tagged("torch")) == 1
    with mock.patch("aotc.kernels._torch_ops.launch", side_effect=AssertionError("the full path ran")):
        axpy.axpy(x, y, 1.0, threads=64)  # the plan alone
    with torch.inference_mode():  # a mode the dispatcher must see: the op runs
        assert _ops_run(lambda: axpy.axpy(x.clone(), y.clone(), 1.0, threads=64), "axpylib")[0] == ["axpylib::axpy"]
    base = torch.zeros(5, 33, dtype=torch.float64)
    with pytest.raises(ArgumentError, match="y: shares memory with x"):
        axpy.axpy(base[:4], base[1:], 1.0, threads=64)  # the same key as the plan's: it sees the overlap
    with pytest.raises(ArgumentError, match="y: shares memory with x"):
        axpy.axpy(y, y, 1.0, threads=64)
    with pytest.raises(ArgumentTypeError, match=r"alpha: expected a number \(f64\), got 'two'"):
        axpy.axpy(x, y, "two", threads=64)  # the plan cannot pack it: the full path names it


def test_an_inout_inference_tensor_is_written_only_inside_inference_mode(axpy: Any) -> None:  # noqa: F811 - the fixture imported above
    """PyTorch refuses an in-place update of an inference tensor outside
    torch.inference_mode(); before, a call wrote y there, first and from the plan
    a normal y of the same facts had left, through the binding and the op alike."""
    x = torch.ones(3, 20, dtype=torch.float64)
    with torch.inference_mode():
        y = torch.zeros(3, 20, dtype=torch.float64)
    message = r"y: an inference tensor cannot be written outside torch\.inference_mode\(\) \(PyTorch's rule\)$"
    for _ in range(2):  # a first call, then one after a normal y left the plan of these facts
        with pytest.raises(ArgumentError, match=rf"^axpy: {message}"):
            axpy.axpy(x, y, 1.0, threads=64)
        with pytest.raises(ArgumentError, match=rf"^axpy: {message}"):
            axpy.torch_ops().axpy(x, y, 1.0, threads=64)
        assert not y.any()
        axpy.axpy(x, torch.zeros(3, 20, dtype=torch.float64), 1.0, threads=64)
    with torch.inference_mode():
        for expected in (1.0, 2.0):
            assert axpy.axpy(x, y, 1.0, threads=64) is y
            torch.testing.assert_close(y, torch.full((3, 20), expected, dtype=torch.float64))


def test_out_arrays_go_through_the_out_overload(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    """A tensor call given its out arrays is the op's .out overload: opcheck holds,
    torch.compile traces it, and eagerly its kernel runs directly, with a plan."""
    ops = rowops.torch_ops()
    x = torch.randn(3, 40, dtype=torch.float64)
    results = torch.library.opcheck(ops.softmax.out, (x,), {"y": torch.empty_like(x)}, test_utils=OPCHECKS)
    assert results == dict.fromkeys(OPCHECKS, "SUCCESS")

    def step(x: Any) -> Any:
        y = torch.empty_like(x)
        rowops.softmax(x * 2, y=y)
        return y.sum(dim=-1)

    torch.testing.assert_close(torch.compile(step, fullgraph=True, backend="aot_eager")(x), torch.ones(3, dtype=torch.float64))
    y = torch.empty_like(x)
    for _ in range(2):  # the first leaves the plan, the second takes it
        before = y._version  # noqa: SLF001 - autograd's version counter
        ran, result = _ops_run(lambda: rowops.softmax(x, y=y))
        assert ran == [] and result is y and y._version > before  # noqa: SLF001
        torch.testing.assert_close(y, torch.softmax(x, dim=-1))
    with mock.patch("aotc.kernels._torch_ops.launch", side_effect=AssertionError("the full path ran")):
        rowops.softmax(x, y=y)
    with pytest.raises(ArgumentError, match="y: shares memory with x"):
        rowops.softmax(y, y=y)  # the same key as the plan's: it sees the overlap
    with pytest.raises(ArgumentError, match=r"y: expected shape \(3, 40\) and dtype f64, got \(3, 41\) and f64"):
        rowops.softmax(x, y=torch.empty(3, 41, dtype=torch.float64))


def test_opcheck_with_gradients(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    op = rowops.torch_ops().softmax.default
    x = torch.randn(4, 33, dtype=torch.float64, requires_grad=True)
    results = torch.library.opcheck(op, (x,), test_utils=OPCHECKS)
    assert results == dict.fromkeys(OPCHECKS, "SUCCESS")


def test_a_compiled_training_step_runs_the_backward_kernel(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    def loss(x: Any, target: Any) -> Any:
        return ((rowops.softmax(x) - target) ** 2).sum()

    x = torch.randn(5, 20, dtype=torch.float64, requires_grad=True)
    target = torch.softmax(torch.randn(5, 20, dtype=torch.float64), dim=1)
    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    (got,) = torch.autograd.grad(compiled(x, target), x)
    (want,) = torch.autograd.grad(((torch.softmax(x, dim=1) - target) ** 2).sum(), x)
    torch.testing.assert_close(got, want)


def test_a_stream_or_out_array_runs_directly(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    """A call that names its stream, or writes into given out arrays, runs the
    kernel itself: the op returns new tensors on PyTorch's current stream."""
    x = torch.randn(3, 50, dtype=torch.float64)
    expected = rowops.softmax(x)
    torch.testing.assert_close(rowops.softmax(x, stream=0), expected)
    out = torch.empty_like(x)
    assert rowops.softmax(x, y=out) is out
    torch.testing.assert_close(out, expected)


def test_a_repeat_op_call_takes_its_tensor_plan(rowops: Any, full_path: list[str]) -> None:  # noqa: F811 - the fixture imported above
    family = rowops.layout("scan")
    family.plans.clear()
    x = torch.arange(24, dtype=torch.int64).reshape(4, 6)
    first = rowops.scan(x)
    assert len(family.plans.tagged("torch")) == 1
    again = rowops.scan(x * 2)  # the plan's call
    torch.testing.assert_close(again, first * 2)
    strided = torch.arange(48, dtype=torch.int64).reshape(4, 12)[:, ::2]
    for _ in range(2):  # copied by the full path, then by its plan, which copies each time
        torch.testing.assert_close(rowops.scan(strided), strided.cumsum(dim=1))
    assert len(family.plans.tagged("torch")) == 2
    assert full_path == ["scan", "scan"]


MIXED = {
    "manifest.yaml": """\
library: mixedlib
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  mixed:
    template: mixed.cu.j2
    axes: {dtype: [f64]}
    signature:
      x: {array: dtype, role: in, shape: [n]}
      total: {array: dtype, role: inout, shape: [n]}
      twice: {array: dtype, role: out, shape: [n]}
      n: i32
    launch: {grid: ["cdiv(n, 64)"], block: [64]}
""",
    "templates/mixed.cu.j2": """\
extern "C" __global__ void {{ kernel_name }}({{ params }})
{
    int i = blockIdx.x * 64 + threadIdx.x;
    if (i < n) { total[i] += x[i]; twice[i] = 2 * x[i]; }
}
""",
}


def test_a_family_with_inout_and_out_arrays_returns_both_in_declared_order(tmp_path: Any) -> None:
    import aotc
    import aotc.kernels
    from declared_support import declared_library, write_project

    lib = declared_library(tmp_path, write_project(tmp_path / "project", MIXED))
    mixed = aotc.kernels.over(aotc.load(lib, backend="emulator"))
    x, total = torch.arange(5, dtype=torch.float64), torch.ones(5, dtype=torch.float64)
    for _ in range(3):  # the op and its plan, then the entry's tensor branch, then its plan
        before = total.clone()
        got_total, twice = mixed.mixed(x, total)
        assert got_total is total
        torch.testing.assert_close(total, before + x)
        torch.testing.assert_close(twice, 2 * x)
    got_total, twice = mixed.mixed(x.numpy(), total.numpy().copy())
    np.testing.assert_array_equal(twice, 2 * x.numpy())
