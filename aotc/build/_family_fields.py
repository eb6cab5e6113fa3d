"""The sections of a declared family: its axes, its matrix over them, its
kernel-name pattern, its signature and its launch geometry.

A declared family names its own axes (``axes: {dtype: [f32, f64], threads: [256]}``)
and its kernel's interface (``signature:``, ``launch:``); see README.md ("Any
kernel"). Each problem is one line naming the file, the line and the key, as
for the rest of the manifest (``aotc.build._checks``).

Launch expressions are parsed with Python's own ``ast`` module, then held to
a small grammar: names, integers, ``*``, ``cdiv(a, b)`` (a ceiling division
by a constant) and ``sizeof(dtype)``; ``+``, ``-`` and ``//`` between
constants. A grid expression reduces to ``ceil(scale * product(sizes) /
tile)``, which is what the index records and the launcher computes per call.
"""

from __future__ import annotations

import ast
import itertools
import string
from dataclasses import dataclass
from typing import Any

from aotc.build._checks import Checker, describe, line_of, listing
from aotc.build._yaml import LineDict, LineList, key_text
from aotc.build.signature import ROLES, SCALAR_TYPES, ArrayParam, Extent, ScalarParam, Signature
from aotc.errors import echo
from aotc.semiring import DTYPES

__all__ = ["DeclaredLaunch", "FamilyAxes", "Point", "expand_points", "parse_axes", "parse_launch", "parse_signature"]

_MAX_THREADS = 1024
_MAX_BLOCK = (1024, 1024, 64)
# Dynamic shared memory past 48 KiB needs a per-kernel opt-in the launchers do not make.
_MAX_DYNAMIC_SHARED = 48 * 1024
_MAX_AXIS_VALUES = 64

AxisValue = str | int
Point = tuple[tuple[str, AxisValue], ...]  # (axis, value) in the axes' order


@dataclass(frozen=True)
class FamilyAxes:
    """A family's axes, in declaration order, and the values each may take."""

    values: dict[str, tuple[AxisValue, ...]]
    line: int


@dataclass(frozen=True)
class DeclaredLaunch:
    """Launch geometry resolved at one point: grid extents over the scalar
    parameters, block shape and dynamic shared memory as numbers."""

    grid: tuple[Extent, Extent, Extent]
    block: tuple[int, int, int]
    shared_bytes_dynamic: int


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


def expand_points(
    check: Checker, axes: FamilyAxes, matrix: Any, exclude: Any, key: str, fields: LineDict
) -> list[tuple[Point, int, LineDict | None, str]]:
    """The family's points: each matrix block's product (no matrix: the axes' whole
    product), less the excludes; each with its line, and its block's launch
    override with that override's key (None, "" where the block has none)."""
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
    points: list[tuple[Point, int, LineDict | None, str]] = []
    for block, block_line, block_key in blocks:
        chosen, override, override_key = axes.values, None, ""
        if block is not None:
            selected = check.mapping(block, block_key, block_line, optional=(*names, "launch"))
            override = selected.get("launch")
            if override is not None:
                override_key = f"{block_key}.launch"
                check.mapping(override, override_key, line_of(selected, "launch"), optional=("grid", "block", "shared"))
            chosen = {
                a: _pick(check, selected[a], f"{block_key}.{a}", line_of(selected, a), axes.values[a]) if a in selected else axes.values[a]
                for a in names
            }
        for combo in itertools.product(*(chosen[a] for a in names)):
            point = tuple(zip(names, combo))
            if not any(all(dict(point)[a] in vs for a, vs in rule.items()) for rule in rules):
                points.append((point, block_line, override, override_key))
    return points


def kernel_name(check: Checker, pattern: Any, family: str, point: Point, key: str, line: int) -> str:
    """The kernel's name: ``pattern`` formatted with the point's axis values, or
    by default the family's name and every value, joined by ``_``."""
    if pattern is None:
        return "_".join([family, *(str(v) for _, v in point)])
    if not isinstance(pattern, str):
        check.fail(line, key, f"expected a name pattern such as '{family}_{{dtype}}', got {describe(pattern)}")
    values = dict(point)
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(pattern) if field is not None]
    except ValueError as exc:
        check.fail(line, key, f"{echo(pattern)} is not a name pattern: {exc}")
    for field in fields:
        if field not in values:
            check.fail(line, key, f"{echo(pattern)} names {{{field}}}, which is not an axis (axes: {listing(values)})")
    name = pattern.format(**values)
    check.identifier(name, key, line)
    return name


def _dtype(check: Checker, value: Any, key: str, line: int, axes: FamilyAxes) -> str | None:
    """An array's dtype: a dtype's name, or a dtype-valued axis (returns the axis, to resolve per point)."""
    if isinstance(value, str) and value in axes.values:
        bad = [v for v in axes.values[value] if v not in DTYPES]
        if bad:
            check.fail(line, key, f"axis {value} has value {echo(bad[0])}, which is not a dtype (dtypes: {listing(DTYPES)})")
        return None
    if value not in DTYPES:
        check.fail(line, key, f"expected a dtype ({listing(DTYPES)}) or a dtype-valued axis ({listing(axes.values)}), got {describe(value)}")
    return value


