"""A declared kernel's own fields in the index: its axes, its signature (with
its argument names, fills, caller-given extents) and its backward, checked so
that the generated bindings (``aotc.kernels``) can trust them. ``aotc.index._validate`` checks the rest of the entry.
"""

from __future__ import annotations

from aotc.dtypes import DTYPES
from aotc.errors import echo
from aotc.index._values import _IDENTIFIER, _MAX_INT, _MAX_INTERNED, _MAX_PARAMS, _fail, _int, _list, _object, _table, _text
from aotc.index.views import Backward, DeclaredParam, Param, SizeExpression

MappingProxyType = type(type.__dict__)  # types.MappingProxyType, without importing types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["axes", "backward", "signature"]

_SCALARS: dict[tuple[str, str, bool], DeclaredParam] = {}  # checked scalars, interned

_ROLES = ("in", "out", "inout")
_GRID_AXES = ("x", "y", "z")
_SPLIT_KINDS = ("i32", "i64", "u32", "u64")
# An expression's size, as aotc.build._family_launch.parse_size bounds it.
_MAX_TERMS, _MAX_FACTORS, _MAX_COEFFICIENT = 8, 4, 1 << 31
_DTYPES = tuple(DTYPES)  # the one dtype table's names, as aotc.build.signature.ELEMENT_TYPES
_MAX_LANES, _MAX_PACK = 16, 64  # aotc.build._family_fields' limits


def axes(where: str, path: str, value: Any) -> Mapping[str, str | int]:
    table = _table(where, path, value, _MAX_PARAMS)
    for axis, axis_value in table.items():
        at = f"{path}.{_text(where, path, axis, _IDENTIFIER, 'an axis name')}"
        if type(axis_value) is int:
            _int(where, at, axis_value, 0, _MAX_INT)
        else:
            _text(where, at, axis_value, _IDENTIFIER, "an axis value (a name or an integer)")
    return MappingProxyType(dict(table))


_SCALAR_KEYS = frozenset({"name", "scalar", "dim"})
_SCALAR_OPTIONAL = frozenset({"arg", "extent", "max", "equals", "split"})
_ARRAY_ITEM_KEYS = frozenset({"name", "array"})
_ARRAY_KEYS = frozenset({"dtype", "role", "shape"})
_ARRAY_OPTIONAL = frozenset({"optional", "strides", "lanes", "pack", "fill"})
# An argument name the bindings cannot take: Python's keywords (``keyword``,
# imported by the first kernel that names an argument: few do), their own
# keyword, and the prefix of their own names (aotc.build._family_fields).
_RESERVED_ARG = "stream"
_INTERNAL_PREFIX = "_aotc"
_INFINITIES = {"-inf": float("-inf"), "+inf": float("inf")}


def _arg(where: str, path: str, item: dict[str, Any], name: str) -> str:
    """The parameter's name in the bindings: its ``arg``, written where it differs from its name."""
    if "arg" not in item:
        return name
    arg = _text(where, f"{path}.arg", item["arg"], _IDENTIFIER, "an argument name")
    from keyword import iskeyword

    if iskeyword(arg) or arg == _RESERVED_ARG or arg.startswith(_INTERNAL_PREFIX):
        _fail(where, f"{path}.arg", f"{echo(arg)} is a name the bindings keep for themselves")
    return arg


def _fill(where: str, path: str, value: Any, dtype: str) -> int | float | bool:
    """An out array's fill, as its dtype holds it: true or false, an integer in the
    type's range, or a finite number or "-inf"/"+inf" for a float type."""
    kind = DTYPES[dtype].kind
    if kind == "bool":
        if type(value) is bool:
            return value
    elif kind == "float":
        if type(value) in (int, float) and abs(value) != float("inf"):
            return float(value)
        if type(value) is str and value in _INFINITIES:
            return _INFINITIES[value]
    elif type(value) is int:
        low, high = DTYPES[dtype].bounds
        if low <= value <= high:
            return value
    return _fail(where, path, f"{echo(value)} is not a value of a {dtype} array")


