"""The sections of a declared family: its axes, its matrix over them, its
kernel-name pattern and its signature.

A declared family names its own axes (``axes: {dtype: [f32, f64], threads: [256]}``)
and its kernel's interface (``signature:``, ``launch:``); see README.md ("Any
kernel"). Each problem is one line naming the file, the line and the key, as
for the rest of the manifest (``aotc.build._checks``). What a family chooses
per point (constants, alternatives, a parameter's ``when``) is
``aotc.build._family_rules``; its launch shape is ``aotc.build._family_launch``.
"""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass
from typing import Any

from aotc.build._checks import Checker, describe, line_of, listing
from aotc.build._family_rules import AxisValue, Rule, matches, parse_when
from aotc.build._yaml import LineDict, LineList, key_text
from aotc.build.signature import ELEMENT_TYPES, ROLES, SCALAR_TYPES, ArrayParam, ScalarParam, Signature
from aotc.errors import echo

__all__ = ["FamilyAxes", "Point", "expand_points", "kernel_name", "parse_axes", "parse_signature", "point_text", "resolve_signature"]

_MAX_AXIS_VALUES = 64
# The most one-bit values a packed word holds, and values an element's lanes.
_MAX_PACK = 64
_MAX_LANES = 16

Point = tuple[tuple[str, AxisValue], ...]  # (axis, value) in the axes' order


@dataclass(frozen=True)
class FamilyAxes:
    """A family's axes, in declaration order, and the values each may take."""

    values: dict[str, tuple[AxisValue, ...]]
    line: int


def parse_axes(check: Checker, value: Any, key: str, line: int) -> FamilyAxes:
    """``axes: {name: [values...]}``: names are identifiers, values identifiers or integers."""
    table = check.mapping(value, key, line, optional=value.keys() if isinstance(value, LineDict) else ())
    if not table:
        check.fail(line, key, "must name at least one axis")
    result: dict[str, tuple[AxisValue, ...]] = {}
    for name, raw in table.items():
        axis_key, axis_line = f"{key}.{key_text(name)}", line_of(table, name)
        check.identifier(name, axis_key, axis_line)
        if isinstance(raw, LineList):
            items, item_lines = check.sequence(raw, axis_key, axis_line), raw.item_lines
        else:
            items, item_lines = [raw], [axis_line]
        if len(items) > _MAX_AXIS_VALUES:
            check.fail(axis_line, axis_key, f"{len(items)} values are more than {_MAX_AXIS_VALUES}")
        values: list[AxisValue] = []
        for item, item_line in zip(items, item_lines):
            if isinstance(item, bool) or not isinstance(item, (int, str)):
                check.fail(item_line, axis_key, f"expected a name or an integer, got {describe(item)}")
            if isinstance(item, str):
                check.identifier(item, axis_key, item_line)
            elif not 0 <= item <= 1 << 31:
                check.fail(item_line, axis_key, f"{item} is out of range (0 to 2**31)")
            if item in values:
                check.fail(item_line, axis_key, f"value {echo(item)} is listed twice")
            values.append(item)
        result[name] = tuple(values)
    return FamilyAxes(result, line)


def _pick(check: Checker, value: Any, key: str, line: int, known: tuple[AxisValue, ...]) -> tuple[AxisValue, ...]:
    """One axis of a matrix block or an exclude: a value or a list, each declared in ``axes``."""
    items = value if isinstance(value, LineList) else [value]
    item_lines = value.item_lines if isinstance(value, LineList) else [line]
    if not items:
        check.fail(line, key, "must not be empty")
    for item, item_line in zip(items, item_lines):
        if item not in known or isinstance(item, bool):
            check.fail(item_line, key, f"{echo(item)} is not a value of this axis (declared: {listing(map(str, known))})")
    return tuple(items)


@dataclass(frozen=True)
class Place:
    """Where a point comes from: its matrix block's line, and that block's own
    ``launch:`` and ``constants:`` with their keys (None where it has none)."""

    line: int
    launch: LineDict | None = None
    launch_key: str = ""
    constants: Any = None
    constants_key: str = ""


