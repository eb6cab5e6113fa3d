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
from aotc.kernels._gradients import gradients, no_gradient, saved_names
from aotc.kernels._torch_decision import fake_decision
from aotc.kernels._torch_registry import op_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotc.kernels._binding import Layout

__all__ = ["register_autograd"]


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
        outs = op(*arguments, **axes)
        return dict(zip(layout.outs, outs if isinstance(outs, (tuple, list)) else (outs,)))

    @staticmethod
    def shape(array: Any) -> tuple[int, ...]:
        return tuple(array.shape)

    @staticmethod
    def dtype(array: Any) -> str:
        return dtype_name(array.dtype)

    @staticmethod
    def zeros_like(array: Any) -> Any:
        return torch.zeros_like(array)

    @staticmethod
    def zeros(shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        return like.new_zeros(shape, dtype=torch_dtype(dtype))

    @staticmethod
    def sum_to(array: Any, shape: tuple[int, ...]) -> Any:
        return array.sum_to_size(shape)


def _empty_like_result(layout: Layout, values: dict[str, Any], name: str, axes: dict[str, Any]) -> Any:
    decision = fake_decision(layout, values, dict(axes), {})
    return values[layout.given[0]].new_empty(decision.out_shapes[name], dtype=torch_dtype(decision.out_dtypes[name]))


def register_autograd(layout: Layout, namespace: str, library: Any) -> None:
    """Register ``layout``'s op's autograd formula (see the module docstring)."""
    positional, given = layout.positional, layout.given
    bindings = layout.family.bindings

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any, keyword_only_inputs: Any = None) -> None:
        values = dict(zip(positional, inputs))
        axes = {axis: value for axis, value in (keyword_only_inputs or {}).items() if value is not None}
        kernel = layout.choose({name: dtype_name(values[name].dtype) for name in given}, axes, {name: tuple(values[name].shape) for name in given})
        ctx.kernel = kernel.name
        if kernel.backward is None:
            return  # refused by backward(), if it is ever asked
        outs = dict(zip(layout.outs, output if isinstance(output, (tuple, list)) else (output,)))
        arrays = {p.name: outs[p.arg] if p.role == "out" else values[p.arg] for p in kernel.signature or () if not p.scalar}
        ctx.arguments = {p.name: values[p.arg] for p in kernel.signature or () if p.scalar and not p.dim}
        ctx.results = tuple(p.name for p in kernel.signature or () if not p.scalar and p.role == "out")
        ctx.inputs = {p.name: (tuple(values[p.arg].shape), dtype_name(values[p.arg].dtype)) for p in kernel.signature or () if not p.scalar and p.role == "in"}
        ctx.input_names = {p.arg: p.name for p in kernel.signature or () if not p.scalar and p.role == "in"}
        ctx.saved = () if kernel.backward.through else saved_names(kernel)
        ctx.save_for_backward(*(values[name] for name in given) if kernel.backward.through else (arrays[name] for name in ctx.saved))

    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        kernel = bindings.kernel(ctx.kernel)
        if kernel.backward is None:
            raise no_gradient(layout, kernel)
        by_result = dict(zip(ctx.results, grads))
        if kernel.backward.through:
            kernel, saved = _run_through(bindings, kernel, dict(zip(given, ctx.saved_tensors)), ctx.arguments)
        else:
            saved = dict(zip(ctx.saved, ctx.saved_tensors))
        found = gradients(bindings, kernel, saved, by_result, ctx.arguments, ctx.inputs, _Torch)
        return tuple(
            found.get(ctx.input_names[name]) if name in ctx.input_names and ctx.needs_input_grad[i] else None for i, name in enumerate(positional)
        )

    torch.library.register_autograd(f"{namespace}::{layout.name}", backward, setup_context=setup_context, lib=library)


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
