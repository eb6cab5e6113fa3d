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
import math
import string
from dataclasses import dataclass
from typing import Any

from aotc.build._binding_fields import check_args, fill_at, parse_arg, parse_equals, parse_fill, parse_max, parse_split, scalar_type_at, split_check
from aotc.build._checks import MAX_DIMS, MAX_INT32, MAX_PARAMS, Checker, describe, line_of, listing
from aotc.build._family_launch import parse_size
from aotc.build._family_rules import AxisValue, Rule, RuleIndex, matches, parse_when
from aotc.build._yaml import LineDict, LineList, key_text
from aotc.build.signature import ELEMENT_TYPES, ROLES, SCALAR_TYPES, ArrayParam, ScalarParam, Signature, SizeExpression
from aotc.errors import echo

__all__ = ["FamilyAxes", "Point", "expand_points", "kernel_name", "parse_axes", "parse_signature", "point_text", "resolve_signature"]

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
    check.at_most(len(table), MAX_PARAMS, line, key, "axes")
    result: dict[str, tuple[AxisValue, ...]] = {}
    for name, raw in table.items():
        axis_key, axis_line = f"{key}.{key_text(name)}", line_of(table, name)
        # A template variable and a key of the index, never a C or Python name by
        # itself: the tropical family's `pass` axis is one.
        check.identifier(name, axis_key, axis_line, kind="axis")
        if isinstance(raw, LineList):
            items, item_lines = check.sequence(raw, axis_key, axis_line), raw.item_lines
        else:
            items, item_lines = [raw], [axis_line]
        check.within("axis_values", len(items), axis_line, axis_key, f"{len(items)} values")
        values: list[AxisValue] = []
        seen: set[tuple[type, AxisValue]] = set()  # a set, not the list: an axis may hold thousands
        for item, item_line in zip(items, item_lines):
            if isinstance(item, bool) or not isinstance(item, (int, str)):
                check.fail(item_line, axis_key, f"expected a name or an integer, got {describe(item)}")
            if isinstance(item, str):  # a value, not a name: `float` may be one
                check.identifier(item, axis_key, item_line, kind="value")
            elif not 0 <= item <= MAX_INT32:
                check.fail(item_line, axis_key, f"{item} is out of range (0 to 2**31 - 1)")
            if (type(item), item) in seen:
                check.fail(item_line, axis_key, f"value {echo(item)} is listed twice")
            seen.add((type(item), item))
            values.append(item)
        result[name] = tuple(values)
    return FamilyAxes(result, line)


def _pick(check: Checker, value: Any, key: str, line: int, known: tuple[AxisValue, ...], declared: frozenset[AxisValue]) -> tuple[AxisValue, ...]:
    """One axis of a matrix block or an exclude: a value or a list, each declared in ``axes``
    (``known``, and ``declared``, the same as a set)."""
    items = value if isinstance(value, LineList) else [value]
    item_lines = value.item_lines if isinstance(value, LineList) else [line]
    if not items:
        check.fail(line, key, "must not be empty")
    for item, item_line in zip(items, item_lines):
        if isinstance(item, bool) or not isinstance(item, (int, str)) or item not in declared:
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
    declared = {a: frozenset(values) for a, values in axes.values.items()}
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
            rules.append({a: _pick(check, v, f"{item_key}.{a}", line_of(rule, a), axes.values[a], declared[a]) for a, v in rule.items()})
    excluded = RuleIndex(rules, axes.values).mask if rules else None
    count, chosen_blocks = 0, []
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
                a: _pick(check, selected[a], f"{block_key}.{a}", line_of(selected, a), axes.values[a], declared[a]) if a in selected else axes.values[a]
                for a in names
            }
        count += math.prod(len(chosen[a]) for a in names)
        # Every block counted before a point is made: a matrix of 64**5 points is refused at once.
        check.within("points", count, block_line, block_key, f"expands to {count} points before excludes")
        if not rules:  # every point is a kernel
            check.within("kernels", count, block_line, block_key, f"expands to {count} kernels")
        chosen_blocks.append((chosen, place))
    points: list[tuple[Point, Place]] = []
    for chosen, place in chosen_blocks:
        for combo in itertools.product(*(chosen[a] for a in names)):
            if excluded is None or not excluded(dict(zip(names, combo))):
                points.append((tuple(zip(names, combo)), place))
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
            check.fail(line, key, f"names {{{echo(field, 24)[1:-1]}}}, which is not an axis or a constant here (known: {listing(values)})")
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
        # Only the axes whose values are all dtypes are named: every constant
        # and axis name would outrun one line in a large family.
        dtype_axes = [axis for axis, values in axes.values.items() if all(v in ELEMENT_TYPES for v in values)]
        naming = f"an axis of dtypes ({listing(dtype_axes)})" if dtype_axes else "an axis of dtypes"
        check.fail(line, key, f"expected a dtype ({listing(ELEMENT_TYPES)}), {naming} or a constant naming one, got {describe(value)}")