@dataclass(frozen=True)
class _Declared:
    """One parameter as declared, before a point resolves its dtype and fixed extents."""

    name: str
    line: int
    scalar: str | None  # the scalar type, or None for an array
    dtype: Any = None  # an array's dtype name or dtype-valued axis
    role: str = ""
    shape: tuple[Any, ...] = ()
    optional: tuple[str, ...] = ()  # the leading dimensions a call may leave out
    strides: tuple[Any, ...] = ()  # per dimension: a stride scalar's name, or 1


def parse_signature(check: Checker, value: Any, key: str, line: int, axes: FamilyAxes) -> tuple[_Declared, ...]:
    """``signature: {name: spec}`` in parameter order: an array ``{array: dtype, role, shape}``
    (and ``optional: [batch]``, leading dimensions a call may leave out;
    ``strides: [s, 1]``, the strides the call binds), or a scalar (``i32``, or
    ``{scalar: i32}``)."""
    table = check.mapping(value, key, line, optional=value.keys() if isinstance(value, LineDict) else ())
    if not table:
        check.fail(line, key, "must declare at least one parameter")
    declared: list[_Declared] = []
    for name, spec in table.items():
        p_key, p_line = f"{key}.{key_text(name)}", line_of(table, name)
        check.identifier(name, p_key, p_line)
        if name in axes.values:
            check.fail(p_line, p_key, f"{name} is also an axis; a parameter needs a name of its own")
        if isinstance(spec, str) or (isinstance(spec, LineDict) and "scalar" in spec):
            fields = check.mapping(spec, p_key, p_line, required=("scalar",)) if isinstance(spec, LineDict) else None
            kind = fields["scalar"] if fields is not None else spec
            if kind not in SCALAR_TYPES:
                check.fail(p_line, p_key, f"unknown scalar type {echo(kind)} (known: {listing(SCALAR_TYPES)})")
            declared.append(_Declared(name, p_line, kind))
            continue
        fields = check.mapping(spec, p_key, p_line, required=("array", "role", "shape"), optional=("optional", "strides"))
        dtype = fields["array"]
        _dtype(check, dtype, f"{p_key}.array", line_of(fields, "array"), axes)
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
        declared.append(_Declared(name, p_line, None, dtype, role, tuple(shape), optional, strides))
    _check_dimensions(check, declared, key, axes)
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


def _check_dimensions(check: Checker, declared: list[_Declared], key: str, axes: FamilyAxes) -> None:
    """Every shape entry is an integer scalar of the signature, an integer axis or a
    number; every dimension is bound by an array the caller passes."""
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
            if isinstance(entry, str) and entry in axes.values and all(isinstance(v, int) for v in axes.values[entry]):
                if entry in d.optional:
                    check.fail(d.line, f"{key}.{d.name}.optional", f"{entry} is an axis, fixed per kernel; only a dimension the call binds may be left out")
                continue
            reason = "neither an integer scalar of the signature, an integer axis, nor a positive number"
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


def resolve_signature(declared: tuple[_Declared, ...], point: Point) -> Signature:
    """The signature at ``point``: dtype axes and integer-axis extents replaced by their values."""
    values = dict(point)
    # Dimensions and strides alike are bound from the arrays, never passed by the caller.
    dims = {e for d in declared if d.scalar is None for e in (*d.shape, *d.strides) if isinstance(e, str) and e not in values}
    params: list[ArrayParam | ScalarParam] = []
    for d in declared:
        if d.scalar is not None:
            params.append(ScalarParam(d.name, d.scalar, d.name in dims))
        else:
            dtype = DTYPES[values[d.dtype] if d.dtype in values else d.dtype]
            shape = tuple(values.get(e, e) if isinstance(e, str) else e for e in d.shape)
            params.append(ArrayParam(d.name, dtype, d.role, shape, d.optional, d.strides))
    return Signature(tuple(params))


