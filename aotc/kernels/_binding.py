"""A layout: the kernels of one family that a call binds the same way.

A family's kernels may differ in their parameters (signature alternatives, a
parameter's ``when``): tropical's forward pass takes ``(a, b)`` and returns
``out``, its argmax pass returns ``k_out`` too, its backward passes take
``(grad_c, k, b)``. The kernels that take the same arguments by name and role
(the in and inout arrays and the caller's scalars, in declared order, and
the out arrays they return) form one layout, bound by one generated entry,
with one plan table, one PyTorch op and one JAX route. Dimensions, strides,
shapes, dtypes, lanes and packing may differ from kernel to kernel: they are
read from the kernel a call chooses.

A layout knows its kernels' forms from the family's catalog alone
(``aotc.index.families``): the signatures they are bound by, each once.
``choose`` picks a call's form from the axes it names and its arrays' dtypes
and ranks, then its kernel from the directory by its axis values; only that
kernel is checked, when a call first chooses it (``admit``). ``decide``
(``aotc.kernels._decision``) binds its dimensions.
"""

from __future__ import annotations

from aotc.arrays.kinds import kind_of
from aotc.arrays.placement import stream_handle
from aotc.dtypes import DTYPES, by_numpy
from aotc.errors import ArgumentError, ArgumentTypeError, IndexFormatError, UnknownKernelError, called, echo
from aotc.kernels._entry import add_guard, direct_guard, entry_for, has_guard
from aotc.kernels._decision import axis_value
from aotc.kernels._keys import choice_key, plan_key
from aotc.kernels._launch import launch
from aotc.kernels._plans import PlanStore
from aotc.kernels._traced import constant_when_traced

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.index import IndexKernel
    from aotc.index.families import KernelForm

__all__ = ["Layout", "dtype_hint", "layout_key"]


def layout_key(kernel: IndexKernel | KernelForm) -> tuple[Any, ...]:
    """What a call binds ``kernel`` (or a form's kernels) by: each array's binding name and role, and
    each scalar the caller passes (its binding name, and int or float), in
    declared order. Dimensions and strides, bound from the arrays, are not in it."""
    key = []
    for p in kernel.signature or ():
        if not p.scalar:
            key.append((p.arg, p.role))
        elif p.extent:
            key.append((p.arg, "extent"))
        elif not p.dim:
            key.append((p.arg, "float" if DTYPES[p.dtype].is_float else "int"))
    return tuple(key)


def dtype_hint(axis: str, value: Any, values: Any) -> str:
    """Where an axis of dtype names was given a framework's dtype (``np.float32``,
    ``torch.bfloat16``, a JAX type, NumPy's name "float32") that names one of
    them, how to say it."""
    name = value if isinstance(value, str) else getattr(value, "__name__", None) or str(value).removeprefix("torch.")
    found = by_numpy(name) if isinstance(name, str) else None
    return f"; pass {axis}={found.name!r}" if found is not None and found.name in values else ""


