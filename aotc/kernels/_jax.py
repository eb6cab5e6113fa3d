"""JAX arrays through a declared family's kernels: eagerly and under ``jax.jit``
and ``jax.vmap``, on XLA's own stream.

Imported only when a family is called with a ``jax.Array`` (``Family._call``),
so ``import aotc`` never imports jax. The route is the tropical API's
(``aotc.tropical._jax``): one ``jax.experimental.buffer_callback`` per call,
whose callback runs the family's ordinary launch on XLA's buffers, writing
the out arrays in place. What the declaration says decides the rest:

- the kernel, the dimensions and the out arrays' shapes and dtypes come from
  ``Family.plan_for`` while tracing, so a mistake is one line naming the
  array before XLA sees the call;
- an inout array is the callback's input and output at once
  (``input_output_aliases``): XLA gives the kernel a buffer holding the
  input, and the result is a new ``jax.Array``, as JAX's arrays are immutable;
- the caller's scalars are part of the callback, so under ``jit`` they must
  be Python numbers (static), not traced values.

Where jax's CUDA plugin carries a launcher that takes module images, a call
lowered for CUDA launches through it instead, with no Python per call
(``aotc.kernels._jax_builtin``); the CPU keeps the callback.

``vmap`` maps onto the kernel where the declaration says how: a call whose
arrays all leave out one optional leading dimension (softmax's ``batch``)
is mapped by running the kernel once with that dimension as the mapped axis
(``_launch``). Any other call is mapped one example after another
(``sequential``).
A family's ``backward:`` pairing makes the call a ``jax.custom_vjp``
(``_differentiable``), as it makes the PyTorch op's autograd formula.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.custom_batching import custom_vmap
from jax.experimental.buffer_callback import buffer_callback

from aotc.arrays.jax_buffers import DTYPE_NAMES, as_jax, eagerly, host_view, refuse_given, reporting, require_device, xla_stream
from aotc.errors import ArgumentError, ArgumentTypeError
from aotc.kernels import _jax_builtin

__all__ = ["call"]

_NUMPY_NAMES = {name: numpy for numpy, name in DTYPE_NAMES.items()}
_MAX_CALLBACKS = 64  # per family: one per axes and scalar values a program uses


def _cache_key(axes: dict[str, Any], scalars: dict[str, Any]) -> tuple[Any, ...]:
    """What the callbacks and the gradients are kept by: the axes and the scalars' values."""
    return (tuple(axes.items()), tuple((name, type(value), value) for name, value in scalars.items()))


def _callback(family: Any, axes: dict[str, Any], scalars: dict[str, Any]) -> Any:
    """The callback for calls with these axes and scalars, made once: JAX keys
    its compiled calls on the callback, so a new one each call would recompile."""
    cache = family.__dict__.setdefault("jax_callbacks", {})
    key = _cache_key(axes, scalars)
    found = cache.get(key)
    if found is None:

        def run(ctx: Any, outs: Any, *ins: Any) -> None:
            values = dict(zip(family.given, map(host_view, ins)))
            values.update(zip(family.results, map(host_view, outs)))  # an inout's aliased buffer holds its input
            values.update(scalars)
            stream = xla_stream(ctx, *(values[name] for name in (*family.given, *family.results)))
            if stream is None and family.entry is not None:
                # Host buffers, as NumPy views: the generated entry, whose call
                # plan takes a repeat call (it reads the views' pointers anew).
                family.entry(*(values[name] for name in family.positional), **{name: values[name] for name in family.outs}, **axes)
            else:
                family.launch(values, axes, stream, keep=_no_plan)

        if len(cache) >= _MAX_CALLBACKS:
            cache.clear()
        found = cache[key] = reporting(run)
    return found


def _no_plan(*_: Any) -> None:
    """XLA's GPU buffers are new objects every call: no plan keeps them."""


