"""Declared layouts as PyTorch custom ops: ``torch.ops.<library>.<layout>``.

Each layout (``_binding``: one family's kernels bound alike) becomes one op
whose schema comes from its declaration: in arrays are ``Tensor``, inout
arrays ``Tensor(a!)`` (mutated in place, so not returned), the caller's
scalars ``int`` or ``float``, axes with more than one value optional
keywords, and the out arrays the op's results; a layout with out arrays also
gets a ``.out`` overload taking them as keyword-only mutated tensors
(PyTorch's convention), returning nothing. Its fake implementation decides
the out arrays from the declaration (``_decision.decide``, on the fake
tensors' symbolic sizes), so ``torch.compile(fullgraph=True)`` traces it and
``torch.library.opcheck`` checks it. Its autograd formula comes from the
kernels' ``backward:`` declaration (``_gradients``), and a kernel that
declares none refuses, in one line, to be differentiated.

Defined with ``torch.library.Library`` (``define``/``impl``) plus
``register_fake`` and ``register_autograd``, not ``torch.library.custom_op``:
custom_op wraps every call in Python layers of its own (10.8 us for an op
that only allocates, against 3.6 us through the dispatcher alone;
benchmarks/RESULTS.md). One namespace per library name; a second library of
the same name in one process is refused in one line.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import torch

from aotc.arrays.kinds.torch import TORCH, dtype_name, torch_dtype
from aotc.dtypes import DTYPES
from aotc.errors import ArgumentError
from aotc.kernels._keys import plan_key
from aotc.kernels._launch import launch
from aotc.kernels._torch_autograd import register_autograd
from aotc.kernels._torch_decision import fake_decision
from aotc.kernels._torch_registry import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotc.kernels import Kernels
    from aotc.kernels._binding import Layout

__all__ = ["register", "schema"]

# namespace -> (its torch.library.Library, the Kernels whose ops it holds): kept for the process.
_registered: dict[str, tuple[Any, Kernels]] = {}


def schema(layout: Layout, *, out: bool = False) -> str:
    """The op's schema, from the layout's declaration; ``out``: its ``.out``
    overload's, which takes the out arrays as keyword-only mutated tensors and returns nothing."""
    parts, aliases = [], iter("abcdefghijklmnopqrstuvwxyz")
    kinds = {name: kind for name, kind in layout.arguments.items()}
    for name in layout.positional:
        if name in kinds:
            parts.append(f"{'float' if DTYPES[kinds[name]].is_float else 'int'} {name}")
        elif name in layout.inouts:
            parts.append(f"Tensor({next(aliases)}!) {name}")
        else:
            parts.append(f"Tensor {name}")
    keywords = [f"Tensor({next(aliases)}!) {name}" for name in layout.outs] if out else []
    keywords += [f"{'int' if all(type(v) is int for v in layout.axes[axis]) else 'str'}? {axis}=None" for axis in layout.open_axes]
    keywords += [f"int? {name}=None" for name in layout.lengths]
    if keywords:
        parts += ["*", *keywords]
    outs = 0 if out else len(layout.outs)
    returns = "()" if outs == 0 else "Tensor" if outs == 1 else f"({', '.join(['Tensor'] * outs)})"
    return f"{layout.name}{'.out' if out else ''}({', '.join(parts)}) -> {returns}"


def register(kernels: Kernels) -> Any:
    """Define every layout of ``kernels``' library as an op (once per process);
    returns ``torch.ops.<library>``. Threads whose first tensor calls meet here
    take turns: the first registers, the others find its ops. Once registered,
    no lock is taken (a traced call reads the ops, and dynamo traces no lock)."""
    found = _registered.get(kernels.library.name)
    if found is not None and found[1] is kernels:
        return getattr(torch.ops, kernels.library.name)
    with _registering:
        return _define_ops(kernels)


_registering = threading.RLock()