def expand_points(check: Checker, axes: FamilyAxes, matrix: Any, exclude: Any, key: str, fields: LineDict) -> list[tuple[Point, Place]]:
    """The family's points: each matrix block's product (no matrix: the axes' whole
    product), less the excludes; each with its place."""
    names = tuple(axes.values)
    blocks: list[tuple[Any, int, str]] = [(None, axes.line, f"{key}.axes")]
    if matrix is not None:
        matrix_line = line_of(fields, "matrix")
        if isinstance(matrix, LineList):
            if not matrix:
                check.fail(matrix_line, f"{key}.matrix", "must not be empty")
            blocks = [(b, bl, f"{key}.matrix[{i}]") for i, (b, bl) in enumerate(zip(matrix, matrix.item_lines))]
        else:
            blocks = [(matrix, matrix_line, f"{key}.matrix")]
    rules = []
    if exclude is not None:
        items = check.sequence(exclude, f"{key}.exclude", line_of(fields, "exclude"))
        for i, (item, item_line) in enumerate(zip(items, items.item_lines)):
            item_key = f"{key}.exclude[{i}]"
            rule = check.mapping(item, item_key, item_line, optional=names)
            if not rule:
                check.fail(item_line, item_key, f"an exclude must name at least one of the axes ({listing(names)})")
            rules.append({a: _pick(check, v, f"{item_key}.{a}", line_of(rule, a), axes.values[a]) for a, v in rule.items()})
    points: list[tuple[Point, Place]] = []
    for block, block_line, block_key in blocks:
        chosen, place = axes.values, Place(block_line)
        if block is not None:
            selected = check.mapping(block, block_key, block_line, optional=(*names, "launch", "constants"))
            override = selected.get("launch")
            if override is not None:
                check.mapping(override, f"{block_key}.launch", line_of(selected, "launch"), optional=("grid", "block", "shared", "static_shared"))
            if "constants" in selected:
                check.mapping(selected["constants"], f"{block_key}.constants", line_of(selected, "constants"), optional=selected["constants"].keys() if isinstance(selected["constants"], LineDict) else ())
            place = Place(block_line, override, f"{block_key}.launch", selected.get("constants"), f"{block_key}.constants")
            chosen = {
                a: _pick(check, selected[a], f"{block_key}.{a}", line_of(selected, a), axes.values[a]) if a in selected else axes.values[a]
                for a in names
            }
        for combo in itertools.product(*(chosen[a] for a in names)):
            point = tuple(zip(names, combo))
            if not any(all(dict(point)[a] in vs for a, vs in rule.items()) for rule in rules):
                points.append((point, place))
    return points


def kernel_name(check: Checker, pattern: Any, family: str, point: Point, constants: dict[str, Any], key: str, line: int) -> str:
    """The kernel's name: ``pattern`` formatted with the point's axis values and
    constants, or by default the family's name and every axis value, joined by ``_``."""
    if pattern is None:
        return "_".join([family, *(str(v) for _, v in point)])
    if not isinstance(pattern, str):
        check.fail(line, key, f"expected a name pattern such as '{family}_{{dtype}}', got {describe(pattern)}")
    values = {**constants, **dict(point)}
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(pattern) if field is not None]
    except ValueError as exc:
        check.fail(line, key, f"{echo(pattern)} is not a name pattern: {exc}")
    for field in fields:
        if field not in values:
            check.fail(line, key, f"{echo(pattern)} names {{{field}}}, which is not an axis or a constant here (known: {listing(values)})")
    name = pattern.format(**values)
    check.identifier(name, key, line)
    return name


def _dtype(check: Checker, value: Any, key: str, line: int, axes: FamilyAxes, constants: frozenset[str]) -> None:
    """An array's dtype: an element type's name, a dtype-valued axis, or a
    constant (whose value each point checks)."""
    if isinstance(value, str) and value in axes.values:
        bad = [v for v in axes.values[value] if v not in ELEMENT_TYPES]
        if bad:
            check.fail(line, key, f"axis {value} has value {echo(bad[0])}, which is not a dtype (dtypes: {listing(ELEMENT_TYPES)})")
    elif not isinstance(value, str) or (value not in ELEMENT_TYPES and value not in constants):
        # One listing, which listing() cuts to one short line, however many constants a family has.
        check.fail(line, key, f"expected a dtype, or an axis or constant naming one ({listing([*ELEMENT_TYPES, *axes.values, *sorted(constants)])}), got {describe(value)}")


@dataclass(frozen=True)
class _Declared:
    """One parameter as declared, before a point resolves its dtype and fixed extents."""

    name: str
    line: int
    scalar: str | None  # the scalar type, or None for an array
    dtype: Any = None  # an array's dtype name, or the axis or constant naming it
    role: str = ""
    shape: tuple[Any, ...] = ()
    optional: tuple[str, ...] = ()  # the leading dimensions a call may leave out
    strides: tuple[Any, ...] = ()  # per dimension: a stride scalar's name, or 1
    when: Rule | None = None  # the points that have this parameter; None: all
    lanes: Any = 1  # values a element, or the constant giving them
    pack: int = 0  # one-bit values a word along the last dimension


