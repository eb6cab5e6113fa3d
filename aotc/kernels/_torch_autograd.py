"""The autograd formula of a layout's op, from its kernels' ``backward:`` declarations.

One formula per op (``register_autograd``), which asks the kernel the call
chose how it is differentiated (``_gradients``):

- by gradient kernels: the forward keeps the arrays they save (inputs or
  results) and the scalar arguments; the backward runs each gradient kernel
  through its own layout's op (so ``torch.compile`` traces it, and a second
  derivative reaches that op's formula);
- through another kernel: the forward keeps its inputs; the backward runs
  that kernel forward again to have what its gradient kernels save (the
  bindings avoid this, calling that kernel's op in the first place where
  autograd records: ``_torch_route``);
- not at all: the formula refuses in one line when the gradient is taken
  (PyTorch would otherwise drop it with a warning); a call autograd records
  whose gradient nobody takes (a metric inside a training step) runs.
"""

from __future__ import annotations

from typing import Any

import torch

from aotc.arrays.kinds.torch import dtype_name, torch_dtype
from aotc.errors import ArgumentError
from aotc.kernels._gradients import gradients, no_gradient, refuse_uncomputed, saved_names
from aotc.kernels._torch_decision import fake_decision
from aotc.kernels._torch_registry import op_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotc.kernels._binding import Layout

__all__ = ["OpFunction", "apply", "register_autograd"]


