"""JAX arrays through a layout's kernels: eagerly and under ``jax.jit``,
``jax.grad`` and ``jax.vmap``, on XLA's own stream.

Imported only when a call is given a ``jax.Array`` (``Layout.call``), so
``import aotc`` never imports jax. One ``jax.experimental.buffer_callback``
per call, whose callback runs the layout's ordinary launch on XLA's buffers,
writing the out arrays in place:

- the decision (kernel, dimensions, out arrays) is made while tracing, so a
  mistake is one line naming the array before XLA sees the call;
- an inout array is the callback's input and output at once
  (``input_output_aliases``): the result is a new ``jax.Array``;
- the caller's scalars, extents and axes are part of the callback, so under
  ``jit`` they are Python values (static), never traced ones: one line says so.

Where jax's CUDA plugin carries a launcher that takes module images, a call
lowered for CUDA launches through it instead (``_jax_builtin``).

``vmap`` maps onto the kernel where the declaration says how: a call whose
arrays all leave out one optional leading dimension (softmax's ``batch``,
tropical's) is mapped by running the kernel once with that dimension as
the mapped axis; an unmapped array is broadcast along it by its declared
stride where it has one. Any other call is mapped one example after another.
A kernel's ``backward:`` makes the call a ``jax.custom_vjp`` (``_gradients``);
one without refuses, in one line, to be differentiated.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.custom_batching import custom_vmap
from jax.custom_derivatives import SymbolicZero
from jax.experimental.buffer_callback import buffer_callback

from aotc.arrays.jax_buffers import as_jax, eagerly, host_view, refuse_given, reporting, require_device, xla_stream
from aotc.arrays.kinds.numpy import dtype_name  # JAX's dtypes are NumPy's
from aotc.dtypes import DTYPES
from aotc.errors import ArgumentError, ArgumentTypeError
from aotc.kernels import _jax_builtin
from aotc.kernels._gradients import computed_by, gradients, no_gradient, refuse_uncomputed, saved_names
from aotc.kernels._arguments import scalar_argument
from aotc.kernels._decision import decide
from aotc.kernels._keys import jax_key

__all__ = ["JAX_GRADIENTS", "call"]


def _static(name: str, value: Any, what: str) -> Any:
    """A scalar, extent or axis value a callback is kept by: a Python value, never
    a traced one. A concrete 0-d JAX array (``jnp.float32(0.5)``, outside jit) is
    its Python value, as a 0-d NumPy array or a tensor's item is on the other routes,
    and on this one."""
    if isinstance(value, jax.core.Tracer):
        msg = f"{name}: a traced value; {what} (under jax.jit, mark {name} static)"
        raise ArgumentTypeError(msg)
    expected = "a number" if "number" in what else "a value"
    shape = getattr(value, "shape", None)
    if shape is not None and callable(getattr(value, "item", None)):  # a JAX or NumPy array or scalar, a tensor
        if tuple(shape) == ():
            return value.item()  # a 0-d array is unhashable: the callback is kept by its value
        array = "a JAX array" if isinstance(value, jax.Array) else "an array"
        msg = f"{name}: expected {expected}, got {array} of shape {tuple(shape)}"
        raise ArgumentTypeError(msg)
    if isinstance(value, (list, dict, set)):
        msg = f"{name}: expected {expected}, got {type(value).__name__}"
        raise ArgumentTypeError(msg)
    return value


def call(layout: Any, values: dict[str, Any], axes: dict[str, Any], stream: Any) -> Any:
    """The layout's call on JAX arrays: its out and inout arrays as new JAX arrays, in declared order (one: itself)."""
    refuse_given(stream=stream, **{name: values.get(name) for name in layout.outs})
    require_device(layout.library)  # no GPU: one line while tracing, not from inside XLA
    axes = {axis: _static(axis, value, "a kernel's axes are Python values") for axis, value in axes.items()}
    scalars = {name: values[name] for name in layout.arguments}
    scalars.update((name, values[name]) for name in layout.lengths if values.get(name) is not None)
    scalars = {name: _static(name, value, "a family's scalar arguments are Python numbers") for name, value in scalars.items()}
    given = tuple(as_jax(values[name], name) for name in layout.given)
    decision = _decide(layout, given, axes, scalars)
    kernel = decision.kernel
    for p in kernel.signature or ():
        # Checked by the chosen kernel's types now: from inside XLA's callback a
        # refusal would come back as XLA's internal error, with its traceback.
        if p.scalar and not p.extent and p.arg in layout.arguments:
            scalar_argument(scalars[p.arg], p.arg, p.dtype)
    if kernel.backward is not None and not layout.inouts:
        function = _differentiable(layout, kernel, axes, scalars, given)
    else:
        function = _without_gradient(layout, kernel, lambda *arrays: _launch(layout, axes, scalars, arrays))
    outputs = eagerly(function, *given)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _dtype(array: Any, name: str, deciding: bool = False) -> str:
    """The dtype's aotc name. One aotc has none for (complex64) is, while
    ``deciding``, its NumPy name, which the layout's choice refuses in the
    words the other routes use ("its kernels take f32 or f64 there")."""
    found = dtype_name(array.dtype)  # NumPy's dtype object, looked up by itself: str() of one runs Python
    if found not in DTYPES:
        if deciding:
            return str(array.dtype)
        msg = f"{name}: dtype {array.dtype} has no kernel ({', '.join(d.numpy for d in DTYPES.values())})"
        raise ArgumentTypeError(msg)
    return found