def parse_signature(check: Checker, value: Any, key: str, line: int, axes: FamilyAxes, constants: frozenset[str] = frozenset()) -> tuple[_Declared, ...]:
    """``signature: {name: spec}`` in parameter order: an array ``{array: dtype, role, shape}``
    (and ``optional: [batch]``, leading dimensions a call may leave out;
    ``strides: [s, 1]``, the strides the call binds; ``lanes``, ``pack``: see
    ``ArrayParam``), or a scalar (``i32``, or ``{scalar: i32}``). Either may
    have a ``when``: the points whose kernel takes it."""
    table = check.mapping(value, key, line, optional=value.keys() if isinstance(value, LineDict) else ())
    if not table:
        check.fail(line, key, "must declare at least one parameter")
    declared: list[_Declared] = []
    for name, spec in table.items():
        p_key, p_line = f"{key}.{key_text(name)}", line_of(table, name)
        check.identifier(name, p_key, p_line)
        if name in axes.values or name in constants:
            check.fail(p_line, p_key, f"{name} is also {'an axis' if name in axes.values else 'a constant'}; a parameter needs a name of its own")
        when = None
        if isinstance(spec, LineDict) and "when" in spec:
            when = parse_when(check, spec["when"], f"{p_key}.when", line_of(spec, "when"), axes.values)
        if isinstance(spec, str) or (isinstance(spec, LineDict) and "scalar" in spec):
            fields = check.mapping(spec, p_key, p_line, required=("scalar",), optional=("when",)) if isinstance(spec, LineDict) else None
            kind = fields["scalar"] if fields is not None else spec
            if not isinstance(kind, str) or kind not in SCALAR_TYPES:
                check.fail(p_line, p_key, f"unknown scalar type {echo(kind)} (known: {listing(SCALAR_TYPES)})")
            declared.append(_Declared(name, p_line, kind, when=when))
            continue
        fields = check.mapping(spec, p_key, p_line, required=("array", "role", "shape"), optional=("optional", "strides", "when", "lanes", "pack"))
        dtype = fields["array"]
        _dtype(check, dtype, f"{p_key}.array", line_of(fields, "array"), axes, constants)
        role = fields["role"]
        if role not in ROLES:
            check.fail(line_of(fields, "role"), f"{p_key}.role", f"expected one of {listing(ROLES)}, got {describe(role)}")
        shape = check.sequence(fields["shape"], f"{p_key}.shape", line_of(fields, "shape"))
        optional = _optional(check, fields, p_key, tuple(shape)) if "optional" in fields else ()
        strides = ()
        if "strides" in fields:
            strides = tuple(check.sequence(fields["strides"], f"{p_key}.strides", line_of(fields, "strides")))
            if len(strides) != len(shape):
                check.fail(line_of(fields, "strides"), f"{p_key}.strides", f"has {len(strides)} entries for a shape of {len(shape)}; one stride a dimension")
        lanes = fields.get("lanes", 1)
        if not ((isinstance(lanes, str) and lanes in constants) or (type(lanes) is int and 1 <= lanes <= _MAX_LANES)):
            check.fail(line_of(fields, "lanes"), f"{p_key}.lanes", f"expected 1 to {_MAX_LANES} values an element, or a constant giving them, got {describe(lanes)}")
        pack = fields.get("pack", 0)
        if "pack" in fields and not (type(pack) is int and 2 <= pack <= _MAX_PACK):
            check.fail(line_of(fields, "pack"), f"{p_key}.pack", f"expected 2 to {_MAX_PACK} one-bit values a word, got {describe(pack)}")
        declared.append(_Declared(name, p_line, None, dtype, role, tuple(shape), optional, strides, when, lanes, pack))
    _check_dimensions(check, declared, key, axes, constants)
    return tuple(declared)


def _optional(check: Checker, fields: LineDict, key: str, shape: tuple[Any, ...]) -> tuple[str, ...]:
    """``optional: [batch]``: a leading run of the shape's named dimensions (one
    name alone may stand for a list of one). Left out of a call's array, a
    dimension is 1: the kernel sees the same memory either way."""
    raw, at, at_line = fields["optional"], f"{key}.optional", line_of(fields, "optional")
    names = tuple(check.sequence(raw, at, at_line) if isinstance(raw, LineList) else [raw])
    for name in names:
        if not isinstance(name, str):
            check.fail(at_line, at, f"expected dimension names, got {describe(name)}: a fixed extent cannot be left out")
    if names != shape[: len(names)] or len(names) >= len(shape):
        lead = [e for e in shape[:-1] if isinstance(e, str)]
        check.fail(at_line, at, f"{listing(map(echo, names))} must be the shape's leading dimensions, in order, before at least one other (shape: {list(shape)}; leading names: {listing(lead) or 'none'})")
    return names


