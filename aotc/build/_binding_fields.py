"""What a declared parameter says about its binding, beside its C type.

- ``arg:`` the name the generated bindings give it (keywords, messages, op
  schemas), where the manifest's name is the C code's (``A: {..., arg: a}``);
- ``fill:`` an out array's value before the launch (kernels that add into
  it): a number, ``-inf``/``+inf`` (an integer type's lowest / highest value),
  ``true``/``false``, or a constant naming one;
- ``max:`` / ``equals:`` tie an integer scalar the caller passes to a
  dimension the in and inout arrays bind: at most it (or a number), or
  exactly it; so a tied scalar, like one that sizes arrays the arrays do not
  bind, is an extent the call checks before it launches;
- ``split:`` on an integer scalar: the grid axis the binder may launch in
  parts past CUDA's limit, setting the scalar to each part's first block
  index there (the template adds it to ``blockIdx``);
- a scalar's type may be a dtype axis or constant, resolved per point.

``aotc.build._family_fields`` reads the keys with these and resolves them at
each point; every problem is one line naming the file, the line and the key.
"""

from __future__ import annotations

import keyword
from typing import Any

from aotc.build._checks import Checker, describe, line_of, listing
from aotc.build._yaml import LineDict
from aotc.dtypes import DType
from aotc.errors import echo

__all__ = ["GRID_AXES", "INFINITIES", "check_args", "fill_at", "parse_arg", "parse_equals", "parse_fill", "parse_max", "parse_split", "scalar_type_at", "split_check"]

# The bindings' own keyword and the prefix of their own names (aotc.kernels).
_RESERVED = "stream"
_INTERNAL = "_aotc"
INFINITIES = {"-inf": float("-inf"), "+inf": float("inf")}
_MAX_EXTENT = (1 << 63) - 1
GRID_AXES = ("x", "y", "z")


def parse_arg(check: Checker, fields: LineDict | None, key: str) -> str:
    """``arg:``, a Python identifier the bindings do not keep for themselves ("": none)."""
    if fields is None or "arg" not in fields:
        return ""
    at, line = f"{key}.arg", line_of(fields, "arg")
    arg = check.identifier(fields["arg"], at, line)
    if keyword.iskeyword(arg) or arg == _RESERVED or arg.startswith(_INTERNAL):
        check.fail(line, at, f"{echo(arg)} is a Python keyword or a name the bindings keep ({_RESERVED}, {_INTERNAL}...)")
    return arg


def parse_fill(check: Checker, fields: LineDict, key: str, role: Any, constants: frozenset[str]) -> Any:
    """``fill:`` on an out array: its value as written (checked against the dtype at each point)."""
    if "fill" not in fields:
        return None
    at, line, value = f"{key}.fill", line_of(fields, "fill"), fields["fill"]
    if role != "out":
        check.fail(line, at, f"only an out array is filled before the launch; this one is {echo(role)}")
    number = isinstance(value, (int, float)) and value == value  # bools among them; no NaN
    if not (number or (isinstance(value, str) and (value in INFINITIES or value in constants))):
        names = f", or a constant naming one ({listing(sorted(constants))})" if constants else ""
        check.fail(line, at, f"expected a number, -inf, +inf, true or false{names}, got {describe(value)}")
    return value


def fill_at(check: Checker, value: Any, values: dict[str, Any], dtype: DType, line: int, key: str, where: str) -> int | float | bool:
    """The fill at a point, as the array's dtype holds it: an integer in its range
    (``-inf``/``+inf``: its lowest / highest), a float (``-inf``/``+inf``
    included) for a float type, true or false for bool."""
    given = values[value] if isinstance(value, str) and value not in INFINITIES else value
    found = INFINITIES.get(given, given) if isinstance(given, str) else given
    if dtype.kind == "bool" and (isinstance(found, bool) or (type(found) is int and found in (0, 1))):
        return bool(found)
    if dtype.kind == "float" and isinstance(found, (int, float)) and not isinstance(found, bool) and found == found:
        return float(found)
    if dtype.kind in ("int", "uint") and type(found) is float and abs(found) == float("inf"):
        return dtype.bounds[0] if found < 0 else dtype.bounds[1]  # as a semiring's zero and one read them
    if dtype.kind in ("int", "uint") and type(found) is int and dtype.bounds[0] <= found <= dtype.bounds[1]:
        return found
    shown = f"{value} is {echo(given)}" if given is not value else echo(value)
    check.fail(line, key, f"at {where}, {shown}, which a {dtype.name} array cannot hold")