class Layout:
    """The binding of some kernels of family ``family`` (the ``Family``) that share a
    ``layout_key``; ``name`` is its op's name (the family's, where it has one layout)."""

    def __init__(self, family: Any, name: str, forms: list[KernelForm]) -> None:
        self.family = family
        self.library = family.library
        self.name = name
        self.forms = tuple(forms)
        # Each form's parameters by binding name (arrays and the caller's scalars).
        self._form_bound = {f.index: {p.arg: p for p in f.signature if not p.scalar or not p.dim} for f in forms}
        # The kernels calls have chosen (checked), by name, and their parameters by
        # binding name; any other kernel of the layout is checked when looked up.
        self.kernels: dict[str, IndexKernel] = _Reached(self)
        self.bound: dict[str, dict[str, Any]] = _Reached(self)
        signature = forms[0].signature
        arrays = [p for p in signature if not p.scalar]
        self.given = tuple(p.arg for p in arrays if p.role != "out")
        self.outs = tuple(p.arg for p in arrays if p.role == "out")
        self.results = tuple(p.arg for p in arrays if p.role != "in")
        self.inouts = tuple(p.arg for p in arrays if p.role == "inout")
        # The caller's scalars: its arguments and the out arrays' extents it gives, by binding name.
        scalars = [p for p in signature if p.scalar and not p.dim]
        self.arguments = {p.arg: p.dtype for p in scalars}
        self.extents = tuple(p.arg for p in scalars if p.extent)
        # A dimension that only packed arrays hold, in words: the caller may give
        # it exactly (by keyword), else it is the words' capacity (_decision).
        self.lengths = _lengths(forms)
        self.sizes = self.extents + self.lengths  # every size the caller may give
        self.positional = tuple(p.arg for p in signature if (not p.scalar and p.role != "out") or (p.scalar and not p.dim))
        # Each axis's values among the forms' kernels, in the family's order.
        held: dict[str, set[Any]] = {}
        for form in forms:
            for axis, values in form.axes.items():
                held.setdefault(axis, set()).update(values)
        self.axes = {axis: tuple(v for v in values if v in held[axis]) for axis, values in family.axes.items() if axis in held}
        # The axes a call may choose by keyword: those with more than one value here.
        self.open_axes = tuple(axis for axis, values in self.axes.items() if len(values) > 1)
        # Everything the layout's calls work out once: kernel choices, decisions,
        # the guards and plans of every route, recorded calls, JAX's callbacks.
        self.plans = PlanStore()
        self.entry = entry_for(self)  # None: the Layout itself is called

    def __repr__(self) -> str:
        outs = "".join(f", {name}=None" for name in self.outs)
        rest = "".join(f", {axis}=None" for axis in self.open_axes)
        return f"<aotc kernel binding {self.library.name}.{self.name}({', '.join(self.positional)}, *{outs}{rest}, stream=None)>"

    # --- arguments ---------------------------------------------------------------

    def bind_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(values by binding name, axes given) from a call's arguments."""
        if len(args) > len(self.positional):
            msg = f"takes {len(self.positional)} positional arguments ({', '.join(self.positional)}), got {len(args)}"
            raise called(ArgumentTypeError(msg), self.name)
        values = dict(zip(self.positional, args))
        axes = {}
        for key, value in kwargs.items():
            if key in self.family.axes:
                if value is not None:
                    axes[key] = value
            elif key in values:
                msg = f"{key}: given twice, by position and by name"
                raise called(ArgumentTypeError(msg), self.name)
            elif key in self.positional or key in self.outs or key in self.lengths:
                values[key] = value
            else:
                known = ", ".join((*self.positional, *self.outs, *self.lengths, *self.family.axes, "stream"))
                msg = f"unknown argument {key!r} (known: {known})"
                raise called(ArgumentTypeError(msg), self.name)
        missing = [name for name in self.positional if name not in values]
        if missing:
            msg = f"missing argument {missing[0]}"
            raise called(ArgumentTypeError(msg), self.name)
        return values, axes

    def not_a_value(self, axis: str, value: Any) -> ArgumentError:
        """The one-line error for an axis named with a value no kernel here has."""
        values = self.axes[axis]
        return called(ArgumentError(f"{axis}: {echo(value)} is not one of its values ({', '.join(map(str, values))}){dtype_hint(axis, value, values)}"), self.name)

    # --- the call ------------------------------------------------------------------

    def __call__(self, *args: Any, stream: Any = None, **kwargs: Any) -> Any:
        """The call of a layout with no generated entry (``entry_for``), as its entry would make it."""
        try:
            values, axes = self.bind_arguments(args, kwargs)
            return self.call(values, axes, stream)
        except (ArgumentError, ArgumentTypeError) as exc:
            called(exc, self.name)
            raise

    def full(self, args: tuple[Any, ...], outs: dict[str, Any], stream: Any, kwargs: dict[str, Any]) -> Any:
        """The generated entry's way in when no guard answered: its positional
        arguments, its out arrays (None: not given) and its other keywords."""
        values, axes = self.bind_arguments(args, kwargs)
        values.update((name, out) for name, out in outs.items() if out is not None)
        return self.call(values, axes, stream)

    def call(self, values: dict[str, Any], axes: dict[str, Any], stream: Any) -> Any:
        """The call, on the route its arrays' kinds take (``ArrayKind.route``): any
        JAX array sends it through XLA, PyTorch tensors through the layout's op,
        anything else is launched directly. The entry's guard of the first
        array's type is made here, for the plan this call leaves."""
        kinds = {name: kind_of(values[name], name) for name in self.given}
        routes = {kind.route for kind in kinds.values()}
        route = "jax" if "jax" in routes else kinds[self.given[0]].route
        if route == "jax":
            from aotc.kernels import _jax

            return _jax.call(self, values, axes, stream)
        if route == "torch":
            # Here, not at the top: a NumPy user's first call would load them too (start-up).
            from aotc.kernels import _torch_guard, _torch_route

            _torch_guard.give_guard(self, kinds[self.given[0]], values[self.given[0]])
            if _torch_route.to_op(self, values, stream):
                return _torch_route.call_op(self, values, axes)
        return self.run(values, axes, stream)

    def run(self, values: dict[str, Any], axes: dict[str, Any], stream: Any) -> Any:
        """The direct route, for arguments already bound: the plan of arrays alike
        where one is kept, else the launch, which leaves one (and the entry a
        guard of the arrays' type, to find it). Returns the out and inout arrays (one bare)."""
        key, arrays = self._direct(values, axes, stream)
        if key is not None:
            first = values[self.given[0]]
            kind = kind_of(first, self.given[0])
            if kind.route == "direct" and not has_guard(self, type(first)):
                add_guard(self, type(first), direct_guard(self, kind, type(first)))
        plan = None if key is None else self.plans.get(key)
        found = None if plan is None else plan(*[arrays[name] for name in (*self.given, *self.outs)], *[values[name] for name in self.arguments])
        if found is None:
            launched = launch(self, values, axes, stream, key)
            found = tuple(launched[name] for name in self.results)
        return found[0] if len(found) == 1 else found

    def _direct(self, values: dict[str, Any], axes: dict[str, Any], stream: Any) -> tuple[Any, dict[str, Any]]:
        """The key the entry's direct guard builds for this call, and the arrays as
        its plan takes them (Operands, where the kind's guard reads them); no key
        (None) where no guard would find one: no entry, axes the entry does not
        take, arrays of several types, a kind that keeps no plan."""
        first = values[self.given[0]]
        kind = kind_of(first, self.given[0])
        guard = kind.plan_type(first)
        arrays = {name: values.get(name) for name in (*self.given, *self.outs)}
        if self.entry is None or guard is None or kind.route == "jax" or any(a not in self.open_axes for a in axes):
            return None, arrays
        if kind.plan_operands:  # each read by its own kind, every one such a kind
            kinds = {name: kind_of(array, name) for name, array in arrays.items() if array is not None}
            if any(not k.plan_operands or k.plan_type(arrays[name]) is None for name, k in kinds.items()):
                return None, arrays
            arrays = {name: None if array is None else kinds[name].read(array, name) for name, array in arrays.items()}
        elif any(array is not None and type(array) is not guard for array in arrays.values()):
            return None, arrays
        handle = None if stream is None else stream_handle(stream, None)
        try:
            key = plan_key(self, kind, guard if kind.plan_operands else kind.name, {**values, **arrays}, axes, handle)
            hash(key)
        except TypeError:  # an unhashable axis value or size: the launch names it
            return None, arrays
        return key, arrays

    def gradients(self, values: dict[str, Any], grads: dict[str, Any], axes: dict[str, Any], stream: Any = None) -> dict[str, Any]:
        """The gradients of this layout's in arrays, by binding name, for a call
        with ``values`` (its in arrays, and the results its gradient kernels keep)
        and ``grads`` (its results' gradients), by binding name (``_gradients``)."""
        # Here, not at the top: every first call would load it (start-up); a
        # package's submodule costs the least an import statement can.
        from aotc.kernels import _gradients

        try:
            framework: Any = _gradients.Direct(stream)
            if kind_of(values[self.given[0]], self.given[0]).route == "jax":  # immutable arrays: the gradients are its route's results
                from aotc.kernels._jax import JAX_GRADIENTS

                framework = JAX_GRADIENTS
            return _gradients.call_gradients(self, values, grads, axes, framework)
        except (ArgumentError, ArgumentTypeError) as exc:
            called(exc, self.name)
            raise

    # --- the kernel ---------------------------------------------------------------

    def choose(self, dtypes: dict[str, str], axes: dict[str, Any], shapes: dict[str, tuple[Any, ...]]) -> IndexKernel:
        """The kernel for arrays of these dtypes and shapes (by binding name; their
        ranks choose) and these axis values."""
        # Shapes only name the arrays in a refusal: symbolic ones (a traced call's) are not passed.
        known = tuple((name, tuple(shape) if all(type(e) is int for e in shape) else (0,) * len(shape)) for name, shape in shapes.items())
        return self.kernels[_chosen(self, tuple(dtypes.items()), tuple(axes.items()), known)]

    def admit(self, kernel: IndexKernel, form: KernelForm) -> None:
        """Kernel ``kernel`` (checked, of ``form``) is one this layout's calls launch."""
        self.bound[kernel.name] = self._form_bound[form.index]
        self.kernels[kernel.name] = kernel

    def every_kernel(self) -> list[IndexKernel]:
        """Every kernel of this layout, each checked and admitted: a scan of the
        family's directory, for a refusal that lists them, never for a call."""
        return [self.kernels[name] for name, _, form in self.family.catalog.members() if form in self._form_bound]

    def reach(self, name: str) -> None:
        """Check and admit kernel ``name``; UnknownKernelError (a KeyError, as a
        mapping's lookup raises) where it is not this layout's."""
        kernel, form = self.family.catalog.kernel(name)
        if form.index not in self._form_bound:
            raise UnknownKernelError(f"{name}: not a kernel of {self.name}()'s layout")
        self.admit(kernel, form)

    def _choose(self, dtypes: dict[str, str], axes: dict[str, Any], ranks: dict[str, int], shapes: dict[str, Any]) -> str:
        forms = list(self.forms)
        named = {}  # the axes given that vary here, by value
        for axis, given in axes.items():
            if axis not in self.axes:
                continue  # an axis of the family that does not vary here: the caller already chose this layout
            value = named[axis] = axis_value(self, axis, given)
            forms = [f for f in forms if value in f.axes.get(axis, ())]
            if not forms:
                raise called(ArgumentError(self._no_kernel(axes)), self.name)
        seen: dict[str, str] = {}  # the dtypes of the arrays checked so far
        for name, dtype in dtypes.items():
            if name in self.outs:
                continue  # an out array given chooses only among kernels the inputs leave (below)
            fits = [f for f in forms if self._form_bound[f.index][name].dtype == dtype]
            if not fits:
                raise called(ArgumentError(self._dtype_refusal(name, dtype, forms, seen, axes)), self.name)
            forms = fits
            seen[name] = dtype
        for name, dtype in dtypes.items():
            fits = [f for f in forms if self._form_bound[f.index][name].dtype == dtype] if name in self.outs else forms
            if fits:  # none: the out array's own check names its dtype
                forms = fits
        # A kernel that takes the arrays as they are wins over one that must
        # leave out an optional dimension (a single matrix over a batch of one).
        scored = []
        for form in forms:
            left_out = 0
            for name, rank in ranks.items():
                declared = self._form_bound[form.index][name]
                dropped = len(declared.shape) + (declared.lanes > 1) - rank
                if not 0 <= dropped <= declared.optional:
                    break
                left_out += dropped
            else:
                scored.append((left_out, form))
        if not scored:
            self._refuse_rank(forms, shapes)
        best = min(score for score, _ in scored)
        forms = [form for score, form in scored if score == best]
        return self._kernel_at(named, forms, axes)

    def _kernel_at(self, named: dict[str, Any], forms: list[KernelForm], axes: dict[str, Any]) -> str:
        """The one kernel of ``forms`` at the axis values ``named`` (an axis the forms hold
        one value of is that value), checked and admitted: found in the directory."""
        point = dict(named)
        for axis in self.axes:
            held = {v for f in forms for v in f.axes.get(axis, ())}
            if axis not in point and len(held) == 1:
                point[axis] = next(iter(held))
        catalog = self.family.catalog
        indexes = {f.index for f in forms}
        # A whole point is one kernel's, whatever its form: two found there leave no choice.
        whole = catalog.find(point) if len(point) == len(catalog.axes) else None
        found = catalog.find(point, indexes) if whole is None or len(whole) > 1 else [hit for hit in whole if hit[2] in indexes]
        if not found:
            raise called(ArgumentError(self._no_kernel(axes)), self.name)
        if len(found) > 1:
            found = catalog.find(point, indexes, limit=sum(f.count for f in forms))
            open_axes = [a for a in self.open_axes if len({p.get(a) for _, p, _ in found}) > 1]
            axis = open_axes[0] if open_axes else next(iter(self.axes), "")
            values = ", ".join(sorted({str(p[axis]) for _, p, _ in found if axis in p}))
            msg = f"{len(found)} kernels fit these arrays; choose one with {axis}= ({values})"
            raise called(ArgumentError(msg), self.name)
        name, reached, _ = found[0]
        twins = whole if whole is not None else catalog.find(reached)  # the axis values a call reaches are one kernel's
        if len(twins) > 1:
            msg = f"{self.library.index.where}: kernels.{twins[1][0]}: has the axes of kernel {twins[0][0]!r}, in family {catalog.name}"
            raise IndexFormatError(msg)
        kernel, form = catalog.kernel(name)
        self.admit(kernel, form)
        return name

    def _no_kernel(self, axes: dict[str, Any]) -> str:
        chosen = ", ".join(f"{a}={v}" for a, v in axes.items())
        return f"no kernel for {chosen}"

    def _dtype_refusal(self, name: str, dtype: str, matches: list[KernelForm], seen: dict[str, str], axes: dict[str, Any]) -> str:
        """The one line for an array of a dtype no kernel left takes there."""
        have = sorted({self._form_bound[f.index][name].dtype for f in matches})
        like = next((other for other, got in seen.items() if have == [got] and self._tied(name, other)), None)
        if like is not None:  # the kernels take this array in the dtype an earlier one has
            return f"{name}: dtype {dtype} does not match {like}'s {seen[like]}"
        # The axes that chose these kernels; a dtype axis only where it types this
        # array (dtype="f64" chose f64 for it: the array is not to blame), not
        # where the arrays' own dtypes chose it for the others.
        chosen = ", ".join(
            f"{a}={v}" for a, v in axes.items() if a in self.open_axes and (not set(self.axes[a]) <= DTYPES.keys() or self._typed_by(name, a))
        )
        where = f" for {chosen}" if chosen and len(matches) < len(self.forms) else ""
        listed = ", ".join(have[:-1]) + " or " + have[-1] if len(have) > 1 else have[0]
        return f"{name}: dtype {dtype}, but its kernels{where} take {listed} there"

    def _typed_by(self, name: str, axis: str) -> bool:
        """Whether array ``name``'s dtype is axis ``axis``'s value at every kernel of this layout."""
        return all(tuple(f.axes.get(axis, ())) == (self._form_bound[f.index][name].dtype,) for f in self.forms)

    def _tied(self, name: str, other: str) -> bool:
        """Whether arrays ``name`` and ``other`` take one dtype at every kernel of this
        layout, and more than one over them (a dtype axis ties them): only then is
        one refused for not matching the other, never two arrays of one fixed dtype."""
        pairs = {(bound[name].dtype, bound[other].dtype) for bound in self._form_bound.values()}
        return len(pairs) > 1 and all(mine == theirs for mine, theirs in pairs)

    def _refuse_rank(self, forms: list[KernelForm], shapes: dict[str, Any]) -> None:
        """The one line for an array of a rank no kernel takes: the ranks the ``forms`` left take there."""
        for name, shape in shapes.items():
            declared = [self._form_bound[f.index][name] for f in forms]
            ranks = sorted({r for d in declared for r in _ranks(d)})
            if len(shape) not in ranks:
                widest = max(declared, key=lambda d: len(d.shape))
                text = ", ".join(f"{r}-D" for r in ranks[:-1]) + " or " + f"{ranks[-1]}-D" if len(ranks) > 1 else f"{ranks[0]}-D"
                raise called(ArgumentError(f"{name}: expected a {text} array ({shape_text(widest)}), got shape {tuple(shape)}"), self.name)
        ranks = ", ".join(f"{n}: {len(s)}-D" for n, s in shapes.items())
        msg = f"no one kernel takes arrays of these ranks ({ranks})"
        raise called(ArgumentError(msg), self.name)