def _decide(layout: Any, given: tuple[Any, ...], axes: dict[str, Any], scalars: dict[str, Any]) -> Any:
    shapes = {name: tuple(x.shape) for name, x in zip(layout.given, given)}
    dtypes = {name: _dtype(x, name, deciding=True) for name, x in zip(layout.given, given)}
    return decide(layout, shapes, dtypes, axes, {name: scalars.get(name) for name in layout.sizes}, {})


def _without_gradient(layout: Any, kernel: Any, run: Any) -> Any:
    """``run`` as a ``jax.custom_jvp`` that refuses, in one line, to be
    differentiated (JAX asks only where a tangent is not zero)."""
    function = jax.custom_jvp(run)

    @function.defjvp
    def refuse(primals: Any, tangents: Any) -> Any:
        if kernel.backward is not None:
            msg = f"{layout.name}: writes {layout.inouts[0]} in place (inout), which its backward: declaration does not differentiate"
            raise ArgumentError(msg)
        raise no_gradient(layout, kernel)

    return function


def _callback(layout: Any, axes: dict[str, Any], scalars: dict[str, Any]) -> Any:
    """The callback for calls with these axes and scalars, made once: JAX keys
    its compiled calls on the callback, so a new one each call would recompile."""
    key = jax_key("callback", axes=axes, scalars=scalars)
    found = layout.plans.get(key)
    if found is None:

        def run(ctx: Any, outs: Any, *ins: Any) -> None:
            values = dict(zip(layout.given, map(host_view, ins)))
            values.update(zip(layout.results, map(host_view, outs)))  # an inout's aliased buffer holds its input
            values.update(scalars)
            stream = xla_stream(ctx, *(values[name] for name in (*layout.given, *layout.results)))
            # The direct route's plan where one fits (NumPy views of host buffers,
            # XLA's GPU buffers through the CUDA array interface, on XLA's stream),
            # else the full path, which leaves it.
            layout.run(values, axes, stream)

        found = layout.plans.keep(key, reporting(run))
    return found


def _launch(layout: Any, axes: dict[str, Any], scalars: dict[str, Any], given: tuple[Any, ...]) -> tuple[Any, ...]:
    """The call: its out and inout arrays, in declared order. Where its arrays
    leave out a declared optional dimension, ``vmap`` maps onto it
    (``custom_vmap``): the mapped axis becomes that dimension, and the kernel
    runs once over the whole batch. Otherwise ``vmap`` runs the call per example."""
    decision = _decide(layout, given, axes, scalars)
    dimension = _mappable_dimension(layout, decision, given)
    if dimension is None:
        return _launch_once(layout, decision, axes, scalars, given)
    mapped = custom_vmap(lambda *arrays: _launch_once(layout, _decide(layout, arrays, axes, scalars), axes, scalars, arrays))

    @mapped.def_vmap
    def onto_the_kernels_dimension(axis_size: int, in_batched: list[bool], *arrays: Any) -> tuple[tuple[Any, ...], tuple[bool, ...]]:
        # An array not mapped is the same for every example: read along the mapped
        # axis by its declared stride (0) where it has one, else broadcast to it.
        params = decision.params
        arrays = tuple(
            a if batched or _strided(params[name], dimension) else jax.numpy.broadcast_to(a, (axis_size, *a.shape))
            for name, a, batched in zip(layout.given, arrays, in_batched)
        )
        outputs = _launch(layout, axes, scalars, arrays)
        return outputs, (True,) * len(outputs)

    return tuple(mapped(*given))