def _check_dimensions(check: Checker, declared: list[_Declared], key: str, axes: FamilyAxes, constants: frozenset[str]) -> None:
    """Every shape entry is an integer scalar of the signature, an integer axis, a
    constant or a number; every dimension is bound by an array the caller passes."""
    scalars = {d.name: d for d in declared if d.scalar is not None}
    bound: set[str] = set()
    arrays = [d for d in declared if d.scalar is None]
    if not any(d.role != "out" for d in arrays):
        check.fail(declared[0].line, key, "declares no in or inout array; a call's arrays tell its device, stream and sizes")
    for d in arrays:
        for entry in d.shape:
            if isinstance(entry, int) and not isinstance(entry, bool) and entry > 0:
                continue
            if isinstance(entry, str) and entry in scalars and scalars[entry].scalar in ("i32", "i64"):
                if d.role != "out":
                    bound.add(entry)
                continue
            if isinstance(entry, str) and (entry in constants or (entry in axes.values and all(isinstance(v, int) for v in axes.values[entry]))):
                if entry in d.optional:
                    check.fail(d.line, f"{key}.{d.name}.optional", f"{entry} is {'an axis' if entry in axes.values else 'a constant'}, fixed per kernel; only a dimension the call binds may be left out")
                continue
            reason = "neither an integer scalar of the signature, an integer axis or constant, nor a positive number"
            check.fail(d.line, f"{key}.{d.name}.shape", f"{echo(entry)} is {reason}")
    strides: dict[str, str] = {}
    for d in arrays:
        for entry in d.strides:
            at = f"{key}.{d.name}.strides"
            if isinstance(entry, int) and not isinstance(entry, bool) and entry == 1:
                continue
            if not (isinstance(entry, str) and entry in scalars and scalars[entry].scalar in ("i32", "i64")):
                check.fail(d.line, at, f"{echo(entry)} is neither an integer scalar of the signature nor 1 (a dense dimension)")
            if entry in strides or any(entry in other.shape for other in arrays):
                where = f"{strides[entry]}'s strides" if entry in strides else "a shape"
                check.fail(d.line, at, f"{entry} is also named in {where}; a stride scalar is one array's one dimension")
            strides[entry] = d.name
    for d in arrays:
        unbound = [e for e in d.shape if isinstance(e, str) and e in scalars and e not in bound]
        if unbound:
            check.fail(d.line, f"{key}.{d.name}.shape", f"dimension {unbound[0]} is named by no in or inout array, so no call can bind it")


def point_text(point: Point) -> str:
    """A point as errors name it: ``dtype=f32, threads=64``."""
    return ", ".join(f"{a}={v}" for a, v in point)


def resolve_signature(check: Checker, declared: tuple[_Declared, ...], point: Point, values: dict[str, Any], key: str) -> tuple[Signature, frozenset[str]]:
    """The signature at ``point`` (``values``: its axis values and constants): the
    parameters whose ``when`` it matches, dtypes and fixed extents replaced by
    their values. A dimension whose size parameter the point leaves out drops
    out of its array. Returns the signature and the parameters left out."""
    at = dict(point)
    present = [d for d in declared if matches(d.when, at)]
    absent = frozenset(d.name for d in declared) - {d.name for d in present}
    where = point_text(point)
    # Dimensions and strides alike are bound from the arrays, never passed by the caller.
    dims = {e for d in present if d.scalar is None for e in (*d.shape, *d.strides) if isinstance(e, str) and e not in values}
    params: list[ArrayParam | ScalarParam] = []
    for d in present:
        if d.scalar is not None:
            params.append(ScalarParam(d.name, d.scalar, d.name in dims))
            continue
        kept = [i for i, e in enumerate(d.shape) if e not in absent]
        for i in kept:
            if d.strides and d.strides[i] in absent:
                check.fail(d.line, f"{key}.{d.name}.strides", f"at {where}, stride {d.strides[i]} is left out but dimension {d.shape[i]} is not")
        fixed = {e: values[e] for e in d.shape if isinstance(e, str) and e in values}
        for name, extent in fixed.items():
            if type(extent) is not int or extent < 1:
                check.fail(d.line, f"{key}.{d.name}.shape", f"at {where}, {name} is {echo(extent)}, not a positive integer")
        dtype_name = values.get(d.dtype, d.dtype)
        if dtype_name not in ELEMENT_TYPES:
            check.fail(d.line, f"{key}.{d.name}.array", f"at {where}, {d.dtype} is {echo(dtype_name)}, not a dtype ({listing(ELEMENT_TYPES)})")
        lanes = values.get(d.lanes, d.lanes)
        if type(lanes) is not int or not 1 <= lanes <= _MAX_LANES:
            check.fail(d.line, f"{key}.{d.name}.lanes", f"at {where}, {d.lanes} is {echo(lanes)}, not 1 to {_MAX_LANES}")
        shape = tuple(fixed.get(d.shape[i], d.shape[i]) for i in kept)
        optional = tuple(e for e in d.optional if e not in absent)
        strides = tuple(d.strides[i] for i in kept) if d.strides else ()
        params.append(ArrayParam(d.name, ELEMENT_TYPES[dtype_name], d.role, shape, optional, strides, lanes, d.pack))
    return Signature(tuple(params)), absent
