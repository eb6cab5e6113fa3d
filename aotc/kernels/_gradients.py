"""A kernel's gradient, from its ``backward:`` declaration: one mechanism for
PyTorch's autograd, JAX's vjp and any library's own backward function.

A declared kernel's index entry names how it is differentiated
(``IndexKernel.backward``): by gradient kernels, each with the arrays it
keeps from the forward call (its inputs, its results, an argmax), or through
another kernel of its family that computes the same results and more (run
forward in its place when a gradient is wanted). The gradient kernels follow
a naming convention, checked at build time (``aotc.build._backward_fields``):
an in array ``grad_<o>`` takes the gradient of the forward result ``o``, one
named as a saved array takes that array, an out array ``grad_<i>`` is the
gradient of the forward input ``i``, a scalar is the forward's argument of
that name.

``gradients`` runs them through a ``Framework`` (how to call a layout, make a
zeroed array like another, sum an array to a shape): PyTorch's ops, JAX's
route, or the layout's own call for NumPy. A gradient has its input's shape:
where the input left out an optional dimension that the gradient kernel
writes with a declared stride, the gradient array is given at the input's
shape and the kernel sums into it; anything else broadcast is summed after.
"""

from __future__ import annotations

from aotc.errors import ArgumentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from aotc.index import IndexKernel

    class Framework(Protocol):
        def call(self, layout: Any, values: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]: ...
        def shape(self, array: Any) -> tuple[int, ...]: ...
        def dtype(self, array: Any) -> str: ...
        def zeros_like(self, array: Any) -> Any: ...
        def zeros(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any: ...
        def sum_to(self, array: Any, shape: tuple[int, ...]) -> Any: ...


__all__ = ["Direct", "call_gradients", "differentiable", "gradients", "no_gradient", "through"]


def no_gradient(layout: Any, kernel: IndexKernel) -> ArgumentError:
    """The one line for differentiating a kernel that declares no gradient."""
    where = f"{layout.name}" + (f" ({', '.join(f'{a}={v}' for a, v in kernel.axes.items() if a in layout.open_axes)})" if kernel.axes else "")
    return ArgumentError(f"{where}: declares no backward: in its manifest, so it cannot be differentiated")


def differentiable(kernel: IndexKernel) -> bool:
    """Whether ``kernel`` has a gradient (its own kernels, or through another kernel)."""
    return kernel.backward is not None


def through(kernels: Any, kernel: IndexKernel) -> IndexKernel | None:
    """The kernel ``kernel`` is differentiated through (run forward in its place), if any."""
    backward = kernel.backward
    if backward is None or not backward.through:
        return None
    return kernels.kernel(backward.through)


def saved_names(kernel: IndexKernel) -> tuple[str, ...]:
    """The forward arrays (manifest names) that ``kernel``'s gradient kernels keep, in first use order."""
    names: dict[str, None] = {}
    for _, saves in kernel.backward.kernels if kernel.backward is not None else ():
        names.update(dict.fromkeys(saves))
    return tuple(names)


def gradients(
    kernels: Any, kernel: IndexKernel, saved: dict[str, Any], grads: dict[str, Any], arguments: dict[str, Any],
    inputs: dict[str, tuple[tuple[int, ...], str]], framework: Framework,
) -> dict[str, Any]:  # fmt: skip
    """The gradients of ``kernel``'s in arrays, by manifest name, from:
    ``saved`` (the forward arrays its gradient kernels keep, by manifest name),
    ``grads`` (each result's gradient, by manifest name; None: no gradient),
    ``arguments`` (the forward's scalar arguments, by manifest name) and
    ``inputs`` (each in array's shape and dtype, by manifest name).
    ``kernels`` is the library's bindings (``aotc.kernels.Kernels``)."""
    backward = kernel.backward
    if backward is None or backward.through:
        msg = f"{kernel.name}: its gradient is not its own kernels'"
        raise ArgumentError(msg)
    found: dict[str, Any] = {}
    for name, _ in backward.kernels:
        target = kernels.kernel(name)
        layout = kernels.layout_of(name)
        values: dict[str, Any] = {}
        wanted: list[tuple[str, str]] = []  # (gradient array's binding name, the forward input it is the gradient of)
        for p in target.signature or ():
            if p.scalar:
                if not p.dim:
                    values[p.arg] = arguments[p.name]
                continue
            if p.role == "out":
                wanted.append((p.arg, p.name.removeprefix("grad_")))
            elif p.name in saved:
                values[p.arg] = saved[p.name]
            else:
                grad = grads.get(p.name.removeprefix("grad_"))
                if grad is None:  # a result with no gradient flowing back: zeros of its shape
                    grad = framework.zeros_like(saved[p.name.removeprefix("grad_")])
                values[p.arg] = grad
        axes = {axis: value for axis, value in (target.axes or {}).items() if axis in layout.open_axes}
        natural = _natural_shapes(layout, target, values, axes, framework)
        sums: dict[str, tuple[int, ...]] = {}
        for arg, of in wanted:
            shape = inputs[of][0]
            if natural[arg] == shape:
                continue
            if getattr(framework, "in_kernel_sums", True) and _sums_in_kernel(layout.bound[target.name][arg], natural[arg], shape):
                values[arg] = framework.zeros(shape, inputs[of][1], values[layout.given[0]])  # the kernel sums into it
            else:
                sums[arg] = shape
        results = framework.call(layout, values, axes)
        for arg, of in wanted:
            grad = results[arg]
            if arg in sums:
                grad = framework.sum_to(grad, sums[arg])
            found[of] = grad
    return found


def _natural_shapes(layout: Any, kernel: IndexKernel, values: dict[str, Any], axes: dict[str, Any], framework: Framework) -> dict[str, Any]:
    """The shapes the gradient kernel's out arrays would be allocated at."""
    from aotc.kernels._shapes import decide

    shapes = {name: framework.shape(values[name]) for name in layout.given}
    dtypes = {name: framework.dtype(values[name]) for name in layout.given}
    extents = {name: values.get(name) for name in layout.sizes}
    return decide(layout, shapes, dtypes, axes, extents, {}).out_shapes


def _sums_in_kernel(declared: Any, natural: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether the gradient kernel writes a gradient of ``shape`` itself: ``natural``
    less leading optional dimensions it declares strides for (it sums over them)."""
    dropped = len(natural) - len(shape)
    return 0 < dropped <= declared.optional and bool(declared.strides) and all(type(s) is str for s in declared.strides[:dropped]) and natural[dropped:] == shape


class Direct:
    """How ``_gradients`` runs on any arrays aotc reads, outside a framework's
    autograd: each layout through its own call (its plans, its ops for
    tensors), on ``stream``."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def call(self, layout: Any, values: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
        results = layout.call(values, axes, self.stream)
        return dict(zip(layout.results, results if len(layout.results) > 1 else (results,)))

    def shape(self, array: Any) -> tuple[int, ...]:
        from aotc.arrays.kinds import as_operand

        return as_operand(array, "gradient").shape

    def dtype(self, array: Any) -> str:
        from aotc.arrays.kinds import as_operand

        return as_operand(array, "gradient").dtype

    def zeros_like(self, array: Any) -> Any:
        from aotc.arrays.kinds import as_operand

        op = as_operand(array, "gradient")
        return op.kind.allocate(op, op.shape, op.dtype, self.stream, "gradient", 0)

    def zeros(self, shape: tuple[int, ...], dtype: str, like: Any) -> Any:
        from aotc.arrays.kinds import as_operand

        op = as_operand(like, "gradient")
        return op.kind.allocate(op, shape, dtype, self.stream, "gradient", 0)

    def sum_to(self, array: Any, shape: tuple[int, ...]) -> Any:
        from aotc.arrays.kinds import as_operand

        op = as_operand(array, "gradient")
        return op.kind.sum_to(op, shape)


def call_gradients(layout: Any, values: dict[str, Any], grads: dict[str, Any], axes: dict[str, Any], framework: Framework) -> dict[str, Any]:
    """The gradients of ``layout``'s in arrays, by binding name, for a call with
    these arrays (its inputs, and the results its gradient kernels keep) and
    these gradients of its results, all by binding name, run through ``framework``: ``Layout.gradients``."""
    from aotc.arrays.kinds import as_operand

    ops = {name: as_operand(values[name], name) for name in layout.given}
    kernel = layout.choose({n: op.dtype for n, op in ops.items()}, axes, {n: op.shape for n, op in ops.items()})
    if kernel.backward is None:
        raise no_gradient(layout, kernel)
    bindings = layout.family.bindings
    route = through(bindings, kernel) or kernel
    manifest = {p.arg: p.name for p in route.signature or () if not p.scalar}
    saved = {manifest[name]: value for name, value in values.items() if name in manifest and manifest[name] in saved_names(route)}
    missing = [name for name, m in manifest.items() if m in saved_names(route) and m not in saved]
    if missing:
        msg = f"{layout.name}: its gradient needs {missing[0]} from the forward call"
        raise ArgumentError(msg)
    arguments = {p.name: values[p.arg] for p in route.signature or () if p.scalar and not p.dim}
    inputs = {manifest[name]: (op.shape, op.dtype) for name, op in ops.items()}
    found = gradients(bindings, route, saved, {manifest[n]: g for n, g in grads.items()}, arguments, inputs, framework)
    return {name: found[manifest[name]] for name in layout.given if manifest[name] in found}