def _strided(declared: Any, dimension: str) -> bool:
    """Whether an in array declares a stride for its optional dimension ``dimension``."""
    if declared.role != "in" or not declared.strides or dimension not in declared.shape[: declared.optional]:
        return False
    return type(declared.strides[declared.shape.index(dimension)]) is str


def _mappable_dimension(layout: Any, decision: Any, given: tuple[Any, ...]) -> str | None:
    """The declared dimension that a leading mapped axis of every array would
    be: each array leaves out the same optional dimension, just before the
    dimensions it has, and holds it nowhere else."""
    declared = decision.params
    shapes = {name: tuple(array.shape) for name, array in zip(layout.given, given)}
    shapes.update((name, decision.out_shapes[name]) for name in layout.outs)
    found = set()
    for name, shape in shapes.items():
        full = declared[name].shape
        dropped = len(full) + (declared[name].lanes > 1) - len(shape)
        if dropped < 1 or full[dropped - 1] in full[dropped:]:
            return None
        found.add(full[dropped - 1])
    dimension = found.pop() if len(found) == 1 else None
    return dimension if isinstance(dimension, str) else None


def _launch_once(layout: Any, decision: Any, axes: dict[str, Any], scalars: dict[str, Any], given: tuple[Any, ...]) -> tuple[Any, ...]:
    """The call as one buffer_callback (or, lowered for CUDA, jaxlib's launcher): its out and inout arrays, in declared order."""
    results, aliases = {}, {}
    for index, name in enumerate(layout.results):
        if name in layout.given:  # inout: the input's buffer, written in place
            array = given[layout.given.index(name)]
            aliases[layout.given.index(name)] = index
            results[name] = jax.ShapeDtypeStruct(array.shape, array.dtype)
        else:
            results[name] = jax.ShapeDtypeStruct(decision.out_shapes[name], DTYPES[decision.out_dtypes[name]].numpy)
    run = buffer_callback(_callback(layout, axes, scalars), tuple(results.values()), vmap_method="sequential", input_output_aliases=aliases or None)
    builtin = _jax_builtin.for_call(layout, decision, scalars, given, results)
    if builtin is None:
        return tuple(run(*given))
    # Lowered for CUDA: jaxlib's launcher; for any other platform (the CPU): the callback.
    return tuple(jax.lax.platform_dependent(*given, cuda=builtin, default=lambda *arrays: tuple(run(*arrays))))


def _instantiated(grad: Any) -> Any:
    """A result's gradient as an array: JAX's symbolic zero (of a result nothing
    used, or an integer one's float0) as the zeros it stands for."""
    if not isinstance(grad, SymbolicZero):
        return grad
    aval = grad.aval
    if aval.dtype == jax.dtypes.float0:
        import numpy as np

        return np.zeros(aval.shape, aval.dtype)
    return jax.numpy.zeros(aval.shape, aval.dtype)