def parse_launch(
    check: Checker, launch: LineDict, override: LineDict | None, key: str, point: Point, signature: Signature, override_key: str = ""
) -> DeclaredLaunch:
    """The launch geometry at ``point``: the family's ``launch:``, with the matrix
    block's ``launch:`` keys in its place where the block has them."""
    strides = {s for p in signature.arrays for s in p.strides}  # where the array lies, not how much work there is
    sizes = {p.name for p in signature.params if isinstance(p, ScalarParam) and p.type in ("i32", "i64") and p.name not in strides}
    values = dict(point)

    def field(name: str) -> tuple[Any, str, int]:
        source, source_key = (override, override_key) if override is not None and name in override else (launch, key)
        return source[name], f"{source_key}.{name}", line_of(source, name)

    def axes_of(name: str, extents: set[str]) -> list[Extent]:
        raw, at, at_line = field(name)
        items = check.sequence(raw, at, at_line) if isinstance(raw, LineList) else [raw]
        if len(items) > 3:
            check.fail(at_line, at, f"has {len(items)} axes; CUDA has 3 (x, y, z)")
        parsed = [_Expression(check, f"{at}[{i}]", at_line, values, extents).parse(item) for i, item in enumerate(items)]
        return parsed + [Extent((), 1, 1)] * (3 - len(parsed))

    grid = axes_of("grid", sizes)
    block_extents = axes_of("block", set())
    block = tuple(e.scale for e in block_extents)
    _, block_key, block_line = field("block")
    threads = block[0] * block[1] * block[2]
    if threads > _MAX_THREADS or any(b < 1 or b > limit for b, limit in zip(block, _MAX_BLOCK)):
        check.fail(block_line, block_key, f"{list(block)} at {_where(point)} is not a block CUDA launches (at most {_MAX_THREADS} threads, {list(_MAX_BLOCK)})")
    shared = 0
    if "shared" in launch or (override is not None and "shared" in override):
        raw, at, at_line = field("shared")
        shared = _Expression(check, at, at_line, values, set()).parse(raw).scale
        if not 0 <= shared <= _MAX_DYNAMIC_SHARED:
            check.fail(at_line, at, f"{shared} bytes at {_where(point)}; dynamic shared memory is 0 to {_MAX_DYNAMIC_SHARED} bytes")
    return DeclaredLaunch((grid[0], grid[1], grid[2]), (block[0], block[1], block[2]), shared)


def _where(point: Point) -> str:
    return ", ".join(f"{a}={v}" for a, v in point)


class _Expression:
    """One launch expression, reduced to an Extent (see the module docstring)."""

    def __init__(self, check: Checker, key: str, line: int, values: dict[str, AxisValue], sizes: set[str]) -> None:
        self.check, self.key, self.line, self.values, self.sizes = check, key, line, values, sizes

    def fail(self, problem: str) -> Any:
        self.check.fail(self.line, self.key, problem)

    def parse(self, raw: Any) -> Extent:
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            self.fail(f"expected an expression, got {describe(raw)}")
        if isinstance(raw, int):
            return self._constant(raw)
        try:
            tree = ast.parse(raw.strip(), mode="eval")
        except SyntaxError:
            self.fail(f"{echo(raw)} is not an expression")
        return self._node(tree.body)

    def _constant(self, value: int) -> Extent:
        if not 0 <= value <= 1 << 31:
            self.fail(f"{value} is out of range (0 to 2**31)")
        return Extent((), value, 1)

    def _node(self, node: ast.AST) -> Extent:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return self._constant(node.value)
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.FloorDiv)):
            left, right = self._node(node.left), self._node(node.right)
            if isinstance(node.op, ast.Mult) and left.tile == right.tile == 1:
                return Extent(left.factors + right.factors, left.scale * right.scale, 1)
            if left.factors or right.factors or left.tile != 1 or right.tile != 1:
                self.fail("sizes combine only by * and cdiv(product, constant); +, - and // take constants")
            if isinstance(node.op, ast.FloorDiv) and right.scale == 0:
                self.fail("divides by zero")
            op = {ast.Mult: int.__mul__, ast.Add: int.__add__, ast.Sub: int.__sub__, ast.FloorDiv: int.__floordiv__}[type(node.op)]
            return self._constant(op(left.scale, right.scale))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            if node.func.id == "cdiv" and len(node.args) == 2:
                return self._cdiv(self._node(node.args[0]), self._node(node.args[1]))
            if node.func.id == "sizeof" and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
                return self._sizeof(node.args[0].id)
        return self.fail(f"{echo(ast.unparse(node))} is not allowed (names, integers, *, cdiv(a, b), sizeof(dtype); +, -, // of constants)")

    def _name(self, name: str) -> Extent:
        if name in self.values:
            value = self.values[name]
            if not isinstance(value, int):
                self.fail(f"axis {name} is {echo(value)} here, not a number")
            return self._constant(value)
        if name in self.sizes:
            return Extent((name,), 1, 1)
        known = sorted({*self.sizes, *(a for a, v in self.values.items() if isinstance(v, int))})
        where = "an integer scalar of the signature or an integer axis" if self.sizes else "an integer axis (sizes are known only at a call)"
        return self.fail(f"{echo(name)} is not {where} (known: {listing(known) or 'none'})")

    def _cdiv(self, top: Extent, bottom: Extent) -> Extent:
        if top.tile != 1 or bottom.factors or bottom.tile != 1:
            self.fail("cdiv(a, b) divides a product by a constant")
        if bottom.scale <= 0:
            self.fail("cdiv(a, b) needs b > 0")
        if not top.factors:
            return self._constant(-(-top.scale // bottom.scale))
        if top.scale % bottom.scale == 0:
            return Extent(top.factors, top.scale // bottom.scale, 1)
        return Extent(top.factors, top.scale, bottom.scale)

    def _sizeof(self, name: str) -> Extent:
        dtype = self.values.get(name, name)
        if dtype not in DTYPES:
            self.fail(f"sizeof({name}): expected a dtype or a dtype-valued axis")
        return self._constant(DTYPES[dtype].size)
