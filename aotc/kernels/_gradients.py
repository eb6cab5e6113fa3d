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
that name, or else the size of that name the forward call bound from its in
arrays' shapes (found again from their shapes, which every route keeps, by
the forward layout's own decision: so no input is kept for an extent).

``gradients`` calls each gradient kernel's layout through a ``Framework``:
PyTorch's ops, JAX's route, or the layout's own call (``Direct``: its plans,
and its ops for tensors). What it does to the arrays themselves (their shape
and dtype, a zeroed array, a sum to a shape) are their kinds' gradient
operations (``aotc.arrays.kinds``), which read no memory: a call that
``torch.compile`` traces makes them. What a kernel's backward is (its gradient
kernels as steps, and a call's kernel and route) is worked out where dynamo
does not trace (``_traced``): it fills tables. A gradient has its input's shape:
where the input left out an optional dimension that the gradient kernel
writes with a declared stride, the gradient array is given at the input's
shape and the kernel sums into it; anything else broadcast is summed after.
"""

from __future__ import annotations

from aotc.arrays.kinds import kind_of
from aotc.errors import ArgumentError, called, echo
from aotc.kernels._decision import decide, decided
from aotc.kernels._keys import made_key
from aotc.kernels._traced import MADE, constant_when_traced, keep, made

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from aotc.index import IndexKernel

    class Framework(Protocol):
        def call(self, layout: Any, values: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]: ...


__all__ = ["Direct", "call_gradients", "computed_by", "differentiable", "gradients", "inputs_of", "no_gradient", "refuse_uncomputed", "through"]


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
    text = f"its kernel for {where} declares no backward in its manifest" if where else "its manifest declares no backward for it"
    return called(ArgumentError(f"{text}, so it cannot be differentiated"), layout.name)


def computed_by(kernels: Any, kernel: IndexKernel) -> dict[str, None]:
    """The in arrays (manifest names) whose gradients ``kernel``'s gradient kernels
    compute: each one's out arrays ``grad_<in>``."""
    found: dict[str, None] = {}
    for name, _ in kernel.backward.kernels if kernel.backward is not None else ():
        found.update((p.name.removeprefix("grad_"), None) for p in kernels.kernel(name).signature or () if not p.scalar and p.role == "out")
    return found