class _Jax:
    """How ``_gradients`` runs on JAX arrays: each layout through this route (the
    arrays' own operations are their kind's, ``aotc.arrays.kinds.jax``)."""

    @staticmethod
    def call(layout: Any, values: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
        results = call(layout, values, {a: v for a, v in axes.items() if a in layout.open_axes}, None)
        return dict(zip(layout.results, results if isinstance(results, tuple) else (results,)))


JAX_GRADIENTS = _Jax  # how aotc.kernels._gradients runs on JAX arrays


def _second_derivative(bindings: Any, route: Any) -> ArgumentError:
    """The one line for differentiating ``route``'s gradient, raised while the
    caller's call is traced (its entry, or the API over it, names the call):
    its gradient kernels declare none, as PyTorch's formulas say it."""
    if any(bindings.kernel(name).backward is None for name, _ in route.backward.kernels):
        return ArgumentError("a second derivative: its gradient kernels declare no backward in the manifest, so it cannot be differentiated twice")
    return ArgumentError("a second derivative through JAX's route is not supported (its forward call is a callback)")


def _differentiable(layout: Any, kernel: Any, axes: dict[str, Any], scalars: dict[str, Any], given: tuple[Any, ...]) -> Any:
    """The call as a ``jax.custom_vjp`` from its kernel's ``backward:``: the
    forward pass runs the kernel (or the kernel it is differentiated through)
    and keeps what the gradient kernels save, and nothing else; the backward
    pass runs them. Made once per kernel, axes, scalars and the in arrays'
    shapes and dtypes (static under JAX: a vmapped call's are an example's),
    which the backward pass reads here rather than from kept inputs, so a
    gradient that saves no input keeps none alive (an eager ``jax.vjp``'s
    function would hold what its residuals hold)."""
    shapes = tuple((tuple(x.shape), x.dtype) for x in given)
    key = jax_key("vjp", kernel.name, shapes, axes=axes, scalars=scalars)
    found = layout.plans.get(key)
    if found is not None:
        return found
    bindings = layout.family.bindings
    route = kernel
    if kernel.backward.through:
        route = bindings.kernel(kernel.backward.through)
    route_layout = bindings.layout_of(route.name)
    route_axes = {axis: value for axis, value in (route.axes or {}).items() if axis in route_layout.open_axes}
    arguments = {p.name: scalars[p.arg] for p in route.signature or () if p.scalar and not p.dim}
    names = saved_names(route)

    def primal(*given: Any) -> tuple[Any, ...]:
        return _launch(layout, axes, scalars, given)

    # The forward pass's launch, which a second derivative would differentiate
    # (its kept arrays feed the gradient kernels): refused in the line PyTorch
    # gives, not with XLA's word that a buffer callback has no JVP.
    route_scalars = {p.arg: scalars[p.arg] for p in route.signature or () if p.scalar and not p.dim}
    kept = jax.custom_jvp(lambda *given: _launch(route_layout, route_axes, route_scalars, given))

    @kept.defjvp
    def refuse(primals: Any, tangents: Any) -> Any:
        raise _second_derivative(bindings, route)

    computed = computed_by(bindings, route)

    def forward(*primals: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        # symbolic_zeros: each primal says whether a gradient is asked of it, so
        # one the gradient kernels do not compute is refused, never given as zeros.
        refuse_uncomputed(layout, route, computed, {name: p.perturbed for name, p in zip(layout.given, primals)})
        given = tuple(p.value for p in primals)
        outputs = kept(*given)
        by_arg = dict(zip(layout.given, given))
        by_arg.update(zip(route_layout.results, outputs))
        arrays = {p.name: by_arg[p.arg] for p in route.signature or () if not p.scalar}
        mine = tuple(by_arg[name] for name in layout.results)
        return mine, tuple(arrays[name] for name in names)

    manifest = {p.arg: p.name for p in route.signature or () if not p.scalar}
    inputs = {manifest[name]: (shape, _dtype(x, name), False) for name, (shape, _), x in zip(layout.given, shapes, given)}  # immutable: summed after

    def backward(saved: tuple[Any, ...], grads: tuple[Any, ...]) -> tuple[Any, ...]:
        results = {manifest[name]: _instantiated(grad) for name, grad in zip(layout.results, grads)}
        found = gradients(bindings, route, dict(zip(names, saved)), results, arguments, inputs, _Jax)
        return tuple(found.get(manifest[name], jax.numpy.zeros(shape, dtype)) for name, (shape, dtype) in zip(layout.given, shapes))

    differentiable = jax.custom_vjp(primal)
    differentiable.defvjp(forward, backward, symbolic_zeros=True)
    return layout.plans.keep(key, differentiable)