def _define_ops(kernels: Kernels) -> Any:
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
    layouts = [layout for name in kernels.names for layout in kernels.family(name).layouts.values()]
    made = {}
    for layout in layouts:
        library.define(schema(layout), tags=(torch.Tag.pt2_compliant_tag,))
        kernel = _kernel(layout)  # also called directly where nothing but it would see the op
        library.impl(layout.name, kernel, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{namespace}::{layout.name}", _fake(layout), lib=library)
        out_kernel = None
        if layout.outs:
            library.define(schema(layout, out=True), tags=(torch.Tag.pt2_compliant_tag,))
            out_kernel = _out_kernel(layout)
            library.impl(f"{layout.name}.out", out_kernel, "CompositeExplicitAutograd")
            torch.library.register_fake(f"{namespace}::{layout.name}.out", _out_fake(layout), lib=library)
        made[layout] = (kernel, out_kernel)
    ops = getattr(torch.ops, namespace)
    for layout in layouts:
        if not layout.inouts:  # PyTorch takes autograd formulas for functional ops only; the route refuses the others
            register_autograd(layout, namespace, library)
    for layout in layouts:  # last: a layout's op is read without the lock once recorded (_torch_registry)
        record(layout, getattr(ops, layout.name), *made[layout])
    _registered[namespace] = (library, kernels)
    return ops


def _axes(layout: Layout, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The axes among an op call's keywords (the others: out arrays, packed lengths)."""
    return {axis: value for axis, value in kwargs.items() if value is not None and axis in layout.open_axes}


def _planned(layout: Layout, values: dict[str, Any], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """(the key, the plan kept under it, or None) of the op's call: the entry's guard's key.
    A value that cannot be keyed (a tensor without sizes, an unhashable scalar)
    has neither: the launch's reading names what it is."""
    try:
        key = plan_key(layout, TORCH, "torch", values, kwargs, None)
        return key, layout.plans.plans.get(key)
    except (RuntimeError, TypeError):
        return None, None


def _kernel(layout: Layout) -> Callable[..., Any]:
    """The op's kernel: a repeat call's plan (``_replay``), else the layout's
    launch on the tensors as given, which leaves a plan where one fits."""
    positional, given, outs, scalars = layout.positional, layout.given, layout.outs, tuple(layout.arguments)
    none = (None,) * len(outs)
    returned = tuple(layout.results.index(name) for name in outs)  # the outs among a plan's results

    def kernel(*args: Any, **kwargs: Any) -> Any:
        values = dict(zip(positional, args))
        values.update((name, kwargs[name]) for name in layout.lengths if kwargs.get(name) is not None)
        key, plan = _planned(layout, values, kwargs)
        found = None if plan is None else plan(*[values[name] for name in given], *none, *[values[name] for name in scalars])
        if found is None:  # no plan, or one that cannot vouch for this call
            arrays = launch(layout, values, _axes(layout, kwargs), None, key)
            results = tuple(arrays[name] for name in outs)
        else:
            results = tuple(found[i] for i in returned)
        return None if not results else results[0] if len(results) == 1 else results

    return kernel


def _out_kernel(layout: Layout) -> Callable[..., Any]:
    """The ``.out`` overload's kernel: a repeat call's plan, else the layout's
    launch writing the out tensors given (its plan is keyed by them too)."""
    positional, outs, names, scalars = layout.positional, layout.outs, layout.given + layout.outs, tuple(layout.arguments)

    def kernel(*args: Any, **kwargs: Any) -> None:
        values = dict(zip(positional, args))
        values.update((name, kwargs.pop(name)) for name in outs)
        values.update((name, kwargs[name]) for name in layout.lengths if kwargs.get(name) is not None)
        key, plan = _planned(layout, values, kwargs)
        if plan is None or plan(*[values[name] for name in names], *[values[name] for name in scalars]) is None:
            launch(layout, values, _axes(layout, kwargs), None, key)

    return kernel


def _fake(layout: Layout) -> Callable[..., Any]:
    """The op's fake implementation: out arrays of the declared shapes and dtypes, nothing run."""

    def fake(*args: Any, **kwargs: Any) -> Any:
        values = dict(zip(layout.positional, args))
        decision = fake_decision(layout, values, kwargs, {})
        first = values[layout.given[0]]
        results = tuple(first.new_empty(decision.out_shapes[name], dtype=torch_dtype(decision.out_dtypes[name])) for name in layout.outs)
        return None if not results else results[0] if len(results) == 1 else results

    return fake


def _out_fake(layout: Layout) -> Callable[..., Any]:
    """The ``.out`` overload's fake implementation: the out tensors checked against the declared shapes."""

    def fake(*args: Any, **kwargs: Any) -> None:
        values = dict(zip(layout.positional, args))
        outs = {name: kwargs.pop(name) for name in layout.outs}
        decision = fake_decision(layout, values, kwargs, outs)
        for name, got in outs.items():
            if tuple(got.shape) != decision.out_shapes[name] or dtype_name(got.dtype) != decision.out_dtypes[name]:
                msg = f"{name}: expected shape {decision.out_shapes[name]} and dtype {decision.out_dtypes[name]}, got {tuple(got.shape)} and {dtype_name(got.dtype)}"
                raise ArgumentError(msg)

    return fake