@dataclass(frozen=True)
class _Declared:
    """One parameter as declared, before a point resolves its dtype and fixed extents."""

    name: str
    line: int
    scalar: str | None  # the scalar type (or the axis or constant naming it), or None for an array
    dtype: Any = None  # an array's dtype name, or the axis or constant naming it
    role: str = ""
    shape: tuple[Any, ...] = ()
    optional: tuple[str, ...] = ()  # the leading dimensions a call may leave out
    strides: tuple[Any, ...] = ()  # per dimension: a stride scalar's name, or 1
    when: Rule | None = None  # the points that have this parameter; None: all
    lanes: Any = 1  # values a element, or the constant giving them
    pack: int = 0  # one-bit values a word along the last dimension
    arg: str = ""  # the bindings' name for it; "": its own
    fill: Any = None  # an out array's value before the launch, as written
    max: str | int | None = None  # a caller-given extent's bound
    equals: str | None = None  # the dimension a caller-given scalar must equal
    split: str = ""  # the grid axis whose launches this scalar starts


def parse_signature(check: Checker, value: Any, key: str, line: int, axes: FamilyAxes, constants: frozenset[str] = frozenset()) -> tuple[_Declared, ...]:
    """``signature: {name: spec}`` in parameter order: an array ``{array: dtype, role, shape}``
    (and ``optional: [batch]``, leading dimensions a call may leave out;
    ``strides: [s, 1]``, the strides the call binds; ``lanes``, ``pack``: see
    ``ArrayParam``), or a scalar (``i32``, or ``{scalar: i32}``). Either may
    have a ``when``: the points whose kernel takes it, and an ``arg`` (its name in
    the bindings); a scalar's type may be a dtype axis or constant, and an
    integer scalar only out arrays name is an extent the caller passes (``max``:
    its bound); an out array may have a ``fill`` (``aotc.build._binding_fields``)."""
    table = check.mapping(value, key, line, optional=value.keys() if isinstance(value, LineDict) else ())
    if not table:
        check.fail(line, key, "must declare at least one parameter")
    check.at_most(len(table), MAX_PARAMS, line, key, "parameters")
    declared: list[_Declared] = []
    for name, spec in table.items():
        p_key, p_line = f"{key}.{key_text(name)}", line_of(table, name)
        check.identifier(name, p_key, p_line, kind="parameter")
        if name in axes.values or name in constants:
            check.fail(p_line, p_key, f"{name} is also {'an axis' if name in axes.values else 'a constant'}; a parameter needs a name of its own")
        when = None
        if isinstance(spec, LineDict) and "when" in spec:
            when = parse_when(check, spec["when"], f"{p_key}.when", line_of(spec, "when"), axes.values)
        if isinstance(spec, str) or (isinstance(spec, LineDict) and "scalar" in spec):
            fields = check.mapping(spec, p_key, p_line, required=("scalar",), optional=("when", "arg", "max", "equals", "split")) if isinstance(spec, LineDict) else None
            kind = fields["scalar"] if fields is not None else spec
            if not isinstance(kind, str) or (kind not in SCALAR_TYPES and kind not in axes.values and kind not in constants):
                check.fail(p_line, p_key, f"unknown scalar type {echo(kind)} (known: {listing(SCALAR_TYPES)}, or an axis or constant naming one)")
            tie = {"max": parse_max(check, fields, p_key), "equals": parse_equals(check, fields, p_key), "split": parse_split(check, fields, p_key)}
            declared.append(_Declared(name, p_line, kind, when=when, arg=parse_arg(check, fields, p_key), **tie))
            continue
        fields = check.mapping(spec, p_key, p_line, required=("array", "role", "shape"), optional=("optional", "strides", "when", "lanes", "pack", "arg", "fill"))
        dtype = fields["array"]
        _dtype(check, dtype, f"{p_key}.array", line_of(fields, "array"), axes, constants)
        role = fields["role"]
        if role not in ROLES:
            check.fail(line_of(fields, "role"), f"{p_key}.role", f"expected one of {listing(ROLES)}, got {describe(role)}")
        shape_line = line_of(fields, "shape")
        shape = check.sequence(fields["shape"], f"{p_key}.shape", shape_line)
        check.at_most(len(shape), MAX_DIMS, shape_line, f"{p_key}.shape", "dimensions")
        # An entry that is no name is an expression of the sizes (``rows + 1``).
        shape = [parse_size(check, e, f"{p_key}.shape[{i}]", shape_line) if isinstance(e, str) and not e.isidentifier() else e for i, e in enumerate(shape)]
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
        fill = parse_fill(check, fields, p_key, role, constants)
        declared.append(_Declared(name, p_line, None, dtype, role, tuple(shape), optional, strides, when, lanes, pack, parse_arg(check, fields, p_key), fill))
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
        # Short echoes: a line of fuzzed names passed the one-line bound (tests/faults) at the full width.
        named = listing((echo(name, 40) for name in names), limit=60)
        check.fail(at_line, at, f"{named} must be the shape's leading dimensions, in order, before at least one other (shape: {echo(list(shape), 60)})")
    return names