def call(family: Any, values: dict[str, Any], axes: dict[str, Any], stream: Any) -> Any:
    """The family's call on JAX arrays: its out and inout arrays as new JAX arrays, in declared order (one: itself)."""
    refuse_given(stream=stream, **{name: values.get(name) for name in family.outs})
    require_device(family.library)  # no GPU: one line while tracing, not from inside XLA
    arrays = {name: as_jax(values[name], name) for name in family.given}
    dtypes = {}
    for name, array in arrays.items():
        dtypes[name] = DTYPE_NAMES.get(str(array.dtype))
        if dtypes[name] is None:
            msg = f"{name}: dtype {array.dtype} has no kernel of {family.name} ({', '.join(DTYPE_NAMES)})"
            raise ArgumentTypeError(msg)
    plan = family.plan_for({name: tuple(array.shape) for name, array in arrays.items()}, dtypes, axes)
    scalars = {name: values[name] for name in family.arguments}
    for name, value in scalars.items():
        if isinstance(value, jax.core.Tracer):
            msg = f"{name}: a traced value; a family's scalar arguments are Python numbers (under jax.jit, mark {name} static)"
            raise ArgumentTypeError(msg)
        if isinstance(value, (jax.Array, list, dict, set)):  # the callbacks are kept by value (_callback)
            msg = f"{name}: expected a number, got {type(value).__name__}"
            raise ArgumentTypeError(msg)
    given = tuple(arrays[name] for name in family.given)
    if family.backward is not None and len(family.results) == len(family.outs):
        outputs = eagerly(_differentiable(family, axes, scalars), *given)
    else:
        outputs = eagerly(_without_gradient(family, lambda *arrays: _launch(family, plan, axes, scalars, arrays)), *given)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _without_gradient(family: Any, launch: Any) -> Any:
    """``launch`` as a ``jax.custom_jvp`` that refuses, in one line naming the
    family, to be differentiated (JAX asks only where a tangent is not zero)."""
    function = jax.custom_jvp(launch)

    @function.defjvp
    def refuse(primals: Any, tangents: Any) -> Any:
        if family.backward is None:
            reason = "declares no backward: pairing in its manifest"
        else:
            reason = "has inout arrays, which its backward: pairing does not differentiate"
        msg = f"{family.name}: {reason}, so JAX cannot differentiate it"
        raise ArgumentError(msg)

    return function


def _launch(family: Any, plan: Any, axes: dict[str, Any], scalars: dict[str, Any], given: tuple[Any, ...]) -> tuple[Any, ...]:
    """The call: its out and inout arrays, in declared order. Where its arrays
    leave out a declared optional dimension, ``vmap`` maps onto it
    (``custom_vmap``): the mapped axis becomes that dimension, and the kernel
    runs once over the whole batch. Otherwise ``vmap`` runs the call per example."""
    if _mappable_dimension(family, plan, given) is None:
        return _launch_once(family, plan, axes, scalars, given)
    mapped = custom_vmap(lambda *arrays: _launch_once(family, plan, axes, scalars, arrays))

    @mapped.def_vmap
    def onto_the_kernels_dimension(axis_size: int, in_batched: list[bool], *arrays: Any) -> tuple[tuple[Any, ...], tuple[bool, ...]]:
        # An array not mapped is the same for every example: broadcast along the mapped axis.
        arrays = tuple(a if batched else jax.numpy.broadcast_to(a, (axis_size, *a.shape)) for a, batched in zip(arrays, in_batched))
        outputs = _launch(family, _plan_of(family, arrays, axes), axes, scalars, arrays)
        return outputs, (True,) * len(outputs)

    return tuple(mapped(*given))


def _mappable_dimension(family: Any, plan: Any, given: tuple[Any, ...]) -> str | None:
    """The declared dimension that a leading mapped axis of every array would
    be: each array leaves out the same optional dimension, just before the
    dimensions it has, and holds it nowhere else."""
    declared = {p.name: p for p in family.kernels[plan.kernel].signature}
    shapes = {name: tuple(array.shape) for name, array in zip(family.given, given)}
    shapes.update((name, plan.out_shapes[name]) for name in family.outs)
    found = set()
    for name, shape in shapes.items():
        full = declared[name].shape
        dropped = len(full) - len(shape)
        if dropped < 1 or full[dropped - 1] in full[dropped:]:
            return None
        found.add(full[dropped - 1])
    dimension = found.pop() if len(found) == 1 else None
    return dimension if isinstance(dimension, str) else None


