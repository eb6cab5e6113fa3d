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

from aotc.arrays.kinds.torch import TORCH, dtype_name
from aotc.dtypes import DTYPES
from aotc.kernels._gradients import gradients, refuse_uncomputed, saved_names
from aotc.kernels._keys import backward_key, plan_key
from aotc.kernels._torch_autograd import _Torch
from aotc.kernels._torch_registry import kernel_of, out_kernel_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotc.kernels._binding import Layout

__all__ = ["call_recorded"]


class _Direct(_Torch):
    """``_gradients`` on tensors past the dispatcher: each layout's plan or op
    kernel, unless the backward is itself recorded (then its op, as ``_Torch``).

    One per ``Recording``, whose backward calls are alike but for the
    gradients' strides: autograd hands a gradient at its result's shape,
    dtype and device (``validate_outputs``), and the arrays kept from the
    forward call are alike by the recording's key. So each gradient step's
    plan is kept in the recording's layout's store under the recording, the
    step's layout and axes (two kernels of one layout may differ only there)
    and the tensors' strides (``_keys.backward_key``), and a repeat backward
    finds it without the full key."""

    __slots__ = ("recording",)

    def __init__(self, recording: Recording) -> None:
        self.recording = recording

    def call(self, layout: Layout, values: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
        if torch.is_grad_enabled():
            return _Torch.call(layout, values, axes)
        outs = layout.outs
        given = [values.get(name) for name in outs]
        if any(out is None for out in given) and any(out is not None for out in given):
            return _Torch.call(layout, values, axes)  # some out arrays given, not all: the op makes the rest
        given = given if given and given[0] is not None else []
        tensors = (*[values[name] for name in layout.given], *given)
        store = self.recording.layout.plans
        key = backward_key(self.recording, layout, axes, tensors)
        plan = store.plans.get(key)
        if plan is None:  # as the op kernel would find it, then kept for this recording
            plan = layout.plans.get(plan_key(layout, TORCH, "torch", values, axes, None))
            if plan is not None:
                store.keep(key, plan)
        if plan is not None:
            found = plan(*tensors, *([None] * len(outs) if not given else ()), *[values[name] for name in layout.arguments])
            if found is not None:
                return dict(zip(layout.results, found))
        arguments = [values[name] for name in layout.positional]
        if given:
            out_kernel_of(layout)(*arguments, **dict(zip(outs, given)), **axes)
            return dict(zip(outs, given))
        results = kernel_of(layout)(*arguments, **axes)
        return dict(zip(outs, results if isinstance(results, tuple) else (results,)))


class Recording:
    """What a recorded call on tensors alike (one key: ``_keys.plan_key``, tagged "recorded")
    does every time, worked out at its first call: the kernel it is
    differentiated by, the layout that runs forward (``route``: the layout
    itself, or the one its kernel is differentiated through) and that
    layout's plan, which arrays the backward keeps, and the inputs' shapes
    and dtypes. ``apply`` records a call."""

    __slots__ = ("arguments", "framework", "inputs", "kernel", "layout", "manifest", "memo", "nondiff", "none", "plan", "results", "route", "route_axes", "route_given", "saved", "saves")

    def __init__(self, layout: Layout, route: Layout, route_axes: dict[str, Any], values: dict[str, Any]) -> None:
        self.layout, self.route, self.route_axes = layout, route, route_axes
        route_kernel = route.choose({n: dtype_name(values[n].dtype) for n in route.given}, route_axes, {n: tuple(values[n].shape) for n in route.given})
        self.kernel = route_kernel
        signature = route_kernel.signature or ()
        self.route_given = tuple(layout.given.index(name) for name in route.given)
        self.plan: Any = None  # the route's tensor plan, once its first call made one
        self.none = (None,) * len(route.outs)
        self.memo: dict[int | str, Any] = {}  # what the backward's steps do, once worked out (_gradients)
        self.framework = _Direct(self)  # how they run, with the plans they found
        self.arguments = tuple((p.name, p.arg) for p in signature if p.scalar and not p.dim)
        self.manifest = {p.arg: p.name for p in signature if not p.scalar}
        self.inputs = {self.manifest[name]: (tuple(values[name].shape), dtype_name(values[name].dtype), True) for name in layout.given}
        self.saved = saved_names(route_kernel)
        # Each kept array: (0, index) an input of the call, (1, index) a result of the route.
        by_name = {p.name: (1, route.outs.index(p.arg)) if p.role == "out" else (0, layout.given.index(p.arg)) for p in signature if not p.scalar}
        self.saves = tuple(by_name[name] for name in self.saved)
        self.results = tuple(route.outs.index(name) for name in layout.outs)
        self.nondiff = tuple(i for i, p in enumerate(route.outs) if DTYPES[route.bound[route_kernel.name][p].dtype].kind != "float")

    def apply(self, tensors: tuple[Any, ...], scalars: dict[str, Any]) -> tuple[Any, ...]:
        """The call's results (a tuple in ``layout.outs`` order), recorded."""
        outs = Recorded.apply(self, scalars, *tensors)
        return outs if isinstance(outs, tuple) else (outs,)

    def forward(self, tensors: tuple[Any, ...], scalars: dict[str, Any]) -> tuple[Any, ...]:
        """The route's results (in its ``outs`` order): its plan, else its kernel's full path."""
        given = tuple(tensors[i] for i in self.route_given)
        route = self.route
        plan = self.plan
        if plan is not None:
            outs = plan(*given, *self.none, *[scalars[name] for name in route.arguments])
            if outs is not None:
                return outs  # the route's results: its outs, as it has no inout arrays
        values = dict(zip(route.given, given))
        values.update(scalars)
        found = self.framework.call(route, values, self.route_axes)
        self.plan = route.plans.get(plan_key(route, TORCH, "torch", values, self.route_axes, None))
        return tuple(found[name] for name in route.outs)


class Recorded(torch.autograd.Function):
    """A recorded call: ``apply(recording, scalars, *tensors)``, ``tensors`` the
    layout's given arrays (``Recording``)."""

    @staticmethod
    def forward(ctx: Any, recording: Recording, scalars: dict[str, Any], *tensors: Any) -> Any:
        outs = recording.forward(tensors, scalars)
        ctx.recording, ctx.scalars = recording, scalars
        ctx.save_for_backward(*(outs[i] if kind else tensors[i] for kind, i in recording.saves))
        if recording.nondiff:
            ctx.mark_non_differentiable(*(outs[i] for i in recording.nondiff))
        results = tuple(outs[i] for i in recording.results)
        return results[0] if len(results) == 1 else results

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        recording = ctx.recording
        layout, manifest = recording.layout, recording.manifest
        by_result = {manifest[name]: grad for name, grad in zip(layout.outs, grads)}
        saved = dict(zip(recording.saved, ctx.saved_tensors))
        arguments = {name: ctx.scalars[arg] for name, arg in recording.arguments}
        found = gradients(layout.family.bindings, recording.kernel, saved, by_result, arguments, recording.inputs, recording.framework, recording.memo)
        if not found.keys() >= recording.inputs.keys():  # an in array without a gradient: refused if it was asked for
            refuse_uncomputed(layout, recording.kernel, found, dict(zip(layout.given, ctx.needs_input_grad[2:])))
        return (None, None, *(found.get(manifest[name]) for name in layout.given))


def call_recorded(layout: Layout, values: dict[str, Any], axes: dict[str, Any]) -> Any:
    """``layout``'s call on ``values`` recorded past the dispatcher: its out
    arrays (a tuple), or None where its kernel declares no gradient (the op
    then records the call, and its formula refuses the gradient if one is asked)."""
    key = plan_key(layout, TORCH, "recorded", values, axes, None)  # the entry's guard's key
    try:
        recording = layout.plans.plans.get(key)
    except TypeError:  # an unhashable axis value: the op names it
        return None
    if recording is None:
        kernel = layout.choose({n: dtype_name(values[n].dtype) for n in layout.given}, axes, {n: tuple(values[n].shape) for n in layout.given})
        if kernel.backward is None:
            return None
        route, route_axes = layout, axes
        if kernel.backward.through:
            bindings = layout.family.bindings
            target = bindings.kernel(kernel.backward.through)
            route = bindings.layout_of(target.name)
            route_axes = {axis: value for axis, value in (target.axes or {}).items() if axis in route.open_axes}
        recording = layout.plans.keep(key, Recording(layout, route, route_axes, values))
    return recording.apply(tuple(values[name] for name in layout.given), {name: values[name] for name in layout.arguments})