def _scalar(where: str, at: str, item: dict[str, Any], param: Param) -> DeclaredParam:
    if item["name"] != param.name or item["scalar"] != param.kind or type(item["dim"]) is not bool:
        _fail(where, at, f"does not describe parameter {param.name} ({param.kind}) as a scalar")
    arg, extent, bound = _arg(where, at, item, param.name), item.get("extent", False), item.get("max")
    if "arg" in item and item["dim"]:
        _fail(where, f"{at}.arg", f"{param.name} is bound from the arrays, never passed: it has no argument name")
    # Written only where true or present: an extent is a caller's argument, never the arrays'.
    if "extent" in item and not (extent is True and param.kind in ("i32", "i64") and not item["dim"]):
        _fail(where, f"{at}.extent", f"{echo(extent)} for {param.name}; only true, for an integer scalar no in or inout array binds")
    if "max" in item and not (extent and ((type(bound) is str and _IDENTIFIER.fullmatch(bound)) or (type(bound) is int and 0 < bound <= _MAX_INT))):
        _fail(where, f"{at}.max", f"{echo(bound)} is not a dimension's name or a positive number bounding an extent")
    equals, split = item.get("equals"), item.get("split", "")
    if "equals" in item and not (extent and "max" not in item and type(equals) is str and _IDENTIFIER.fullmatch(equals)):
        _fail(where, f"{at}.equals", f"{echo(equals)} is not a dimension's name an extent (with no max) equals")
    # A split offset is the binder's, set per launch: never the caller's, never a size.
    if "split" in item and not (split in _GRID_AXES and item["dim"] and param.kind in _SPLIT_KINDS and not extent and "arg" not in item):
        _fail(where, f"{at}.split", f"{echo(split)} for {param.name}; only x, y or z, on an integer scalar the binder sets (dim, no arg)")
    key = (param.name, param.kind, item["dim"], arg, extent, bound, equals, split)
    scalar = _SCALARS.get(key)
    if scalar is None:  # immutable, so shared by every kernel that has it (M, N, K, ...)
        scalar = DeclaredParam(param.name, "", param.kind, (), True, item["dim"], 0, (), 1, 0, arg, None, extent, bound, equals, split)
        if len(_SCALARS) < _MAX_INTERNED:
            _SCALARS[key] = scalar
    return scalar


def _expression(where: str, path: str, value: dict[str, Any], dims: set[str]) -> SizeExpression:
    """A shape entry written as an expression: ``{"terms": [[coefficient, name, ...], ...], "div": n}``."""
    entry = _object(where, path, value, frozenset({"terms"}), frozenset({"div"}))
    terms = []
    for k, raw in enumerate(_list(where, f"{path}.terms", entry["terms"], _MAX_TERMS)):
        term = _list(where, f"{path}.terms[{k}]", raw, 1 + _MAX_FACTORS)
        if not term or type(term[0]) is not int or not 0 < abs(term[0]) <= _MAX_COEFFICIENT or not all(type(n) is str and n in dims for n in term[1:]):
            _fail(where, f"{path}.terms[{k}]", f"{echo(term)} is not a nonzero coefficient and the integer size parameters it multiplies")
        terms.append((term[0], tuple(term[1:])))
    if not any(names for _, names in terms):
        _fail(where, f"{path}.terms", "names no size parameter")
    div = _int(where, f"{path}.div", entry.get("div", 1), 1, _MAX_INT)
    return SizeExpression(tuple(terms), div)


def _names(entry: Any) -> tuple[str, ...]:
    """The names a shape entry reads: itself, an expression's names, or none (a number)."""
    if type(entry) is SizeExpression:
        return entry.names
    return (entry,) if type(entry) is str else ()