def _launch_once(family: Any, plan: Any, axes: dict[str, Any], scalars: dict[str, Any], given: tuple[Any, ...]) -> tuple[Any, ...]:
    """The call as one buffer_callback (or, lowered for CUDA, jaxlib's launcher): its out and inout arrays, in declared order."""
    results, aliases = {}, {}
    for index, name in enumerate(family.results):
        if name in family.given:  # inout: the input's buffer, written in place
            array = given[family.given.index(name)]
            aliases[family.given.index(name)] = index
            results[name] = jax.ShapeDtypeStruct(array.shape, array.dtype)
        else:
            results[name] = jax.ShapeDtypeStruct(plan.out_shapes[name], _NUMPY_NAMES[plan.dtypes[name]])
    run = buffer_callback(_callback(family, axes, scalars), tuple(results.values()), vmap_method="sequential", input_output_aliases=aliases or None)
    builtin = _jax_builtin.for_call(family, plan, scalars, given, results)
    if builtin is None:
        return tuple(run(*given))
    # Lowered for CUDA: jaxlib's launcher; for any other platform (the CPU): the callback.
    return tuple(jax.lax.platform_dependent(*given, cuda=builtin, default=lambda *arrays: tuple(run(*arrays))))


def _plan_of(family: Any, given: tuple[Any, ...], axes: dict[str, Any]) -> Any:
    shapes = {name: tuple(x.shape) for name, x in zip(family.given, given)}
    return family.plan_for(shapes, {name: DTYPE_NAMES[str(x.dtype)] for name, x in zip(family.given, given)}, axes)


def _differentiable(family: Any, axes: dict[str, Any], scalars: dict[str, Any]) -> Any:
    """The call as a ``jax.custom_vjp``, from the family's ``backward:`` pairing
    (its naming convention is ``aotc.build._backward_fields``'): the forward
    keeps the arrays named in ``saves``, the backward calls the paired family
    with ``grad_<out>``, those arrays and the forward's scalars, and each in
    array's gradient is its ``grad_<in>`` (zeros where the pairing has none).
    Made once per axes and scalars, as the callbacks are."""
    cache = family.__dict__.setdefault("jax_gradients", {})
    key = _cache_key(axes, scalars)
    found = cache.get(key)
    if found is not None:
        return found
    from aotc.kernels import over

    name, saves = family.backward
    gradients = over(family.library).family(name)
    gradient_axes = {axis: value for axis, value in axes.items() if axis in gradients.open_axes}

    def primal(*given: Any) -> tuple[Any, ...]:
        return _launch(family, _plan_of(family, given, axes), axes, scalars, given)

    def forward(*given: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        outputs = primal(*given)
        known = dict(zip(family.given, given))
        known.update(zip(family.outs, outputs))
        # The inputs ride along for their shapes: an input the pairing gives no gradient gets zeros like it.
        return outputs, (tuple(known[name] for name in saves), given)

    def backward(residuals: tuple[Any, ...], grads: tuple[Any, ...]) -> tuple[Any, ...]:
        saved, given = residuals
        known: dict[str, Any] = dict(zip(saves, saved))
        known.update((f"grad_{name}", grad) for name, grad in zip(family.outs, grads))
        known.update(scalars)
        values = {name: known[name] for name in (*gradients.given, *gradients.arguments)}
        results = call(gradients, values, gradient_axes, None)
        by_name = dict(zip(gradients.outs, results if isinstance(results, tuple) else (results,)))
        return tuple(by_name.get(f"grad_{name}", jax.numpy.zeros_like(x)) for name, x in zip(family.given, given))

    differentiable = jax.custom_vjp(primal)
    differentiable.defvjp(forward, backward)
    if len(cache) >= _MAX_CALLBACKS:
        cache.clear()
    cache[key] = differentiable
    return differentiable
