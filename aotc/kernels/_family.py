"""One declared family, callable: its kernels grouped into layouts.

A family's kernels that a call binds the same way form a layout
(``_binding``); most families have one, and ``over(lib).softmax`` is its
generated entry. A family whose kernels differ in parameters has several,
each named for the axis values that set it apart: tropical's ``gemm`` has
``gemm_forward``, ``gemm_argmax``, ``gemm_backward_a`` and so on, each its
own entry, op and JAX route. Calling the family itself picks the layout from
the axes the call names.
"""

from __future__ import annotations

from aotc.errors import ArgumentError, ArgumentTypeError, called, echo
from aotc.kernels._binding import Layout, dtype_hint, layout_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.index.families import FamilyCatalog, KernelForm

__all__ = ["Family"]


class Family:
    """The binding of declared family ``name`` of a library: ``layouts`` by op
    name, made from the family's catalog (``aotc.index.families``): its forms,
    grouped by what a call binds, never its kernels. ``bindings`` is the
    library's ``Kernels``, which its gradients reach through."""

    def __init__(self, bindings: Any, name: str, catalog: FamilyCatalog) -> None:
        self.bindings = bindings
        self.library = bindings.library
        self.name = name
        self.catalog = catalog
        groups: dict[tuple[Any, ...], list[KernelForm]] = {}
        for form in catalog.forms:
            groups.setdefault(layout_key(form), []).append(form)
        self.axes = dict(catalog.axes)
        names = _layout_names(name, [_axis_values(group) for group in groups.values()], tuple(self.axes))
        self.layouts = {op: Layout(self, op, group) for op, group in zip(names, groups.values())}
        self._layout_of_form = {form.index: layout for layout in self.layouts.values() for form in layout.forms}

    def layout_of(self, kernel: str) -> Layout:
        """The layout that binds kernel ``kernel`` of this family (checked, and admitted there)."""
        checked, form = self.catalog.kernel(kernel)
        layout = self._layout_of_form[form.index]
        layout.admit(checked, form)
        return layout

    def __repr__(self) -> str:
        return f"<aotc kernel family {self.library.name}.{self.name}: {', '.join(self.layouts)}>"

    @property
    def only(self) -> Layout | None:
        """The family's one layout, where it has one."""
        return next(iter(self.layouts.values())) if len(self.layouts) == 1 else None

    def layout(self, **axes: Any) -> Layout:
        """The layout whose kernels have these axis values; one line where none or several do."""
        fits = [
            layout for layout in self.layouts.values()
            if all(axis not in self.axes or (_hashable(value) and value in layout.axes.get(axis, ())) for axis, value in axes.items())
        ]  # fmt: skip
        unknown = [axis for axis in axes if axis not in self.axes]
        if unknown:
            msg = f"unknown axis {unknown[0]!r} (axes: {', '.join(self.axes)})"
            raise called(ArgumentTypeError(msg), self.name)
        if len(fits) == 1:
            return fits[0]
        if not fits:
            chosen = ", ".join(f"{a}={echo(v)}" for a, v in axes.items())
            hints = "".join(dtype_hint(a, v, self.axes[a]) for a, v in axes.items())
            msg = f"no kernel has {chosen} (its layouts: {', '.join(self.layouts)}){hints}"
            raise called(ArgumentError(msg), self.name)
        apart = [a for a in self.axes if len({layout.axes.get(a) for layout in fits}) > 1]
        msg = f"{len(fits)} of its layouts fit ({', '.join(layout.name for layout in fits)}); choose one with {apart[0] if apart else 'its name'}="
        raise called(ArgumentError(msg), self.name)

    def __call__(self, *args: Any, stream: Any = None, **kwargs: Any) -> Any:
        """Call the layout the axes among ``kwargs`` pick, with the rest: its refusals name the family, which was called."""
        try:
            only = self.only
            if only is not None:
                return only(*args, stream=stream, **kwargs)
            axes = {key: value for key, value in kwargs.items() if key in self.axes}
            return self.layout(**axes)(*args, stream=stream, **kwargs)
        except (ArgumentError, ArgumentTypeError) as exc:
            exc.function = self.name
            raise


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _axis_values(forms: list[KernelForm]) -> dict[str, set[Any]]:
    found: dict[str, set[Any]] = {}
    for form in forms:
        for axis, values in form.axes.items():
            found.setdefault(axis, set()).update(values)
    return found


def _apart(group: dict[str, set[Any]], others: list[dict[str, set[Any]]], axis: str) -> int:
    """How many of ``others`` lack ``group``'s one value of ``axis``."""
    value = next(iter(group[axis]))
    return sum(1 for g in others if value not in g.get(axis, ()))


def _layout_names(family: str, groups: list[dict[str, set[Any]]], order: tuple[str, ...]) -> list[str]:
    """Each layout's op name: the family's, for one layout; else the family's
    followed by the axis values that set the layout apart from the others.
    For each layout, axes of one value there are taken, those that set it apart
    from the most others first, until none is left that shares every one
    (``gemm_forward``, ``gemm_forward_packed``). Names still alike are numbered."""
    if len(groups) == 1:
        return [family]
    names = []
    for i, group in enumerate(groups):
        others = [g for j, g in enumerate(groups) if j != i]
        single = [a for a in order if len(group.get(a, ())) == 1]
        chosen: list[str] = []
        while others and single:
            best = max(single, key=lambda a: (_apart(group, others, a), -order.index(a)))
            if _apart(group, others, best) == 0:
                break
            value = next(iter(group[best]))
            others = [g for g in others if value in g.get(best, ())]
            chosen.append(best)
            single.remove(best)
        tag = "_".join(str(next(iter(group[a]))) for a in order if a in chosen)
        names.append(f"{family}_{tag}" if tag else family)
    for i, name in enumerate(names):
        if names.count(name) > 1 or name in names[:i]:
            names[i] = f"{name}_{i}"
    return names