def refuse_uncomputed(layout: Any, kernel: IndexKernel, found: dict[str, Any], wanted: dict[str, bool]) -> None:
    """Refuse, in one line, a gradient asked of an in array (``wanted``, by binding
    name) that ``kernel``'s gradient kernels do not compute (``found``, by manifest
    name): a backward may cover some inputs only (an embedding bag's table and not
    its weights), and PyTorch would leave that input's gradient None without a word."""
    for param in kernel.signature or ():
        if not param.scalar and param.role == "in" and wanted.get(param.arg) and param.name not in found:
            args = {p.name: p.arg for p in kernel.signature or () if not p.scalar}
            computed = ", ".join(args.get(name, name) for name in found) or "none"
            msg = f"{param.arg}: has no gradient: the backward its manifest declares computes the gradients of {computed} only"
            raise called(ArgumentError(msg), layout.name)


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
    inputs: dict[str, tuple[tuple[int, ...], str]], framework: Framework, memo: dict[int | str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The gradients of ``kernel``'s in arrays, by manifest name, from:
    ``saved`` (the forward arrays its gradient kernels keep, by manifest name),
    ``grads`` (each result's gradient, by manifest name; None: no gradient),
    ``arguments`` (the forward's scalar arguments, by manifest name) and
    ``inputs`` (each in array's shape and dtype, by manifest name), which
    give the sizes the forward call bound (``_forward_sizes``).
    ``kernels`` is the library's bindings (``aotc.kernels.Kernels``). ``memo``
    keeps, for calls alike in their arrays' shapes and dtypes (a recorded
    call's ``_torch_recorded.Recording``), what each step does to its gradients."""
    found: dict[str, Any] = {}
    steps = memo.get(_STEPS) if memo is not None else None
    if steps is None:  # a memo keeps the steps too: finding them in MADE formats a key each time
        steps = made(_steps(kernels, kernel))
        if memo is not None:
            memo[_STEPS] = steps
    sized = False  # whether ``arguments`` holds the forward call's sizes too
    for index, step in enumerate(steps):
        layout = step.layout
        if step.takes_sizes and not sized:
            sizes = memo.get(_SIZES) if memo is not None else None
            if sizes is None:
                sizes = _forward_sizes(kernels, kernel, inputs, arguments)
                if memo is not None:
                    memo[_SIZES] = sizes
            arguments, sized = {**arguments, **sizes}, True
        values: dict[str, Any] = {}
        for arg, source, name in step.sources:
            if source == _ARGUMENT:
                values[arg] = arguments[name]
            elif source == _SAVED:
                values[arg] = saved[name]
            else:
                grad = grads.get(name)
                if grad is None:  # a result with no gradient flowing back: zeros of its shape
                    like = saved[name]
                    kind = kind_of(like, name)
                    grad = kind.zeros(like, kind.shape_of(like), kind.dtype_of(like), getattr(framework, "stream", None))
                values[arg] = grad
        fits = memo.get(index) if memo is not None else None
        if fits is None:
            fits = _fits(step, inputs, _natural_shapes(layout, values, step.axes))
            if memo is not None:
                memo[index] = fits
        for arg, how, shape, dtype in fits:
            if how == _SUMMED_IN_KERNEL:  # a zeroed array of the input's shape, which the kernel sums into
                like = values[layout.given[0]]
                values[arg] = kind_of(like, arg).zeros(like, shape, dtype, getattr(framework, "stream", None))
        results = framework.call(layout, values, step.axes)
        for arg, how, shape, _ in fits:
            result = results[arg]
            found[step.wanted_of[arg]] = kind_of(result, arg).summed(result, shape) if how == _SUMMED_AFTER else result
    return found


# Where a memo keeps the steps themselves and the forward's sizes, beside each step's fits (by index).
_STEPS, _SIZES = "steps", "sizes"

# How a gradient kernel's result gets its input's shape: as it is, summed
# by the kernel into a zeroed array of that shape, or summed afterwards.
_AS_IS, _SUMMED_IN_KERNEL, _SUMMED_AFTER = 0, 1, 2


def _fits(step: _Step, inputs: dict[str, tuple[tuple[int, ...], str, bool]], natural: dict[str, Any]) -> tuple[tuple[str, int, Any, str], ...]:
    """Per gradient of ``step``: (binding name, how it fits its input's shape, that shape, its dtype)."""
    fits = []
    for arg, of in step.wanted:
        shape, dtype, written = inputs[of]
        how = _AS_IS
        if natural[arg] != shape:
            # Summed by the kernel into an array given zeroed, where its kind is written in place (not JAX's).
            in_kernel = written and _sums_in_kernel(step.layout.bound[step.kernel.name][arg], natural[arg], shape)
            how = _SUMMED_IN_KERNEL if in_kernel else _SUMMED_AFTER
        fits.append((arg, how, shape, dtype))
    return tuple(fits)


# Where a gradient kernel's argument comes from: the forward's scalar
# argument (or a size the forward call bound from its in arrays, by name
# too), an array the forward kept, or a result's gradient.
_ARGUMENT, _SAVED, _GRAD = 0, 1, 2


class _Step:
    """One gradient kernel of a kernel's backward, as every call runs it: its
    layout, the axes that pick it there, where each argument comes from
    ((binding name, source, manifest name)), whether some are the forward
    call's sizes (``takes_sizes``: a call works them out only then), and the
    gradients it computes ((binding name, the forward input it is the gradient of))."""

    __slots__ = ("axes", "kernel", "layout", "sources", "takes_sizes", "wanted", "wanted_of")

    def __init__(self, kernels: Any, name: str, saved: tuple[str, ...], arguments: set[str]) -> None:
        self.kernel = target = kernels.kernel(name)
        self.layout = layout = kernels.layout_of(name)
        self.axes = {axis: value for axis, value in (target.axes or {}).items() if axis in layout.open_axes}
        sources, wanted = [], []
        self.takes_sizes = False
        for p in target.signature or ():
            if p.scalar:
                if not p.dim:  # the build let through only the forward's arguments and sizes
                    sources.append((p.arg, _ARGUMENT, p.name))
                    self.takes_sizes |= p.name not in arguments
            elif p.role == "out":
                wanted.append((p.arg, p.name.removeprefix("grad_")))
            elif p.name in saved:
                sources.append((p.arg, _SAVED, p.name))
            else:
                sources.append((p.arg, _GRAD, p.name.removeprefix("grad_")))
        self.sources, self.wanted, self.wanted_of = tuple(sources), tuple(wanted), dict(wanted)


@constant_when_traced  # fills a table: worked out where torch.compile traces a first call, not traced (_traced)
def _steps(kernels: Any, kernel: IndexKernel) -> str:
    """``kernel``'s gradient kernels as steps, worked out once (the key of them in ``_traced.MADE``)."""
    key = made_key("steps", kernels.serial, kernel.name)
    if not hasattr(MADE, key):
        backward = kernel.backward
        if backward is None or backward.through:
            msg = f"{kernel.name}: its gradient is not its own kernels'"
            raise ArgumentError(msg)
        arguments = {p.name for p in kernel.signature or () if p.scalar and not p.dim}
        keep(key, tuple(_Step(kernels, name, saves, arguments) for name, saves in backward.kernels))
    return key


def _natural_shapes(layout: Any, values: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
    """The shapes the gradient kernel's out arrays would be allocated at."""
    kinds = {name: kind_of(values[name], name) for name in layout.given}
    shapes = tuple(tuple(kind.shape_of(values[name])) for name, kind in kinds.items())
    dtypes = tuple(kind.dtype_of(values[name]) for name, kind in kinds.items())
    extents = tuple(values.get(name) for name in layout.sizes)
    return _decided_part(layout, shapes, dtypes, axes, extents, "out_shapes")


def _forward_sizes(kernels: Any, kernel: IndexKernel, inputs: dict[str, tuple[Any, ...]], arguments: dict[str, Any]) -> dict[str, Any]:
    """The sizes (by manifest name) the forward call of ``kernel`` bound, from
    its in arrays' shapes and dtypes (``inputs``) and the extents it was given
    (among ``arguments``): its layout's decision, as the forward call made it."""
    layout = kernels.layout_of(kernel.name)
    signature = kernel.signature or ()
    given = {p.arg: inputs[p.name] for p in signature if not p.scalar and p.role != "out"}
    manifest = {p.arg: p.name for p in signature if p.scalar}
    shapes = tuple(tuple(given[name][0]) for name in layout.given)
    dtypes = tuple(given[name][1] for name in layout.given)
    axes = {axis: value for axis, value in (kernel.axes or {}).items() if axis in layout.open_axes}
    extents = tuple(arguments.get(manifest.get(name, "")) for name in layout.sizes)
    return _decided_part(layout, shapes, dtypes, axes, extents, "dims")


def _decided_part(layout: Any, shapes: tuple[Any, ...], dtypes: tuple[str, ...], axes: dict[str, Any], extents: tuple[Any, ...], part: str) -> dict[str, Any]:
    """A part of ``layout``'s decision (``out_shapes`` or ``dims``) for these arrays, axes and extents."""
    if all(type(e) is int for shape in shapes for e in shape):
        return dict(_decided(layout, shapes, dtypes, tuple(axes.items()), extents, part))
    # Symbolic sizes: decided on them, kept nowhere.
    return getattr(decide(layout, dict(zip(layout.given, shapes)), dict(zip(layout.given, dtypes)), axes, dict(zip(layout.sizes, extents)), {}), part)


@constant_when_traced  # decides (filling the store): where torch.compile traces a call, run, not traced (_traced)
def _decided(layout: Any, shapes: tuple[Any, ...], dtypes: tuple[str, ...], axes: tuple[Any, ...], extents: tuple[Any, ...], part: str) -> tuple[Any, ...]:
    """``_decided_part`` of concrete sizes, as (name, value) pairs: the layout's decision."""
    decision = decided(layout, dict(zip(layout.given, shapes)), dict(zip(layout.given, dtypes)), dict(axes), dict(zip(layout.sizes, extents)), {})
    return tuple(getattr(decision, part).items())


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


def inputs_of(values: dict[str, Any], names: dict[str, str]) -> dict[str, tuple[tuple[int, ...], str, bool]]:
    """Each in array's shape, dtype and whether its kind is written in place, by
    manifest name (``names``: binding name -> manifest name), from its kind."""
    found = {}
    for name, manifest in names.items():
        kind = kind_of(values[name], name)
        found[manifest] = (kind.shape_of(values[name]), kind.dtype_of(values[name]), kind.written_in_place)
    return found


def call_gradients(layout: Any, values: dict[str, Any], grads: dict[str, Any], axes: dict[str, Any], framework: Framework) -> dict[str, Any]:
    """The gradients of ``layout``'s in arrays, by binding name, for a call with
    these arrays (its inputs, and the results its gradient kernels keep) and
    these gradients of its results, all by binding name, run through ``framework``: ``Layout.gradients``.

    The forward call's kernel comes first (``_backward_route``), then the
    shapes of its results, which each result kept and each gradient must have
    (named as the gradient kernels name them, ``grad_c`` and ``k`` for
    tropical's): the forward decision's (``_natural_shapes``)."""
    kinds = {name: kind_of(values[name], name) for name in layout.given}
    dtypes = tuple(kind.dtype_of(values[name]) for name, kind in kinds.items())
    ranks = tuple(len(kind.shape_of(values[name])) for name, kind in kinds.items())
    route, manifest, saves, scalars = made(_backward_route(layout, dtypes, ranks, tuple(axes.items())))
    _check_results(layout, values, grads, axes, route, manifest)
    saved = {manifest[name]: value for name, value in values.items() if name in manifest and manifest[name] in saves}
    missing = [name for name, m in manifest.items() if m in saves and m not in saved]
    if missing:
        msg = f"{missing[0]}: its gradient needs it from the forward call"
        raise ArgumentError(msg)
    arguments = {m: values[arg] for arg, m in scalars}
    inputs = inputs_of(values, {name: manifest[name] for name in layout.given})
    found = gradients(layout.family.bindings, route, saved, {manifest[n]: g for n, g in grads.items()}, arguments, inputs, framework)
    return {name: found[manifest[name]] for name in layout.given if manifest[name] in found}


def _check_results(layout: Any, values: dict[str, Any], grads: dict[str, Any], axes: dict[str, Any], route: Any, manifest: dict[str, str]) -> None:
    """Each result the call kept and each gradient of one, against the shape the
    forward call's decision gives it: a mismatch named by the gradient
    kernels' name for the array (``grad_c``), not by a dimension it binds."""
    names = {(source, name): arg for step in made(_steps(layout.family.bindings, route)) for arg, source, name in step.sources}
    for result, shape in _natural_shapes(layout, values, axes).items():
        for source, given in ((_SAVED, values.get(result)), (_GRAD, grads.get(result))):
            arg = names.get((source, manifest.get(result, "")))
            if given is None or arg is None:
                continue
            got = tuple(kind_of(given, arg).shape_of(given))
            if got != tuple(shape):
                what = "the result it is the gradient of" if source == _GRAD else "the result it is"
                msg = f"{arg}: shape {got}, but {what}, {result}, has shape {tuple(shape)} for these inputs"
                raise ArgumentError(msg)


@constant_when_traced  # chooses a kernel (filling tables): where torch.compile traces a call, not traced (_traced)
def _backward_route(layout: Any, dtypes: tuple[str, ...], ranks: tuple[int, ...], axes: tuple[Any, ...]) -> str:
    """How a call of ``layout`` with arrays of these dtypes and ranks and these
    axes is differentiated: (the kernel whose gradient kernels run, its arrays'
    manifest names by binding name, the arrays they save, its scalars as
    (binding name, manifest name)), kept in ``_traced.MADE`` under the key returned."""
    key = made_key("backward", layout.family.bindings.serial, layout.name, *dtypes, *ranks, *(v for _, v in axes))
    if not hasattr(MADE, key):
        kernel = layout.choose(dict(zip(layout.given, dtypes)), dict(axes), {name: (0,) * rank for name, rank in zip(layout.given, ranks)})
        if kernel.backward is None:
            raise no_gradient(layout, kernel)
        route = through(layout.family.bindings, kernel) or kernel
        manifest = {p.arg: p.name for p in route.signature or () if not p.scalar}
        scalars = tuple((p.arg, p.name) for p in route.signature or () if p.scalar and not p.dim)
        keep(key, (route, manifest, saved_names(route), scalars))
    return key
