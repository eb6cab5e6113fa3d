"""Which calls with PyTorch tensors go through a layout's custom op, and how.

A call whose in and inout arrays are all tensors, with no stream given, goes
through ``torch.ops.<library>.<layout>`` (``_torch_ops``), or its ``.out``
overload where every out array is given as a tensor, so autograd and
``torch.compile`` see an operator. Where autograd records:

- a kernel differentiated through another kernel (tropical's forward
  product, through its argmax) runs that kernel's op instead, and returns
  this one's results of it: the gradient then needs no second forward pass;
- ``out=`` is refused, as PyTorch refuses an out variant of differentiable
  inputs; so is ``stream=``, whose call runs outside the ops.

A call given some out arrays but not all, or a stream, runs directly. The
op's kernel runs the layout's launch, never the op again. The entry's guard
of tensors, which finds these routes' plans, is ``_torch_guard``'s. Nothing here
imports torch: the caller found it in ``sys.modules``.
"""

from __future__ import annotations

import sys

from aotc.errors import ArgumentError
from aotc.kernels._decision import axis_value
from aotc.kernels._keys import made_key
from aotc.kernels._torch_registry import kernel_of, op_of, out_kernel_of
from aotc.kernels._traced import constant_when_traced, keep, made

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._binding import Layout

__all__ = ["call_op", "call_tensors", "records", "refuse_recording", "to_op"]


def torch_module() -> Any:
    return sys.modules["torch"]


def records(layout: Layout, values: dict[str, Any]) -> bool:
    """Whether autograd records a call on these tensors."""
    torch = sys.modules["torch"]
    return torch.is_grad_enabled() and any(getattr(values.get(name), "requires_grad", False) for name in layout.given)


def refuse_recording(argument: str) -> None:
    """The one line for an argument autograd cannot follow."""
    fix = "use `with torch.cuda.stream(s):` instead" if argument == "stream" else "call under torch.no_grad()"
    msg = f"{argument}: not supported while autograd records; {fix} or drop {argument}="
    raise ArgumentError(msg)


def to_op(layout: Layout, values: dict[str, Any], stream: Any) -> bool:
    """Whether this call goes through the layout's op: every array a tensor, no
    stream named but the one the op launches on anyway (PyTorch's current one
    there), and either no out array given (the op) or every one (its ``.out``)."""
    tensor = sys.modules["torch"].Tensor
    if stream is not None and not _current(values[layout.given[0]], stream):
        if records(layout, values):
            refuse_recording("stream")
        return False
    given = [values.get(name) for name in layout.outs]
    named = next((name for name, out in zip(layout.outs, given) if out is not None), None)
    if named is not None and records(layout, values):
        refuse_recording(named)  # as PyTorch refuses an out= variant of differentiable inputs
    if named is not None and not all(isinstance(out, tensor) for out in given):
        return False
    return all(isinstance(values[name], tensor) for name in layout.given)


def _current(tensor: Any, stream: Any) -> bool:
    """Whether ``stream`` is PyTorch's current stream on ``tensor``'s (CUDA) device."""
    from aotc.arrays.kinds import as_operand
    from aotc.arrays.placement import stream_handle

    if tensor.device.type != "cuda":
        return False
    op = as_operand(tensor, "stream")
    return stream_handle(stream, op) == stream_handle(None, op)  # None: the one reader of a current stream


def call_op(layout: Layout, values: dict[str, Any], axes: dict[str, Any]) -> Any:
    """The call, through the op: the out and inout arrays in declared order (one: itself)."""
    axes = _open_axes(layout, axes)
    # The lengths of packed dimensions the caller gave are the op's keywords too.
    axes = {**axes, **{name: values[name] for name in layout.lengths if values.get(name) is not None}}
    op = op_of(layout)
    arguments = [values[name] for name in layout.positional]
    if layout.outs and values.get(layout.outs[0]) is not None:  # to_op: then every out array is given
        outs = tuple(values[name] for name in layout.outs)
        if records(layout, values) or (torch_module().is_grad_enabled() and any(out.requires_grad for out in outs)):
            refuse_recording(layout.outs[0])
        from aotc.arrays.torch_direct import direct_all

        # Nothing but the overload would see it (out= records no gradient): its kernel, directly.
        direct = direct_all((*(values[name] for name in layout.given), *outs))
        (out_kernel_of(layout) if direct else op.out)(*arguments, **dict(zip(layout.outs, outs)), **axes)
    else:
        recording = records(layout, values)
        if recording and layout.inouts:
            msg = f"{layout.inouts[0]}: {layout.name} writes it in place, which autograd cannot follow; call under torch.no_grad()"
            raise ArgumentError(msg)
        outs = _eagerly_recorded(layout, values, axes) if recording else None
        if outs is None and recording:
            outs = _through_op(layout, values, axes, arguments, _transformed())
        if outs is None:
            from aotc.arrays.torch_direct import direct_all

            # Where nothing but aotc would see the op, its kernel itself (which leaves a plan).
            run = kernel_of(layout) if not recording and direct_all(tuple(values[name] for name in layout.given)) else op
            outs = run(*arguments, **axes)
            outs = outs if isinstance(outs, (tuple, list)) else (outs,) if layout.outs else ()
    by_name = dict(zip(layout.outs, outs))
    results = tuple(by_name[name] if name in by_name else values[name] for name in layout.results)
    return results[0] if len(results) == 1 else results


