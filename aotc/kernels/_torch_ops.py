"""Declared families as PyTorch custom ops: ``torch.ops.<library>.<family>``.

Each family becomes one op whose schema comes from its declaration: in
arrays are ``Tensor``, inout arrays ``Tensor(a!)`` (mutated in place, so not
returned), the caller's scalars ``int`` or ``float``, axes with more than one
value optional keywords, and the out arrays the op's results. Its fake
implementation allocates the out arrays from the declared shapes
(``Family.plan_for``, on the fake tensors' symbolic sizes), so
``torch.compile(fullgraph=True)`` traces it and ``torch.library.opcheck``
checks it.

Defined with ``torch.library.Library`` (``define``/``impl``) and
``register_fake``, as the tropical ops are (``aotc.tropical._torch_ops`` says
why not ``custom_op``). One namespace per library name; a second library of
the same name in one process is refused in one line.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from aotc.errors import ArgumentError
from aotc.kernels._tensor_plan import MAX_PLANS, make_tensor_plan, tensor_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotc.kernels import Kernels
    from aotc.kernels._family import Family

__all__ = ["register", "schema"]

TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}
_DTYPE_NAMES = {value: key for key, value in TORCH_DTYPES.items()}
_bump_version = torch.autograd.graph.increment_version

# namespace -> (its torch.library.Library, the Kernels whose ops it holds): kept for the process.
_registered: dict[str, tuple[Any, Kernels]] = {}


def schema(family: Family, *, out: bool = False) -> str:
    """The op's schema, from the family's declaration; ``out``: its ``.out``
    overload's, which takes the out arrays as keyword-only mutated tensors
    (PyTorch's convention) and returns nothing, as the tropical ``_out`` ops."""
    parts, aliases = [], iter("abcdefghijklmnopqrstuvwxyz")
    for param in family.params:
        if param.scalar:
            if not param.dim:
                parts.append(f"{'int' if param.dtype in ('i32', 'i64') else 'float'} {param.name}")
        elif param.role == "inout":
            parts.append(f"Tensor({next(aliases)}!) {param.name}")
        elif param.role == "in":
            parts.append(f"Tensor {param.name}")
    keywords = [f"Tensor({next(aliases)}!) {name}" for name in family.outs] if out else []
    keywords += [f"{'int' if all(type(v) is int for v in family.axes[axis]) else 'str'}? {axis}=None" for axis in family.open_axes]
    if keywords:
        parts += ["*", *keywords]
    outs = 0 if out else len(family.outs)
    returns = "()" if outs == 0 else "Tensor" if outs == 1 else f"({', '.join(['Tensor'] * outs)})"
    return f"{family.name}{'.out' if out else ''}({', '.join(parts)}) -> {returns}"


def register(kernels: Kernels) -> Any:
    """Define every declared family of ``kernels``' library as an op (once per
    process); returns ``torch.ops.<library>``."""
    namespace = kernels.library.name
    found = _registered.get(namespace)
    if found is not None:
        if found[1] is not kernels:
            msg = f"torch.ops.{namespace}: already holds the ops of the library at {found[1].library.folder}; one process registers one library of a name"
            raise ArgumentError(msg)
        return getattr(torch.ops, namespace)
    try:
        library = torch.library.Library(namespace, "DEF")
    except RuntimeError as exc:
        msg = f"torch.ops.{namespace}: PyTorch refused the namespace ({str(exc).splitlines()[0]})"
        raise ArgumentError(msg) from None
    for name in kernels.names:
        family = kernels.family(name)
        library.define(schema(family), tags=(torch.Tag.pt2_compliant_tag,))
        family.torch_kernel = _kernel(family)  # also called directly where nothing but it would see the op
        library.impl(name, family.torch_kernel, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{namespace}::{name}", _fake(family), lib=library)
        if family.outs:
            library.define(schema(family, out=True), tags=(torch.Tag.pt2_compliant_tag,))
            family.torch_out_kernel = _out_kernel(family)
            library.impl(f"{name}.out", family.torch_out_kernel, "CompositeExplicitAutograd")
            torch.library.register_fake(f"{namespace}::{name}.out", _out_fake(family), lib=library)
    for name in kernels.names:
        family = kernels.family(name)
        if family.backward is not None:
            backward, setup_context = _autograd(family, kernels.family(family.backward[0]), namespace)
            torch.library.register_autograd(f"{namespace}::{name}", backward, setup_context=setup_context, lib=library)
    _registered[namespace] = (library, kernels)
    return getattr(torch.ops, namespace)


def _axes(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {axis: value for axis, value in kwargs.items() if value is not None}


def _keeper(family: Family, key: tuple[Any, ...], *, outs_given: bool = False) -> Callable[..., None]:
    """What ``Family.launch`` is given to keep: the launch it just made, as the
    tensor plan of ``key`` where one fits (``_tensor_plan``)."""
    plans = family.tensor_plans

    def keep(values: dict[str, Any], arrays: dict[str, Any], launcher: Any, arguments: list[Any], backend: Any) -> None:
        made = make_tensor_plan(family, values, arrays, launcher, arguments, backend, outs_given=outs_given)
        if made is not None:
            if len(plans) >= MAX_PLANS:
                plans.clear()
            plans[key] = made

    return keep


def _kernel(family: Family) -> Callable[..., Any]:
    """The op's kernel: a repeat call's plan (``_tensor_plan``), else the
    family's launch on the tensors as given, which leaves a plan where one fits."""
    outs, given, positional, plans = family.outs, family.given, family.positional, family.tensor_plans
    inouts = tuple(name for name in family.results if name not in outs)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        values = dict(zip(positional, args))
        tensors = tuple(values[name] for name in given)
        key = tensor_key(tensors, kwargs)
        plan = plans.get(key)
        results = None if plan is None else plan(tensors, values)
        if results is None:  # no plan, or one that cannot vouch for this call
            arrays = family.launch(values, _axes(kwargs), None, _keeper(family, key))
            results = tuple(arrays[name] for name in outs)
        for name in inouts:
            _bump_version(values[name])  # what PyTorch's own in-place ops do: autograd sees it changed
        return None if not results else results[0] if len(results) == 1 else results

    return kernel


def _out_kernel(family: Family) -> Callable[..., Any]:
    """The ``.out`` overload's kernel: the family's launch writing the out tensors
    given, or a repeat call's plan (``_tensor_plan``, its ``outs_given`` form)."""
    positional, outs, names = family.positional, family.outs, family.given + family.outs
    written, plans = family.results, family.tensor_plans

    def kernel(*args: Any, **kwargs: Any) -> None:
        values = dict(zip(positional, args))
        values.update((name, kwargs.pop(name)) for name in outs)
        tensors = tuple(values[name] for name in names)
        key = ("out", *tensor_key(tensors, kwargs))  # beside the op's own plans
        plan = plans.get(key)
        if plan is None or plan(tensors, values) is None:
            family.launch(values, _axes(kwargs), None, _keeper(family, key, outs_given=True))
        for name in written:
            _bump_version(values[name])

    return kernel


def _out_fake(family: Family) -> Callable[..., Any]:
    """The ``.out`` overload's fake implementation: the out tensors checked against the declared shapes."""

    def fake(*args: Any, **kwargs: Any) -> None:
        values = dict(zip(family.positional, args))
        dtypes = {name: _DTYPE_NAMES.get(values[name].dtype, str(values[name].dtype)) for name in family.given}
        dtypes.update((name, _DTYPE_NAMES.get(kwargs[name].dtype, str(kwargs[name].dtype))) for name in family.outs)
        axes = _axes({key: value for key, value in kwargs.items() if key not in family.outs})
        plan = family.plan_for({name: tuple(values[name].shape) for name in family.given}, dtypes, axes)
        for name in family.outs:
            got = kwargs[name]
            if tuple(got.shape) != plan.out_shapes[name] or dtypes[name] != plan.dtypes[name]:
                msg = f"{name}: expected shape {plan.out_shapes[name]} and dtype {plan.dtypes[name]}, got {tuple(got.shape)} and {dtypes[name]}"
                raise ArgumentError(msg)

    return fake


def _autograd(family: Family, gradients: Family, namespace: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The autograd formula of a family paired with the family computing its
    gradients (``backward:`` in the manifest; its naming convention is
    ``aotc.build._backward_fields``'): the forward keeps the arrays named in
    ``saves`` and its scalar arguments, the backward calls the other op."""
    saves = family.backward[1]
    positional = family.positional  # the op's positional inputs; open axes are its keyword-only ones
    open_axes = [axis for axis, values in gradients.axes.items() if len(values) > 1]

    # torch calls it with these keywords: the names are its.
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any, keyword_only_inputs: Any = None) -> None:
        values = dict(zip(positional, inputs))
        values.update(zip(family.outs, output if isinstance(output, tuple) else (output,)))
        ctx.save_for_backward(*(values[name] for name in saves))
        ctx.arguments = {name: values[name] for name in family.arguments}
        ctx.axes = {axis: value for axis, value in (keyword_only_inputs or {}).items() if axis in open_axes and value is not None}

    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        known = dict(zip(saves, ctx.saved_tensors))
        known.update((f"grad_{name}", grad.contiguous()) for name, grad in zip(family.outs, grads))
        known.update(ctx.arguments)
        op = getattr(getattr(torch.ops, namespace), gradients.name)
        results = op(*(known[name] for name in gradients.positional), **ctx.axes)
        by_name = dict(zip(gradients.outs, results if isinstance(results, tuple) else (results,)))
        return tuple(by_name.get(f"grad_{name}") if ctx.needs_input_grad[i] else None for i, name in enumerate(positional))

    return backward, setup_context


def _fake(family: Family) -> Callable[..., Any]:
    """The op's fake implementation: out arrays of the declared shapes and dtypes, nothing run."""

    def fake(*args: Any, **kwargs: Any) -> Any:
        values = dict(zip(family.positional, args))
        first = values[family.given[0]]
        dtypes = {}
        for name in family.given:
            tensor = values[name]
            if tensor.device != first.device:
                msg = f"{name}: on {tensor.device}, but {family.given[0]} is on {first.device}"
                raise ArgumentError(msg)
            dtypes[name] = _DTYPE_NAMES.get(tensor.dtype, str(tensor.dtype))
        plan = family.plan_for({name: tuple(values[name].shape) for name in family.given}, dtypes, _axes(kwargs))
        results = tuple(first.new_empty(plan.out_shapes[name], dtype=TORCH_DTYPES[plan.dtypes[name]]) for name in family.outs)
        return None if not results else results[0] if len(results) == 1 else results

    return fake