def _check_dimensions(check: Checker, declared: list[_Declared], key: str, axes: FamilyAxes, constants: frozenset[str]) -> None:
    """Every shape entry is an integer scalar of the signature, an integer axis, a
    constant or a number; every dimension is bound by an array the caller passes."""
    scalars = {d.name: d for d in declared if d.scalar is not None}
    bound: set[str] = set()
    arrays = [d for d in declared if d.scalar is None]
    if not any(d.role != "out" for d in arrays):
        check.fail(declared[0].line, key, "declares no in or inout array; a call's arrays tell its device, stream and sizes")
    integer = {*constants, *(a for a, values in axes.values.items() if all(isinstance(v, int) for v in values))}
    for d in arrays:
        for entry in d.shape:
            if isinstance(entry, int) and not isinstance(entry, bool) and entry > 0:
                continue
            if isinstance(entry, (str, SizeExpression)) and any(scalars[n].split for n in _names(entry) if n in scalars):
                check.fail(d.line, f"{key}.{d.name}.shape", f"{echo(_text(entry))} names a split offset, which the binder sets per launch; it sizes nothing")
            if isinstance(entry, SizeExpression):
                # Checked against the call's sizes, never solved for them: its names are bound elsewhere or passed.
                unknown = [n for n in entry.names if not (n in integer or (n in scalars and scalars[n].scalar in ("i32", "i64")))]
                if unknown:
                    check.fail(d.line, f"{key}.{d.name}.shape", f"{entry.text}: {unknown[0]} is neither an integer scalar of the signature nor an integer axis or constant")
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
            if not (isinstance(entry, str) and entry in scalars and scalars[entry].scalar in ("i32", "i64") and not scalars[entry].split):
                check.fail(d.line, at, f"{echo(entry)} is neither an integer scalar of the signature nor 1 (a dense dimension)")
            if entry in strides or any(entry in _names(e) for other in arrays for e in other.shape):
                where = f"{strides[entry]}'s strides" if entry in strides else "a shape"
                check.fail(d.line, at, f"{entry} is also named in {where}; a stride scalar is one array's one dimension")
            strides[entry] = d.name
    for d in arrays:
        # An integer scalar no in or inout array binds is an extent the caller passes: never left out.
        extent = next((e for e in d.optional if e in scalars and e not in bound), None)
        if extent is not None:
            check.fail(d.line, f"{key}.{d.name}.optional", f"{extent} is named by no in or inout array, so the caller passes it; only a dimension the arrays bind may be left out")
        # The bindings pack bits along a dimension they bind or are given, so they can count it.
        if d.pack and not (d.shape and isinstance(d.shape[-1], str) and d.shape[-1] in scalars):
            check.fail(d.line, f"{key}.{d.name}.pack", f"the packed (last) dimension {echo(d.shape[-1] if d.shape else None)} is not a size scalar of the signature; the bindings count the bits it packs")


def _names(entry: Any) -> tuple[str, ...]:
    """The names a shape entry reads: itself, an expression's names, or none (a number)."""
    if isinstance(entry, SizeExpression):
        return entry.names
    return (entry,) if isinstance(entry, str) else ()


