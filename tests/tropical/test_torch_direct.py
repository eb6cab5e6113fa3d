"""Which eager tropical tensor calls skip the dispatcher (``aotc.arrays.torch_direct``).

A call that skips it never shows a ``tropical::`` op to PyTorch's profiler; a
call the dispatcher must see (a mode, a transform, a subclass, autocast,
inference mode, tracing) still runs the op, and the profiler records it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aotc import reference, tropical
from aotc.errors import ArgumentError
from aotc.arrays.kinds.torch import TORCH
from aotc.kernels._keys import plan_key

torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")


def _ops_run(call: Any) -> tuple[list[str], Any]:
    """The ``tropical::`` ops the dispatcher ran during ``call()``, and its result."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        result = call()
    return sorted({e.name for e in profile.events() if e.name.startswith("tropical::")}), result


def _operands() -> tuple[Any, Any]:
    generator = torch.Generator().manual_seed(3)
    return torch.randn(5, 4, generator=generator), torch.randn(4, 6, generator=generator)


def _expected(a: Any, b: Any) -> Any:
    return reference.matmul(a.detach().numpy(), b.detach().numpy(), "maxplus")


def _planned(a: Any, b: Any) -> None:
    """A plain call first, which leaves a call plan for these shapes, which the
    forward binding's entry looks up: a call the dispatcher must see has to
    reach the op past it."""
    tropical.matmul(a, b)
    assert tropical._api()._forward.plans.tagged("torch")  # noqa: SLF001


def test_a_plain_eager_call_skips_the_dispatcher() -> None:
    a, b = _operands()
    for _ in range(2):  # the first call leaves a plan, the second takes it
        ran, c = _ops_run(lambda: tropical.matmul(a, b))
        assert ran == []
        np.testing.assert_array_equal(c.numpy(), _expected(a, b))
    ran, (c, k) = _ops_run(lambda: tropical.matmul_argmax(a, b))
    assert ran == [] and k.dtype == torch.int32
    np.testing.assert_array_equal(c.numpy(), _expected(a, b))


def test_out_skips_the_dispatcher_and_still_bumps_its_version() -> None:
    a, b = _operands()
    out = torch.empty(5, 6)
    for _ in range(2):  # the first call leaves a plan, the second takes it
        out.zero_()
        before = out._version  # noqa: SLF001 - autograd's version counter
        ran, result = _ops_run(lambda: tropical.matmul(a, b, out=out))
        assert ran == [] and result is out
        assert out._version > before  # noqa: SLF001 - autograd sees that out changed, as with the _out op
        np.testing.assert_array_equal(out.numpy(), _expected(a, b))


def test_a_training_step_runs_forward_and_backward_without_the_ops() -> None:
    a, b = _operands()
    a.requires_grad_()

    def step() -> Any:
        tropical.matmul(a, b).sum().backward()
        return a.grad

    ran, grad = _ops_run(step)
    assert ran == []  # the autograd.Function records (aotc.kernels._torch_recorded); inside it, nothing does
    assert grad.sum().item() == 5 * 6  # each output element sends 1 to its one winner


def test_repeat_backward_passes_with_gradients_of_other_strides_are_each_right() -> None:
    # A recorded call keeps its gradient kernels' plans under the tensors'
    # strides (aotc.kernels._torch_recorded._Direct): a gradient laid out another
    # way (transposed, broadcast, a slice) must find its own, or none.
    a, b = _operands()
    _, k = reference.matmul_argmax(a.numpy(), b.numpy(), "maxplus")
    base = torch.randn(12, 10, generator=torch.Generator().manual_seed(5))
    gradients = [base[:5, :6].contiguous(), base[:6, :5].t(), torch.tensor(2.0).expand(5, 6), base[::2, :][:5, 2:8], base[:5, :6].contiguous()]
    for grad in gradients * 2:
        ga, gb = a.clone().requires_grad_(), b.clone().requires_grad_()
        tropical.matmul(ga, gb).backward(grad)
        want_a, want_b = reference.matmul_backward(grad.numpy(), k, a.numpy(), b.numpy(), "maxplus")
        np.testing.assert_allclose(ga.grad.numpy(), want_a, rtol=1e-6)
        np.testing.assert_allclose(gb.grad.numpy(), want_b, rtol=1e-6)


def test_inference_mode_runs_the_op() -> None:
    a, b = _operands()
    _planned(a, b)
    with torch.inference_mode():
        ran, c = _ops_run(lambda: tropical.matmul(a, b))
    assert ran == ["tropical::gemm_forward"]
    np.testing.assert_array_equal(c.numpy(), _expected(a, b))


def test_autocast_runs_the_op() -> None:
    a, b = _operands()
    _planned(a, b)
    with torch.autocast("cpu"):
        ran, _ = _ops_run(lambda: tropical.matmul(a, b))
    assert ran == ["tropical::gemm_forward"]