def signature(where: str, path: str, value: Any, params: tuple[Param, ...], axes: Mapping[str, Any]) -> tuple[DeclaredParam, ...]:
    """A declared signature: one entry per parameter, in the params' order, each
    an array behind a pointer or a scalar of the parameter's own kind."""
    items = _list(where, path, value, _MAX_PARAMS)
    if len(items) != len(params):
        _fail(where, path, f"has {len(items)} parameters, params has {len(params)}")
    dims = {p.name for p in params if p.kind in ("i32", "i64")}
    result = []
    for i, (raw, param) in enumerate(zip(items, params)):
        at = f"{path}[{i}]"
        if not isinstance(raw, dict) or "array" not in raw:
            result.append(_scalar(where, at, _object(where, at, raw, _SCALAR_KEYS, _SCALAR_OPTIONAL), param))
            continue
        item = _object(where, at, raw, _ARRAY_ITEM_KEYS, frozenset({"arg"}))
        array = _object(where, f"{at}.array", item["array"], _ARRAY_KEYS, _ARRAY_OPTIONAL)
        lanes, pack = array.get("lanes", 1), array.get("pack", 0)
        # Written only where not the default (1 lane, not packed).
        if "lanes" in array and not (type(lanes) is int and 1 < lanes <= _MAX_LANES):
            _fail(where, f"{at}.array.lanes", f"{echo(lanes)} is not 2 to {_MAX_LANES} values an element")
        if "pack" in array and not (type(pack) is int and 2 <= pack <= _MAX_PACK):
            _fail(where, f"{at}.array.pack", f"{echo(pack)} is not 2 to {_MAX_PACK} one-bit values a word")
        if item["name"] != param.name or param.kind != "ptr":
            _fail(where, at, f"does not describe parameter {param.name} ({param.kind}) as an array")
        dtype = _text(where, f"{at}.array.dtype", array["dtype"], _IDENTIFIER, "a dtype")
        if dtype not in _DTYPES:
            _fail(where, f"{at}.array.dtype", f"{echo(dtype)} is not one of {', '.join(_DTYPES)}")
        if array["role"] not in _ROLES:
            _fail(where, f"{at}.array.role", f"{echo(array['role'])} is not one of {', '.join(_ROLES)}")
        fill = None
        if "fill" in array:
            if array["role"] != "out":
                _fail(where, f"{at}.array.fill", f"on an {array['role']} array; only an out array is filled before the launch")
            fill = _fill(where, f"{at}.array.fill", array["fill"], dtype)
        shape = list(_list(where, f"{at}.array.shape", array["shape"], 8))
        for j, extent in enumerate(shape):
            if type(extent) is dict:
                shape[j] = _expression(where, f"{at}.array.shape[{j}]", extent, dims)
            elif not (extent in dims if type(extent) is str else type(extent) is int and 0 < extent <= _MAX_INT):
                _fail(where, f"{at}.array.shape[{j}]", f"{echo(extent)} is neither an integer size parameter, a positive number nor an expression")
        optional = tuple(_list(where, f"{at}.array.optional", array.get("optional", []), 8))
        if optional and (optional != tuple(shape[: len(optional)]) or len(optional) >= len(shape) or not all(type(e) is str for e in optional)):
            _fail(where, f"{at}.array.optional", f"{echo(list(optional))} is not a run of the shape's leading dimensions")
        strides = tuple(_list(where, f"{at}.array.strides", array.get("strides", []), 8))
        if strides and (len(strides) != len(shape) or not all(e in dims if type(e) is str else e == 1 and type(e) is int for e in strides)):
            _fail(where, f"{at}.array.strides", f"{echo(list(strides))} is not one integer size parameter or 1 for each of the shape's {len(shape)} dimensions")
        arg = _arg(where, at, item, param.name)
        result.append(DeclaredParam(param.name, array["role"], dtype, tuple(shape), False, False, len(optional), strides, lanes, pack, arg, fill, False, None, None, ""))
    _check_names(where, path, result, axes)
    return tuple(result)