def _text(entry: Any) -> Any:
    return entry.text if isinstance(entry, SizeExpression) else entry


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
    # Dimensions (named bare by an in or inout array), strides and split offsets
    # are the binder's, never passed by the caller; any other size a shape
    # names (an out array's, a name inside an expression), or a scalar tied to
    # a dimension, is an extent, which the caller passes.
    arrays = [d for d in present if d.scalar is None]
    sizes = {e for d in arrays if d.role != "out" for e in d.shape if isinstance(e, str) and e not in values}
    splits = {d.name: d.split for d in present if d.scalar is not None and d.split}
    dims = sizes | {e for d in arrays for e in d.strides if isinstance(e, str)} | set(splits)
    tied = {d.name for d in present if d.scalar is not None and (d.max is not None or d.equals is not None)}
    extents = ({n for d in arrays for e in d.shape for n in _names(e) if n not in values} | tied) - dims
    split_check(check, [(d.name, d.split, d.line, values.get(d.scalar, d.scalar)) for d in present if d.scalar is not None and d.split], key, where)
    params: list[ArrayParam | ScalarParam] = []
    for d in present:
        if d.scalar is not None:
            kind = scalar_type_at(check, d.scalar, values, SCALAR_TYPES, d.line, f"{key}.{d.name}", where)
            bound, tie = (d.max, "max") if d.max is not None else (d.equals, "equals")
            if bound is not None and (d.name in dims or kind not in ("i32", "i64") or (isinstance(bound, str) and bound not in sizes)):
                problem = f"{d.name} is bound from the arrays, never passed" if d.name in dims else f"{d.name} is {kind}; a tied scalar is i32 or i64" if kind not in ("i32", "i64") else f"{bound} is not a dimension the in or inout arrays bind"
                check.fail(d.line, f"{key}.{d.name}.{tie}", f"at {where}, {problem}")
            params.append(ScalarParam(d.name, kind, d.name in dims, d.arg, d.name in extents, d.max, d.equals, d.split))
            continue
        kept = [i for i, e in enumerate(d.shape) if e not in absent]
        for i in kept:
            if d.strides and d.strides[i] in absent:
                check.fail(d.line, f"{key}.{d.name}.strides", f"at {where}, stride {d.strides[i]} is left out but dimension {d.shape[i]} is not")
        fixed = {e: values[e] for e in d.shape if isinstance(e, str) and e in values}
        for e in d.shape:
            if isinstance(e, SizeExpression):
                wrong = [n for n in e.names if n in absent or (n in values and type(values[n]) is not int)]
                if wrong:
                    problem = "is left out" if wrong[0] in absent else f"is {echo(values[wrong[0]])}, not an integer"
                    check.fail(d.line, f"{key}.{d.name}.shape", f"at {where}, {wrong[0]} {problem}, but {e.text} names it")
                fixed[e] = e.at(values)  # the point's axes and constants in place: an expression, or a number
        for name, extent in fixed.items():
            if not isinstance(extent, SizeExpression) and (type(extent) is not int or extent < 1):
                check.fail(d.line, f"{key}.{d.name}.shape", f"at {where}, {_text(name)} is {echo(extent)}, not a positive integer")
        dtype_name = values.get(d.dtype, d.dtype)
        if dtype_name not in ELEMENT_TYPES:
            check.fail(d.line, f"{key}.{d.name}.array", f"at {where}, {d.dtype} is {echo(dtype_name)}, not a dtype ({listing(ELEMENT_TYPES)})")
        word = ELEMENT_TYPES[dtype_name]
        if d.pack and (word.kind != "uint" or d.pack > 8 * word.itemsize):
            check.fail(d.line, f"{key}.{d.name}.pack", f"at {where}, {d.pack} bits do not pack into a {dtype_name} word (an unsigned integer type of at least {d.pack} bits)")
        lanes = values.get(d.lanes, d.lanes)
        if type(lanes) is not int or not 1 <= lanes <= _MAX_LANES:
            check.fail(d.line, f"{key}.{d.name}.lanes", f"at {where}, {d.lanes} is {echo(lanes)}, not 1 to {_MAX_LANES}")
        shape = tuple(fixed.get(d.shape[i], d.shape[i]) for i in kept)
        optional = tuple(e for e in d.optional if e not in absent)
        strides = tuple(d.strides[i] for i in kept) if d.strides else ()
        fill = None if d.fill is None else fill_at(check, d.fill, values, ELEMENT_TYPES[dtype_name], d.line, f"{key}.{d.name}.fill", where)
        params.append(ArrayParam(d.name, ELEMENT_TYPES[dtype_name], d.role, shape, optional, strides, lanes, d.pack, d.arg, fill))
    passed = [(d.name, d.arg, d.line, d.scalar is None or d.name not in dims) for d in present]
    check_args(check, passed, at, key, where)
    return Signature(tuple(params)), absent