def _eagerly_recorded(layout: Layout, values: dict[str, Any], axes: dict[str, Any]) -> tuple[Any, ...] | None:
    """A recorded eager call on plain tensors, past the dispatcher (``_torch_recorded``);
    None where the ops must run it (traced, a mode, a subclass, no gradient declared)."""
    import torch

    if torch.compiler.is_compiling():
        return None
    from aotc.arrays.torch_direct import direct_all

    if not direct_all(tuple(values[name] for name in layout.given)):
        return None
    from aotc.kernels._torch_recorded import call_recorded

    return call_recorded(layout, values, axes)


def call_tensors(layout: Layout, args: tuple[Any, ...], axes: dict[str, Any], direct: bool) -> Any:
    """The generated entry's tensor calls that no plan answered: through the op,
    or, where nothing but it would see the op (``direct``), its kernel itself."""
    values = dict(zip(layout.positional, args))
    values.update((name, axes.pop(name)) for name in layout.lengths if axes.get(name) is not None)
    axes = {axis: value for axis, value in axes.items() if value is not None and axis not in layout.lengths}
    if not direct:
        return call_op(layout, values, axes)
    axes.update((name, values[name]) for name in layout.lengths if name in values)
    outs = kernel_of(layout)(*args, **axes)
    by_name = dict(zip(layout.outs, outs if isinstance(outs, tuple) else (outs,)))
    results = tuple(by_name[name] if name in by_name else values[name] for name in layout.results)
    return results[0] if len(results) == 1 else results


def _transformed() -> bool:
    """Whether a torch.func transform (grad, vjp, jacrev, vmap) runs the call (never so while traced)."""
    torch = torch_module()
    return not torch.compiler.is_compiling() and torch._C._are_functorch_transforms_active()  # noqa: SLF001 - see eager_checks


def _through_op(layout: Layout, values: dict[str, Any], axes: dict[str, Any], arguments: list[Any], transformed: bool) -> tuple[Any, ...] | None:
    """A recorded call through the ops: where its kernel is differentiated
    through another kernel, that kernel's op in its place, and this one's
    results of it; under a torch.func transform, the op's autograd formula at
    Python's level (``OpFunction``: the transform handles it there, where at
    the dispatcher's Autograd key it cannot). None: the op, as it is."""
    dtypes = tuple(values[name].dtype for name in layout.given)
    ranks = tuple(values[name].dim() for name in layout.given)
    route = made(_through_key(layout, dtypes, ranks, tuple(axes.items())))
    if route is None and not transformed:
        return None
    other, other_axes = route if route is not None else (layout, axes)
    if transformed:
        from aotc.kernels._torch_autograd import apply

        outs = apply(other, other_axes, arguments)
    else:
        outs = op_of(other)(*arguments, **other_axes)
    by_name = dict(zip(other.outs, outs if isinstance(outs, (tuple, list)) else (outs,)))
    return tuple(by_name[name] for name in layout.outs)


@constant_when_traced  # chosen eagerly where torch.compile traces the call (_traced): it fills caches
def _through_key(layout: Layout, dtypes: tuple[Any, ...], ranks: tuple[int, ...], axes: tuple[Any, ...]) -> str:
    """``_through``'s answer for tensors of these dtypes and ranks and these axes, kept under the key it returns."""
    from aotc.arrays.kinds.torch import dtype_name

    names = {name: dtype_name(dtype) for name, dtype in zip(layout.given, dtypes)}
    key = made_key("through", layout.family.bindings.serial, layout.name, *names.values(), *ranks, *(v for _, v in axes))
    try:
        kernel = layout.choose(names, dict(axes), {name: (0,) * rank for name, rank in zip(layout.given, ranks)})
    except ArgumentError:
        return keep(key, None)  # the op's own call names the mistake, with the shapes
    backward = kernel.backward
    if backward is None or not backward.through:
        return keep(key, None)
    bindings = layout.family.bindings
    other = bindings.layout_of(backward.through)
    target = bindings.kernel(backward.through)
    return keep(key, (other, {axis: value for axis, value in (target.axes or {}).items() if axis in other.open_axes}))


def _open_axes(layout: Layout, axes: dict[str, Any]) -> dict[str, Any]:
    """The axes the op takes: those of more than one value, each as the layout
    holds its values (``_decision.axis_value``: np.int64(64) is 64). An axis of
    one value is no keyword of the op: named with that value it is dropped. Any
    value no kernel has (256.0, an array, True) is refused in the line
    ``Layout.choose`` gives, where the op's schema would refuse some in
    PyTorch's words and take True as 1."""
    checked = {axis: axis_value(layout, axis, value) for axis, value in axes.items() if axis in layout.axes}
    return {axis: value for axis, value in checked.items() if axis in layout.open_axes}