def _check_names(where: str, path: str, result: list[DeclaredParam], axes: Mapping[str, Any]) -> None:
    """How the parameters name each other: strides, dimensions, extents and their bounds, and argument names."""
    if not any(not p.scalar and p.role != "out" for p in result):
        _fail(where, path, "has no in or inout array")
    # A stride is one array's one dimension: named once, and in no shape.
    stride_names = [e for p in result for e in p.strides if type(e) is str]
    shape_names = {n for p in result for e in p.shape for n in _names(e)}
    for name in stride_names:
        if stride_names.count(name) > 1 or name in shape_names:
            _fail(where, path, f"stride {name} is named twice, or also in a shape; it must be one array's one dimension")
    # A dimension or a stride is bound from the arrays that name it (a
    # dimension bare, by an in or inout array): each scalar marked so is named,
    # and only those are; a split offset is named by none.
    sizes = {e for p in result if not p.scalar and p.role != "out" for e in p.shape if type(e) is str}
    bound = sizes | set(stride_names)
    named = shape_names | set(stride_names)
    left_out = {e for p in result for e in p.shape[: p.optional]}
    split: dict[str, str] = {}
    for i, p in enumerate(result):
        if p.scalar and p.split:
            if p.name in named or p.split in split:
                _fail(where, f"{path}[{i}].split", f"{p.name} is named by a shape or a stride, or axis {p.split} is split twice")
            split[p.split] = p.name
        elif p.scalar and p.extent:
            # Sizes what the in and inout arrays do not bind, or is tied to what they do; never left out.
            if p.name in bound or (p.name not in shape_names and p.max is None and p.equals is None) or p.name in left_out:
                _fail(where, f"{path}[{i}].extent", f"{p.name} is bound by an array, optional in one, or neither named by a shape nor tied")
            tie = p.max if type(p.max) is str else p.equals
            if tie is not None and tie not in sizes:
                _fail(where, f"{path}[{i}].{'max' if p.equals is None else 'equals'}", f"{echo(tie)} is not a dimension the in or inout arrays bind")
        elif p.scalar and p.dim != (p.name in named):
            _fail(where, f"{path}[{i}].dim", f"{p.dim} for {p.name}, which {'no' if p.dim else 'an'} array's shape names")
        elif p.scalar and p.dim and p.name not in bound:
            _fail(where, f"{path}[{i}].dim", f"{p.name} is named by no in or inout array, and is not an extent the caller passes")
    args: set[str] = set()
    for i, p in enumerate(result):
        if p.arg in args or p.arg in axes:
            _fail(where, f"{path}[{i}]", f"argument name {p.arg} is also {'an axis' if p.arg in axes else 'another parameter'}'s")
        args.add(p.arg)


def backward(where: str, path: str, value: Any, name: str) -> Backward:
    """A declared kernel's gradient: its gradient kernels with what each saves, or its route."""
    item = _object(where, path, value, frozenset(), frozenset({"kernels", "through"}))
    if len(item) != 1:
        _fail(where, path, "needs exactly one of kernels (its gradient kernels) and through (its route)")
    if "through" in item:
        through = _text(where, f"{path}.through", item["through"], _IDENTIFIER, "a kernel name")
        if through == name:
            _fail(where, f"{path}.through", "is the kernel itself")
        return Backward((), through)
    entries = _list(where, f"{path}.kernels", item["kernels"], _MAX_PARAMS)
    if not entries:
        _fail(where, f"{path}.kernels", "is empty; a kernel with no gradient has no backward")
    kernels = []
    for i, raw in enumerate(entries):
        at = f"{path}.kernels[{i}]"
        entry = _object(where, at, raw, frozenset({"kernel", "saves"}))
        kernel = _text(where, f"{at}.kernel", entry["kernel"], _IDENTIFIER, "a kernel name")
        saves = tuple(_text(where, f"{at}.saves[{j}]", s, _IDENTIFIER, "an array name") for j, s in enumerate(_list(where, f"{at}.saves", entry["saves"], _MAX_PARAMS)))
        if kernel == name or any(kernel == k for k, _ in kernels):
            _fail(where, f"{at}.kernel", f"{kernel} is {'the kernel itself' if kernel == name else 'listed twice'}")
        kernels.append((kernel, saves))
    return Backward(tuple(kernels), "")
