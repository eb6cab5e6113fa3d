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

from aotc.errors import ArgumentError, called, echo

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
    """The one line for differentiating a kernel that declares no gradient: where
    other kernels of the layout have one, the argument whose dtype (or the axis
    whose value) chose this one; else the layout, which declares none."""
    chosen = kernel.axes or {}
    have = [k for k in layout.every_kernel() if k.backward is not None]
    for axis in layout.open_axes:
        # The values of this axis with a gradient, the other axes as this call chose them.
        others = sorted({str(k.axes[axis]) for k in have if k.axes and all(k.axes.get(a) == chosen.get(a) for a in layout.open_axes if a != axis)})
        if others:
            listed = ", ".join(others[:-1]) + " or " + others[-1] if len(others) > 1 else others[0]
            value = chosen.get(axis)
            array = next((p.arg for p in kernel.signature or () if not p.scalar and p.role != "out" and p.dtype == value), None)
            if array is not None:
                return called(ArgumentError(f"{array}: dtype {value} has no gradient (its kernels differentiate {listed})"), layout.name)
            return called(ArgumentError(f"{axis}: {echo(value)} has no gradient (its kernels differentiate {axis} {listed})"), layout.name)
    where = ", ".join(f"{a}={v}" for a, v in chosen.items() if a in layout.open_axes) if have else ""
    text = f"its kernel for {where} declares no backward" if where else "declares no backward"
    return called(ArgumentError(f"{text}: in its manifest, so it cannot be differentiated"), layout.name)


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
    inputs: dict[str, tuple[tuple[int, ...], str]], framework: Framework, memo: dict[int, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The gradients of ``kernel``'s in arrays, by manifest name, from:
    ``saved`` (the forward arrays its gradient kernels keep, by manifest name),
    ``grads`` (each result's gradient, by manifest name; None: no gradient),
    ``arguments`` (the forward's scalar arguments, by manifest name) and
    ``inputs`` (each in array's shape and dtype, by manifest name).
    ``kernels`` is the library's bindings (``aotc.kernels.Kernels``). ``memo``
    keeps, for calls alike in their arrays' shapes and dtypes (a recorded
    call's ``_torch_eager.Recording``), what each step does to its gradients."""
    found: dict[str, Any] = {}
    for index, step in enumerate(_steps(kernels, kernel)):
        layout = step.layout
        values: dict[str, Any] = {}
        for arg, source, name in step.sources:
            if source == _ARGUMENT:
                values[arg] = arguments[name]
            elif source == _SAVED:
                values[arg] = saved[name]
            else:
                grad = grads.get(name)
                if grad is None:  # a result with no gradient flowing back: zeros of its shape
                    grad = framework.zeros_like(saved[name])
                values[arg] = grad
        fits = memo.get(index) if memo is not None else None
        if fits is None:
            fits = _fits(step, inputs, _natural_shapes(layout, values, step.axes, framework), framework)
            if memo is not None:
                memo[index] = fits
        for arg, how, shape, dtype in fits:
            if how == _SUMMED_IN_KERNEL:
                values[arg] = framework.zeros(shape, dtype, values[layout.given[0]])  # the kernel sums into it
        results = framework.call(layout, values, step.axes)
        for arg, how, shape, _ in fits:
            found[step.wanted_of[arg]] = framework.sum_to(results[arg], shape) if how == _SUMMED_AFTER else results[arg]
    return found


# How a gradient kernel's result gets its input's shape: as it is, summed
# by the kernel into a zeroed array of that shape, or summed afterwards.
_AS_IS, _SUMMED_IN_KERNEL, _SUMMED_AFTER = 0, 1, 2


def _fits(step: _Step, inputs: dict[str, tuple[tuple[int, ...], str]], natural: dict[str, Any], framework: Framework) -> tuple[tuple[str, int, Any, str], ...]:
    """Per gradient of ``step``: (binding name, how it fits its input's shape, that shape, its dtype)."""
    fits = []
    for arg, of in step.wanted:
        shape, dtype = inputs[of]
        how = _AS_IS
        if natural[arg] != shape:
            in_kernel = getattr(framework, "in_kernel_sums", True) and _sums_in_kernel(step.layout.bound[step.kernel.name][arg], natural[arg], shape)
            how = _SUMMED_IN_KERNEL if in_kernel else _SUMMED_AFTER
        fits.append((arg, how, shape, dtype))
    return tuple(fits)


# Where a gradient kernel's argument comes from: the forward's scalar
# argument, an array the forward kept, or a result's gradient.
_ARGUMENT, _SAVED, _GRAD = 0, 1, 2


class _Step:
    """One gradient kernel of a kernel's backward, as every call runs it: its
    layout, the axes that pick it there, where each argument comes from
    ((binding name, source, manifest name)), and the gradients it computes
    ((binding name, the forward input it is the gradient of))."""

    __slots__ = ("axes", "kernel", "layout", "sources", "wanted", "wanted_of")

    def __init__(self, kernels: Any, name: str, saved: tuple[str, ...]) -> None:
        self.kernel = target = kernels.kernel(name)
        self.layout = layout = kernels.layout_of(name)
        self.axes = {axis: value for axis, value in (target.axes or {}).items() if axis in layout.open_axes}
        sources, wanted = [], []
        for p in target.signature or ():
            if p.scalar:
                if not p.dim:
                    sources.append((p.arg, _ARGUMENT, p.name))
            elif p.role == "out":
                wanted.append((p.arg, p.name.removeprefix("grad_")))
            elif p.name in saved:
                sources.append((p.arg, _SAVED, p.name))
            else:
                sources.append((p.arg, _GRAD, p.name.removeprefix("grad_")))
        self.sources, self.wanted, self.wanted_of = tuple(sources), tuple(wanted), dict(wanted)


def _steps(kernels: Any, kernel: IndexKernel) -> tuple[_Step, ...]:
    """``kernel``'s gradient kernels as steps, worked out once a library's bindings."""
    found = kernels.gradient_steps.get(kernel.name)
    if found is None:
        backward = kernel.backward
        if backward is None or backward.through:
            msg = f"{kernel.name}: its gradient is not its own kernels'"
            raise ArgumentError(msg)
        found = kernels.gradient_steps[kernel.name] = tuple(_Step(kernels, name, saves) for name, saves in backward.kernels)
    return found


def _natural_shapes(layout: Any, values: dict[str, Any], axes: dict[str, Any], framework: Framework) -> dict[str, Any]:
    """The shapes the gradient kernel's out arrays would be allocated at."""
    from aotc.kernels._shapes import decided

    shapes = {name: framework.shape(values[name]) for name in layout.given}
    dtypes = {name: framework.dtype(values[name]) for name in layout.given}
    extents = {name: values.get(name) for name in layout.sizes}
    return decided(layout, shapes, dtypes, axes, extents, {}).out_shapes


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
    these gradients of its results, all by binding name, run through ``framework``: ``Layout.gradients``.

    The forward call's decision comes first: its kernel, and the shapes of its
    results, which each result kept and each gradient must have (named as the
    gradient kernels name them, ``grad_c`` and ``k`` for tropical's)."""
    from aotc.arrays.kinds import as_operand
    from aotc.kernels._shapes import decided

    ops = {name: as_operand(values[name], name) for name in layout.given}
    extents = {name: values.get(name) for name in layout.sizes}
    decision = decided(layout, {n: op.shape for n, op in ops.items()}, {n: op.dtype for n, op in ops.items()}, axes, extents, {})
    kernel = decision.kernel
    if kernel.backward is None:
        raise no_gradient(layout, kernel)
    bindings = layout.family.bindings
    route = through(bindings, kernel) or kernel
    manifest = {p.arg: p.name for p in route.signature or () if not p.scalar}
    names = {(source, name): arg for step in _steps(bindings, route) for arg, source, name in step.sources}
    for result, shape in decision.out_shapes.items():
        for source, given in ((_SAVED, values.get(result)), (_GRAD, grads.get(result))):
            arg = names.get((source, manifest.get(result, "")))
            if given is not None and arg is not None:
                got = as_operand(given, arg)
                if got.shape != shape:
                    what = "the result it is the gradient of" if source == _GRAD else "the result it is"
                    msg = f"{arg}: shape {got.shape}, but {what}, {result}, has shape {shape} for these inputs"
                    raise ArgumentError(msg)
    saved = {manifest[name]: value for name, value in values.items() if name in manifest and manifest[name] in saved_names(route)}
    missing = [name for name, m in manifest.items() if m in saved_names(route) and m not in saved]
    if missing:
        msg = f"{missing[0]}: its gradient needs it from the forward call"
        raise ArgumentError(msg)
    arguments = {p.name: values[p.arg] for p in route.signature or () if p.scalar and not p.dim}
    inputs = {manifest[name]: (op.shape, op.dtype) for name, op in ops.items()}
    found = gradients(bindings, route, saved, {manifest[n]: g for n, g in grads.items()}, arguments, inputs, framework)
    return {name: found[manifest[name]] for name in layout.given if manifest[name] in found}
