"""Eager calls that autograd records, past the dispatcher: one ``autograd.Function``.

Where autograd records an eager call (a training step), going through the
op costs its autograd layer (the Python formula ``register_autograd``
installs) and the dispatcher, twice, forward and backward. Nothing else
sees an eager call on plain tensors (``aotc.arrays.torch_direct``), so such
a call runs ``Recorded``: its forward runs the kernel the call is
differentiated by (itself, or the one it is differentiated through) with
the op's own kernel and call plans, and its backward runs the gradient
kernels the same way (``_gradients``). A backward that is itself recorded
(``create_graph=True``) goes through the gradient kernels' ops instead, so
that a second derivative meets their formulas (and their refusals).

It computes what the ops' registered formula computes (``_torch_autograd``);
``torch.compile`` and every case the dispatcher must see keep the ops.
"""

from __future__ import annotations

from typing import Any

import torch

from aotc.arrays.kinds.torch import dtype_name
from aotc.kernels._gradients import gradients, saved_names
from aotc.kernels._torch_autograd import _Torch
from aotc.kernels._torch_registry import op_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotc.kernels._layout import Layout

__all__ = ["call_recorded"]


class _Direct(_Torch):
    """``_gradients`` on tensors past the dispatcher: each layout's op kernel,
    unless the backward is itself recorded (then its op, as ``_Torch``)."""

    @staticmethod
    def call(layout: Layout, values: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
        if torch.is_grad_enabled():
            return _Torch.call(layout, values, axes)
        op_of(layout)  # registered, and its kernels made
        arguments = [values[name] for name in layout.positional]
        given = {name: values[name] for name in layout.outs if values.get(name) is not None}
        if given:
            missing = [name for name in layout.outs if name not in given]
            if missing:
                return _Torch.call(layout, values, axes)
            layout.torch_out_kernel(*arguments, **given, **axes)
            return given
        outs = layout.torch_kernel(*arguments, **axes)
        return dict(zip(layout.outs, outs if isinstance(outs, tuple) else (outs,)))


class Recorded(torch.autograd.Function):
    """A recorded call: ``apply(layout, route, route_axes, scalars, *tensors)`` with
    ``route`` the layout whose kernel runs forward (``layout``'s own, or the one
    its kernel is differentiated through) and ``tensors`` ``layout``'s given arrays."""

    @staticmethod
    def forward(ctx: Any, layout: Layout, route: Layout, route_axes: dict[str, Any], scalars: dict[str, Any], *tensors: Any) -> Any:
        values = dict(zip(layout.given, tensors))
        values.update(scalars)
        outs = _Direct.call(route, values, route_axes)
        kernel = route.choose({n: dtype_name(values[n].dtype) for n in route.given}, route_axes, {n: tuple(values[n].shape) for n in route.given})
        arrays = {p.name: outs[p.arg] if p.role == "out" else values[p.arg] for p in kernel.signature or () if not p.scalar}
        ctx.layout, ctx.kernel = layout, kernel
        ctx.arguments = {p.name: values[p.arg] for p in kernel.signature or () if p.scalar and not p.dim}
        ctx.manifest = {p.arg: p.name for p in kernel.signature or () if not p.scalar}
        ctx.inputs = {ctx.manifest[name]: (tuple(t.shape), dtype_name(t.dtype)) for name, t in zip(layout.given, tensors)}
        ctx.saved = saved_names(kernel)
        ctx.save_for_backward(*(arrays[name] for name in ctx.saved))
        results = tuple(outs[name] for name in layout.outs)
        ctx.mark_non_differentiable(*(r for r in results if not r.is_floating_point()))
        return results[0] if len(results) == 1 else results

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        layout, kernel = ctx.layout, ctx.kernel
        by_result = {ctx.manifest[name]: grad for name, grad in zip(layout.outs, grads)}
        saved = dict(zip(ctx.saved, ctx.saved_tensors))
        found = gradients(layout.family.bindings, kernel, saved, by_result, ctx.arguments, ctx.inputs, _Direct)
        return (None, None, None, None, *(found.get(ctx.manifest[name]) for name in layout.given))


def call_recorded(layout: Layout, values: dict[str, Any], axes: dict[str, Any]) -> Any:
    """``layout``'s call on ``values`` as ``Recorded``: its out arrays (a tuple),
    or None where its kernel declares no gradient (the op then records the call,
    and its formula refuses the gradient if one is asked)."""
    kernel = layout.choose({n: dtype_name(values[n].dtype) for n in layout.given}, axes, {n: tuple(values[n].shape) for n in layout.given})
    if kernel.backward is None:
        return None
    route, route_axes = layout, axes
    if kernel.backward.through:
        bindings = layout.family.bindings
        target = bindings.kernel(kernel.backward.through)
        route = bindings.layout_of(target.name)
        route_axes = {axis: value for axis, value in (target.axes or {}).items() if axis in route.open_axes}
    scalars = {name: values[name] for name in layout.arguments}
    outs = Recorded.apply(layout, route, route_axes, scalars, *(values[name] for name in layout.given))
    return outs if isinstance(outs, tuple) else (outs,)
