"""A declared family's ``backward:``: the kernels that compute its gradients.

``backward: {family: softmax_backward, saves: [y]}`` pairs a family with the
kernels of another family (or of its own) at each of its points; a list of
such entries, each with an optional ``when``, makes a gradient of several
kernels, or routes a point through another kernel of the family::

    backward:
      - {when: {pass: argmax}, axes: {pass: backward_a}, saves: [Kstar, B]}
      - {when: {pass: argmax}, axes: {pass: backward_b}, saves: [Kstar, A]}
      - {when: {pass: forward}, through: {pass: argmax}}

A gradient entry names family F's kernel (default: this family's) at the
forward point's values of the axes F has, overridden by ``axes:``. A route
(``through:``) names this family's kernel at the point's axes overridden so:
one that computes the same outs and more, which the bindings run forward in
its place when a gradient is wanted, and whose gradient kernels they use.

Each gradient kernel's parameters are named by a convention (README, "Any
kernel"), in the manifest's names:

- an in array ``grad_<o>`` takes the gradient of the forward's out or inout
  array ``o``; an in array named as one of ``saves`` takes that array of the
  forward call (an input, or a result);
- an out array ``grad_<i>`` is the gradient of the forward's in array ``i``;
- a scalar is the forward call's argument of the same name and type, or
  else a size the forward call binds from its in arrays' shapes (``cols`` of
  ``x: [rows, cols]``), of any integer type: a gradient kernel learns an
  extent of an input without saving it.

Every point is resolved here, once every family is expanded, to kernel names
(``Gradient``, what the index records), each problem one line naming the
entry's key and the point. The runtime registers the autograd formula from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aotc.build._checks import Checker, describe, line_of, listing
from aotc.build._family_rules import AxisValue, Rule, matches, parse_when
from aotc.build._yaml import LineDict, LineList, key_text
from aotc.build.signature import ArrayParam, ScalarParam, Signature
from aotc.dtypes import SCALAR_TYPES
from aotc.errors import echo

__all__ = ["BackwardEntry", "Gradient", "parse_backward", "resolve_backwards"]


@dataclass(frozen=True)
class BackwardEntry:
    """One entry of ``backward:``: a gradient kernel (``family``, ``axes``
    overriding the point's, ``saves``) or, where ``through``, a route to the
    kernel of this family at the point's axes overridden by ``axes``."""

    when: Rule | None
    family: str
    axes: tuple[tuple[str, AxisValue], ...]
    saves: tuple[str, ...]
    through: bool
    key: str
    line: int


@dataclass(frozen=True)
class Gradient:
    """A kernel's backward resolved to kernel names, as the index records it: its
    gradient kernels with the forward arrays each saves, or its route (the
    kernel it is differentiated through)."""

    kernels: tuple[tuple[str, tuple[str, ...]], ...] = ()
    through: str = ""

    def to_json(self) -> dict[str, object]:
        if self.through:
            return {"through": self.through}
        return {"kernels": [{"kernel": name, "saves": list(saves)} for name, saves in self.kernels]}


def parse_backward(check: Checker, value: Any, key: str, line: int, family: str, axes: dict[str, tuple[AxisValue, ...]]) -> tuple[BackwardEntry, ...]:
    """``backward:``, one entry or a list of them; their targets are resolved per point."""
    if not isinstance(value, LineList):
        return (_entry(check, value, key, line, family, axes),)
    items = check.sequence(value, key, line)
    return tuple(_entry(check, item, f"{key}[{i}]", item_line, family, axes) for i, (item, item_line) in enumerate(zip(items, items.item_lines)))


def _entry(check: Checker, value: Any, key: str, line: int, family: str, axes: dict[str, tuple[AxisValue, ...]]) -> BackwardEntry:
    fields = check.mapping(value, key, line, optional=("when", "family", "axes", "saves", "through"))
    when = parse_when(check, fields["when"], f"{key}.when", line_of(fields, "when"), axes) if "when" in fields else None
    if "through" in fields:
        other = next((k for k in fields if k not in ("when", "through")), None)
        if other is not None:
            check.fail(line_of(fields, other), f"{key}.{other}", "a route (through:) takes only when: the kernel it names has the gradient kernels")
        return BackwardEntry(when, family, _route(check, fields["through"], f"{key}.through", line_of(fields, "through"), axes), (), True, key, line)
    target = check.identifier(fields["family"], f"{key}.family", line_of(fields, "family")) if "family" in fields else family
    overrides: list[tuple[str, AxisValue]] = []
    if "axes" in fields:
        table = check.mapping(fields["axes"], f"{key}.axes", line_of(fields, "axes"), optional=fields["axes"].keys() if isinstance(fields["axes"], LineDict) else ())
        for axis, axis_value in table.items():
            at = f"{key}.axes.{key_text(axis)}"
            check.identifier(axis, at, line_of(table, axis))
            if isinstance(axis_value, bool) or not isinstance(axis_value, (int, str)):
                check.fail(line_of(table, axis), at, f"expected one value of {target}'s axis {axis}, got {describe(axis_value)}")
            overrides.append((axis, axis_value))
    saves: list[str] = []
    if "saves" in fields:
        raw = fields["saves"]
        if not isinstance(raw, LineList):
            check.fail(line_of(fields, "saves"), f"{key}.saves", f"expected a list of array names, got {describe(raw)}")
        for item, item_line in zip(raw, raw.item_lines):
            saves.append(check.identifier(item, f"{key}.saves", item_line))
    return BackwardEntry(when, target, tuple(overrides), tuple(saves), False, key, line)


def _route(check: Checker, value: Any, key: str, line: int, axes: dict[str, tuple[AxisValue, ...]]) -> tuple[tuple[str, AxisValue], ...]:
    """``through: {axis: value}``: this family's axes the route changes, one value each."""
    table = check.mapping(value, key, line, optional=tuple(axes))
    if not table:
        check.fail(line, key, f"must name at least one of the axes ({listing(axes)})")
    for axis, axis_value in table.items():
        if isinstance(axis_value, bool) or axis_value not in axes[axis]:
            check.fail(line_of(table, axis), f"{key}.{axis}", f"{echo(axis_value)} is not a value of axis {axis} (declared: {listing(map(str, axes[axis]))})")
    return tuple(table.items())


class _Kernels:
    """The declared kernels by family, found by their axis values."""

    def __init__(self, kernels: list[Any]) -> None:
        self.by_family: dict[str, list[Any]] = {}
        for kernel in kernels:
            self.by_family.setdefault(kernel.family, []).append(kernel)

    def at(self, family: str, wanted: dict[str, AxisValue]) -> list[Any]:
        return [k for k in self.by_family[family] if all(dict(k.axes).get(a) == v for a, v in wanted.items())]


def resolve_backwards(check: Checker, kernels: list[Any], entries: dict[str, tuple[BackwardEntry, ...]]) -> dict[str, Gradient]:
    """Each kernel of a family with ``backward:`` entries, by name, with its
    gradient at its point (a kernel whose point no entry matches has none)."""
    table = _Kernels(kernels)
    resolved: dict[str, Gradient] = {}
    for kernel in kernels:
        family_entries = entries.get(kernel.family, ())
        matching = [e for e in family_entries if matches(e.when, dict(kernel.axes))]
        if matching and matching[0].through:
            resolved[kernel.name] = _resolve_route(check, table, kernel, matching, family_entries)
        elif matching:
            resolved[kernel.name] = _resolve_gradient(check, table, kernel, matching)
    return resolved


def _resolve_route(check: Checker, table: _Kernels, kernel: Any, matching: list[BackwardEntry], family_entries: tuple[BackwardEntry, ...]) -> Gradient:
    entry = matching[0]
    at = f"at {kernel.name}"  # a kernel's name is its point's (unique in a library)
    if len(matching) > 1:
        check.fail(matching[1].line, matching[1].key, f"{at}, {entry.key} routes the point through another kernel, so no other entry may match it")
    found = table.at(kernel.family, {**dict(kernel.axes), **dict(entry.axes)})
    if not found or found[0] is kernel:
        check.fail(entry.line, f"{entry.key}.through", f"{at}, names {'no kernel of ' + kernel.family if not found else 'the kernel itself'}")
    target = found[0]
    theirs = {p.name: p for p in target.signature.arrays}
    for out in (p for p in kernel.signature.arrays if p.role != "in"):
        other = theirs.get(out.name)
        if other is None or (other.role, other.dtype) != (out.role, out.dtype):
            check.fail(entry.line, f"{entry.key}.through", f"{at}, {target.name} does not compute {out.name} ({out.role}, {out.dtype.name}) as {kernel.name} does")
    own = [e for e in family_entries if matches(e.when, dict(target.axes))]
    if not own or own[0].through:
        check.fail(entry.line, f"{entry.key}.through", f"{at}, {target.name} {'is routed too' if own else 'has no gradient'}: a route leads to gradient kernels")
    return Gradient(through=target.name)


def _resolve_gradient(check: Checker, table: _Kernels, kernel: Any, matching: list[BackwardEntry]) -> Gradient:
    at = f"at {kernel.name}"  # a kernel's name is its point's (unique in a library)
    found: list[tuple[str, tuple[str, ...]]] = []
    computed: dict[str, str] = {}
    for entry in matching:
        if entry.through:
            check.fail(entry.line, entry.key, f"{at}, this route matches beside gradient kernels ({matching[0].key}); a routed point has no other entry")
        if entry.family not in table.by_family:
            check.fail(entry.line, f"{entry.key}.family", f"{echo(entry.family)} is not a declared family of this manifest (declared: {listing(table.by_family)})")
        theirs = {a for k in table.by_family[entry.family] for a, _ in k.axes}
        for axis, _ in entry.axes:
            if axis not in theirs:
                check.fail(entry.line, f"{entry.key}.axes.{axis}", f"{entry.family} has no axis {axis} (axes: {listing(sorted(theirs))})")
        wanted = {**{a: v for a, v in kernel.axes if a in theirs}, **dict(entry.axes)}
        targets = table.at(entry.family, wanted)
        if len(targets) != 1 or targets[0] is kernel:
            values = ", ".join(f"{a}={v}" for a, v in entry.axes) or "its own axes"
            what = f"{len(targets) or 'no'} kernel{'s' if len(targets) > 1 else ''} of {entry.family}"
            if targets and targets[0] is kernel:
                what = "the kernel itself"
            check.fail(entry.line, entry.key, f"{at}, names {what} ({values}); a gradient entry names one other kernel")
        target = targets[0]
        for grad in _check_convention(check, entry, at, kernel, target):
            if grad in computed:
                check.fail(entry.line, entry.key, f"{at}, {grad} is computed by {target.name} and by {computed[grad]}")
            computed[grad] = target.name
        found.append((target.name, entry.saves))
    return Gradient(tuple(found))


def _check_convention(check: Checker, entry: BackwardEntry, at: str, forward: Any, backward: Any) -> list[str]:
    """Hold a gradient kernel's parameters to the convention (manifest names); returns the grad_<in> it computes."""
    key, line = entry.key, entry.line
    mine: Signature = forward.signature
    arrays = {p.name: p for p in mine.arrays}
    inout = [name for name, p in arrays.items() if p.role == "inout"]
    if inout:
        check.fail(line, key, f"{forward.name} writes {inout[0]} in place (inout); autograd pairs only kernels whose results are out arrays")
    for name in entry.saves:
        if name not in arrays:
            check.fail(line, f"{key}.saves", f"{name!r} is not an array of {forward.name} (arrays: {listing(arrays)})")
    arguments = {p.name: p.type for p in mine.params if isinstance(p, ScalarParam) and not p.dim}
    # The sizes the forward call binds from its in arrays' shapes: a gradient
    # kernel takes them by name as it takes arguments, so that it needs no
    # saved input (an embedding table) to learn one extent of it.
    sizes = {e for p in mine.arrays if p.role != "out" for e in p.shape if isinstance(e, str)}
    gradients = []
    for param in backward.signature.params:
        where = f"{backward.name}'s parameter {param.name}"
        if isinstance(param, ScalarParam):
            if param.dim or arguments.get(param.name) == param.type:
                continue
            # Short: the line also holds the manifest's path and the key (a fuzzed case ran past 300 characters).
            if param.name in sizes:
                if SCALAR_TYPES[param.type].kind not in ("int", "uint"):
                    check.fail(line, key, f"{at}, {where} ({param.type}) is a size {forward.name} binds from its arrays: an integer")
            elif param.extent:
                check.fail(line, key, f"{at}, {where} sizes only out arrays, yet {forward.name} binds no size of that name from its in arrays")
            else:
                check.fail(line, key, f"{at}, {where} ({param.type}) is an argument {forward.name} does not take")
            continue
        assert isinstance(param, ArrayParam)
        target = param.name.removeprefix("grad_")
        if param.role == "out":
            if not param.name.startswith("grad_") or target not in arrays or arrays[target].role != "in":
                ins = [f"grad_{n}" for n, p in arrays.items() if p.role == "in"]
                check.fail(line, key, f"{at}, {where} is an out array, so it must be the gradient of an in array ({listing(ins)})")
            gradients.append(param.name)
        elif param.name in entry.saves:
            continue
        elif not param.name.startswith("grad_") or target not in arrays or arrays[target].role == "in":
            results = [f"grad_{n}" for n, p in arrays.items() if p.role != "in"]
            check.fail(line, key, f"{at}, {where} is neither the gradient of a result ({listing(results)}) nor a saved array (saves: {listing(entry.saves)})")
    if not gradients:
        check.fail(line, key, f"{at}, {backward.name} has no out array grad_<in array>: it computes no gradient")
    return gradients