@constant_when_traced  # fills the store: where torch.compile traces a call, run, not traced (_traced)
def _chosen(layout: Layout, dtypes: tuple[Any, ...], axes: tuple[Any, ...], shapes: tuple[Any, ...]) -> str:
    """``Layout.choose``'s kernel name, kept in the layout's store."""
    ranks = {name: len(shape) for name, shape in shapes}
    key = choice_key(dict(dtypes), dict(axes), ranks)
    name = layout.plans.get(key)
    if name is None:
        name = layout._choose(dict(dtypes), dict(axes), ranks, dict(shapes))  # noqa: SLF001 - its own module's class
        try:
            layout.plans.keep(key, name)
        except TypeError:  # an axis value of a 0-d array (np.array(64)): chosen again each call
            pass
    return name


class _Reached(dict):  # dict[str, Any]
    """A layout's kernels (or their parameters) by name: those reached so far, and
    any other of the layout's, checked and admitted when looked up."""

    __slots__ = ("_layout",)

    def __init__(self, layout: Layout) -> None:
        super().__init__()
        self._layout = layout

    def __missing__(self, name: str) -> Any:
        self._layout.reach(name)
        return dict.__getitem__(self, name)


def _lengths(forms: list[KernelForm]) -> tuple[str, ...]:
    """The binding names of the dimensions that only packed in arrays hold
    (as the last dimension, in words), in any of ``forms``."""
    found: dict[str, None] = {}
    for form in forms:
        signature = form.signature
        unpacked = {e for p in signature if not p.scalar and p.role != "out" and not p.pack for e in p.shape}
        packed = {p.shape[-1] for p in signature if not p.scalar and p.role != "out" and p.pack and type(p.shape[-1]) is str}
        found.update((p.arg, None) for p in signature if p.scalar and p.name in packed - unpacked)
    return tuple(found)


def _ranks(declared: Any) -> range:
    """The ranks an array may have, as ``declared``: its optional dimensions left out or not, and a lanes axis."""
    extra = declared.lanes > 1
    return range(len(declared.shape) - declared.optional + extra, len(declared.shape) + extra + 1)


def shape_text(declared: Any) -> str:
    """A declared shape as errors show it: the optional dimensions in brackets, lanes last."""
    parts = [f"[{e}]" if i < declared.optional else str(e) for i, e in enumerate(declared.shape)]
    if declared.lanes > 1:
        parts.append(f"then {declared.lanes} values an element")
    return ", ".join(parts)