def test_a_subclass_runs_the_op() -> None:
    class Tagged(torch.Tensor):
        pass

    a, b = _operands()
    _planned(a, b)
    ran, c = _ops_run(lambda: tropical.matmul(a.as_subclass(Tagged), b))
    assert ran == ["tropical::gemm_forward"]
    np.testing.assert_array_equal(torch.Tensor(c).numpy(), _expected(a, b))


def test_a_torch_function_mode_runs_the_op() -> None:
    class Passing(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    a, b = _operands()
    _planned(a, b)
    with Passing():
        ran, _ = _ops_run(lambda: tropical.matmul(a, b))
    assert ran == ["tropical::gemm_forward"]


def test_fake_tensor_mode_runs_the_ops_fake_implementation() -> None:
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    a, b = _operands()
    _planned(a, b)
    with FakeTensorMode() as mode:
        c = tropical.matmul(mode.from_tensor(a), mode.from_tensor(b))
    assert isinstance(c, FakeTensor) and tuple(c.shape) == (5, 6)


def test_vmap_runs_the_op() -> None:
    a, b = _operands()
    _planned(a, b)
    batch = torch.stack([a, a + 1])
    # PyTorch runs the op once per batch entry (its fallback, which says so on stderr).
    ran, c = _ops_run(lambda: torch.func.vmap(lambda x: tropical.matmul(x, b))(batch))
    assert ran == ["tropical::gemm_forward"]
    np.testing.assert_array_equal(c[1].numpy(), _expected(a + 1, b))


def test_torch_compile_traces_the_op_whole() -> None:
    a, b = _operands()
    _planned(a, b)
    compiled = torch.compile(lambda x, y: tropical.matmul(x, y), fullgraph=True, backend="eager")
    ran, c = _ops_run(lambda: compiled(a, b))
    assert ran == ["tropical::gemm_forward"]
    np.testing.assert_array_equal(c.numpy(), _expected(a, b))


@pytest.mark.filterwarnings("ignore:`torch.jit.trace` is deprecated:DeprecationWarning")
def test_torch_jit_trace_records_the_op() -> None:
    a, b = _operands()
    _planned(a, b)
    traced = torch.jit.trace(lambda x, y: tropical.matmul(x, y), (a, b), check_trace=False)
    assert "tropical::gemm_forward" in str(traced.graph)  # recorded, not run past the tracer
    np.testing.assert_array_equal(traced(a + 1, b).numpy(), _expected(a + 1, b))


def test_a_plan_declines_a_functorch_wrapper_that_left_its_transform() -> None:
    """The entry in front of matmul does not ask for functorch wrappers: inside a
    transform, transforms() sends the call to the op; a wrapper that escaped
    its transform has no storage, and the plan, reading its data pointer,
    returns None, so the full path decides as it does without a plan."""
    a, b = _operands()
    _planned(a, b)
    leaked: list[Any] = []
    torch.func.vmap(lambda x: leaked.append(x) or x)(torch.stack([a, a]))
    layout = tropical._api()._forward  # noqa: SLF001
    plan = layout.plans.plans[plan_key(layout, TORCH, "torch", {"a": a, "b": b}, {"semiring": "maxplus"}, None)]
    assert plan(leaked[0], b, None) is None  # (a, b, out): out not given
    np.testing.assert_array_equal(plan(a, b, None)[0].numpy(), _expected(a, b))


@pytest.mark.parametrize("route", ["eager", "stream", "op"])
def test_a_negative_view_is_read_as_what_it_shows(route: str) -> None:
    """A negative view (``_neg_view()``, ``is_neg()``) shares its memory with the
    tensor it negates: read raw it would be that tensor. Past the dispatcher,
    after a plan for its shape and strides, on a stream named, and through the op."""
    a, b = _operands()
    _planned(a, b)
    negated = a._neg_view()  # noqa: SLF001 - how PyTorch makes one
    assert negated.is_neg() and negated.data_ptr() == a.data_ptr() and negated.stride() == a.stride()
    call = {
        "eager": lambda: tropical.matmul(negated, b),
        "stream": lambda: tropical.matmul(negated, b, stream=0),
        "op": lambda: torch.ops.tropical.gemm_forward(negated, b, semiring="maxplus"),
    }[route]
    for _ in range(2):  # the full path, then any plan it left
        np.testing.assert_array_equal(call().numpy(), _expected(-a, b))


def test_a_negative_view_is_not_written_in_place() -> None:
    a, b = _operands()
    out = torch.empty(5, 6)._neg_view()  # noqa: SLF001
    with pytest.raises(ArgumentError) as info:
        tropical.matmul(a, b, out=out)
    assert str(info.value) == "tropical.matmul: out: a negative view (is_neg()), whose memory holds what it shows negated; pass out.resolve_neg() or a plain tensor"