class _Torch:
    """How ``_gradients`` runs on tensors: each layout through its op."""

    @staticmethod
    def call(layout: Layout, values: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
        op = op_of(layout)
        arguments = [values[name] for name in layout.positional]
        given = {name: values[name] for name in layout.outs if values.get(name) is not None}
        if given:
            missing = [name for name in layout.outs if name not in given]
            given.update((name, _empty_like_result(layout, values, name, axes)) for name in missing)
            op.out(*arguments, **given, **axes)
            return given
        outs = apply(layout, axes, arguments) if _transform_records(arguments) else op(*arguments, **axes)
        return dict(zip(layout.outs, outs if isinstance(outs, (tuple, list)) else (outs,)))


def _empty_like_result(layout: Layout, values: dict[str, Any], name: str, axes: dict[str, Any]) -> Any:
    decision = fake_decision(layout, values, dict(axes), {})
    return values[layout.given[0]].new_empty(decision.out_shapes[name], dtype=torch_dtype(decision.out_dtypes[name]))


class OpFunction(torch.autograd.Function):
    """The autograd of every layout's op: the ``Autograd`` kernel registered for
    it calls ``apply(formula, keywords, *arguments)`` where autograd records.
    In the ``setup_context`` style, so torch.func's transforms take it (grad,
    vjp, jacrev; vmap through ``generate_vmap_rule``): the old style that
    ``torch.library.register_autograd`` makes for a ``Library`` op is refused
    by them. Its forward runs the op below autograd (the kernel, its plans)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(formula: _Formula, keywords: dict[str, Any], *arguments: Any) -> Any:
        return formula.op(*arguments, **keywords)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        formula, keywords, *arguments = inputs
        ctx.formula = formula
        formula.setup(ctx, arguments, keywords, output)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        return (None, None, *ctx.formula.backward(ctx, grads))


class _Formula:
    """A layout's gradient formula, from the ``backward:`` of the kernel a call chose."""

    __slots__ = ("layout", "op")

    def __init__(self, layout: Layout, op: Any) -> None:
        self.layout, self.op = layout, op

    def setup(self, ctx: Any, inputs: list[Any], keywords: dict[str, Any], output: Any) -> None:
        layout = self.layout
        values = dict(zip(layout.positional, inputs))
        axes = {axis: value for axis, value in keywords.items() if value is not None and axis in layout.open_axes}
        kernel = layout.choose({name: dtype_name(values[name].dtype) for name in layout.given}, axes, {name: tuple(values[name].shape) for name in layout.given})
        ctx.kernel = kernel.name
        if kernel.backward is None:
            return  # refused by backward(), if it is ever asked
        outs = dict(zip(layout.outs, output if isinstance(output, (tuple, list)) else (output,)))
        arrays = {p.name: outs[p.arg] if p.role == "out" else values[p.arg] for p in kernel.signature or () if not p.scalar}
        ctx.arguments = {p.name: values[p.arg] for p in kernel.signature or () if p.scalar and not p.dim}
        ctx.results = tuple(p.name for p in kernel.signature or () if not p.scalar and p.role == "out")
        ctx.inputs = {p.name: (tuple(values[p.arg].shape), dtype_name(values[p.arg].dtype), True) for p in kernel.signature or () if not p.scalar and p.role == "in"}
        ctx.input_names = {p.arg: p.name for p in kernel.signature or () if not p.scalar and p.role == "in"}
        ctx.saved = () if kernel.backward.through else saved_names(kernel)
        ctx.save_for_backward(*(values[name] for name in layout.given) if kernel.backward.through else (arrays[name] for name in ctx.saved))
        if kernel.backward.through or any(out.dtype.is_floating_point is False for out in outs.values()):
            ctx.mark_non_differentiable(*(out for out in outs.values() if not out.dtype.is_floating_point))

    def backward(self, ctx: Any, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        layout = self.layout
        bindings = layout.family.bindings
        kernel = bindings.kernel(ctx.kernel)
        if kernel.backward is None:
            raise no_gradient(layout, kernel)
        by_result = dict(zip(ctx.results, grads))
        if kernel.backward.through:
            kernel, saved = _run_through(bindings, kernel, dict(zip(layout.given, ctx.saved_tensors)), ctx.arguments)
        else:
            saved = dict(zip(ctx.saved, ctx.saved_tensors))
        found = gradients(bindings, kernel, saved, by_result, ctx.arguments, ctx.inputs, _Torch)
        wanted = ctx.needs_input_grad[2:]  # after the formula and the keywords
        if not found.keys() >= ctx.inputs.keys():  # an in array without a gradient: refused if it was asked for
            refuse_uncomputed(layout, kernel, found, dict(zip(layout.positional, wanted)))
        return tuple(found.get(ctx.input_names[name]) if name in ctx.input_names and wanted[i] else None for i, name in enumerate(layout.positional))


def register_autograd(layout: Layout, namespace: str, library: Any) -> None:
    """Register ``layout``'s op's autograd kernel: ``OpFunction`` where autograd
    records (a tensor that requires grad, grad mode on), else the op below
    autograd. Under a torch.func transform the bindings apply the formula
    themselves (``apply``), before the dispatcher; the op called directly there
    reaches this kernel at the transform's level, where no Function can be
    applied, and is refused in one line."""
    op = getattr(getattr(torch.ops, namespace), layout.name).default
    formula = _formulas[layout] = _Formula(layout, op)
    any_requires_grad = torch._C._any_requires_grad  # noqa: SLF001 - what PyTorch's own autograd kernels ask
    transformed = torch._C._are_functorch_transforms_active  # noqa: SLF001

    def autograd(*arguments: Any, **keywords: Any) -> Any:
        if torch.is_grad_enabled() and any_requires_grad(*arguments):
            if transformed() and not torch.compiler.is_compiling():
                msg = f"torch.ops.{namespace}.{layout.name}: under a torch.func transform, call it through its binding (aotc.kernels.over(library).{layout.name}), which applies its autograd formula where the transform can see it"
                raise ArgumentError(msg)
            return OpFunction.apply(formula, keywords, *arguments)
        with torch._C._AutoDispatchBelowAutograd():  # noqa: SLF001 - the dispatcher's next kernel, as register_autograd's own
            return op(*arguments, **keywords)

    library.impl(layout.name, autograd, "Autograd")


_formulas: dict[Any, _Formula] = {}  # layout -> its formula, made with its op (register_autograd)


def _transform_records(arguments: list[Any]) -> bool:
    """Whether a torch.func transform records a call on ``arguments`` (never while traced)."""
    return (
        not torch.compiler.is_compiling() and torch._C._are_functorch_transforms_active()  # noqa: SLF001
        and torch.is_grad_enabled() and torch._C._any_requires_grad(*arguments)  # noqa: SLF001
    )


def apply(layout: Layout, keywords: dict[str, Any], arguments: list[Any]) -> Any:
    """``layout``'s op, recorded by its formula at Python's level: where a torch.func transform records it."""
    return OpFunction.apply(_formulas[layout], keywords, *arguments)


def _run_through(bindings: Any, kernel: Any, inputs: dict[str, Any], arguments: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The kernel ``kernel`` is differentiated through, run forward on its
    inputs (by binding name): that kernel, and its arrays by manifest name."""
    target = bindings.kernel(kernel.backward.through)
    other = bindings.layout_of(target.name)
    axes = {axis: value for axis, value in (target.axes or {}).items() if axis in other.open_axes}
    values = dict(inputs)
    values.update((p.arg, arguments[p.name]) for p in target.signature or () if p.scalar and not p.dim)
    outs = _Torch.call(other, values, axes)
    arrays = {p.name: outs[p.arg] if p.role == "out" else values[p.arg] for p in target.signature or () if not p.scalar}
    return target, arrays