def parse_max(check: Checker, fields: LineDict | None, key: str) -> str | int | None:
    """``max:`` on a scalar: a dimension's name or a positive number (whether the
    scalar is an extent, and the name a dimension, is checked at each point)."""
    if fields is None or "max" not in fields:
        return None
    at, line, value = f"{key}.max", line_of(fields, "max"), fields["max"]
    if type(value) is int:
        if not 0 < value <= _MAX_EXTENT:
            check.fail(line, at, f"{value} is not a positive 64-bit integer")
        return value
    return check.identifier(value, at, line)


def parse_equals(check: Checker, fields: LineDict | None, key: str) -> str | None:
    """``equals:`` on a scalar: the name of the dimension it must equal (checked at each point)."""
    if fields is None or "equals" not in fields:
        return None
    at, line = f"{key}.equals", line_of(fields, "equals")
    if "max" in fields:
        check.fail(line, at, "a scalar is tied one way: max (at most) or equals (exactly), not both")
    return check.identifier(fields["equals"], at, line)


def parse_split(check: Checker, fields: LineDict | None, key: str) -> str:
    """``split:`` on a scalar: the grid axis whose parts it starts ("": none)."""
    if fields is None or "split" not in fields:
        return ""
    at, line, axis = f"{key}.split", line_of(fields, "split"), fields["split"]
    if axis not in GRID_AXES:
        check.fail(line, at, f"expected a grid axis ({listing(GRID_AXES)}), got {describe(axis)}")
    tied = next((k for k in ("arg", "max", "equals") if k in fields), None)
    if tied is not None:
        check.fail(line_of(fields, tied), f"{key}.{tied}", "a split offset is set by the binder, never passed: it takes no arg, max or equals")
    return axis


def split_check(check: Checker, splits: list[tuple[str, str, int, Any]], key: str, where: str) -> None:
    """``(name, axis, line, type)`` of a point's split offsets: integers, one an axis."""
    seen: dict[str, str] = {}
    for name, axis, line, kind in splits:
        if kind not in ("i32", "i64", "u32", "u64"):
            check.fail(line, f"{key}.{name}.split", f"at {where}, {name} is {echo(kind)}; a split offset is an integer (i32, i64, u32 or u64)")
        if axis in seen:
            check.fail(line, f"{key}.{name}.split", f"at {where}, grid axis {axis} is split by {seen[axis]} already")
        seen[axis] = name


def scalar_type_at(check: Checker, kind: str, values: dict[str, Any], scalar_types: dict[str, str], line: int, key: str, where: str) -> str:
    """A scalar's type at a point: its own, or the value of the axis or constant it names."""
    found = values.get(kind, kind)
    if found not in scalar_types:
        check.fail(line, key, f"at {where}, {kind} is {echo(found)}, which is not a scalar type ({listing(scalar_types)})")
    return found


def check_args(check: Checker, params: list[tuple[str, str, int, bool]], axes: dict[str, Any], key: str, where: str) -> None:
    """``(name, arg, line, passed)`` of a point's parameters: an ``arg:`` only on what
    the caller passes, and every binding name (its arg, else its name) unique and no axis's."""
    seen: dict[str, str] = {}
    for name, arg, line, passed in params:
        if arg and not passed:
            check.fail(line, f"{key}.{name}.arg", f"at {where}, {name} is bound from the arrays, never passed: it takes no arg")
        binding = arg or name
        if binding in axes:
            check.fail(line, f"{key}.{name}{'.arg' if arg else ''}", f"at {where}, {binding} is also an axis, which the bindings take by keyword")
        if binding in seen:
            check.fail(line, f"{key}.{name}{'.arg' if arg else ''}", f"at {where}, {binding} is also {seen[binding]}'s name in the bindings")
        seen[binding] = name
