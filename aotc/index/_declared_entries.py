"""A declared kernel's own fields in the index: its axes, its signature and its
backward pairing, checked so that the generated bindings (``aotc.kernels``)
can trust them. ``aotc.index._validate`` checks the rest of the entry.
"""

from __future__ import annotations

from types import MappingProxyType

from aotc.dtypes import DTYPES
from aotc.errors import echo
from aotc.index._values import _IDENTIFIER, _MAX_INT, _MAX_INTERNED, _MAX_PARAMS, _fail, _int, _list, _object, _table, _text
from aotc.index.views import DeclaredParam, Param

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["axes", "backward", "signature"]

_SCALARS: dict[tuple[str, str, bool], DeclaredParam] = {}  # checked scalars, interned

_ROLES = ("in", "out", "inout")
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
_ARRAY_ITEM_KEYS = frozenset({"name", "array"})
_ARRAY_KEYS = frozenset({"dtype", "role", "shape"})
_ARRAY_OPTIONAL = frozenset({"optional", "strides", "lanes", "pack"})


def signature(where: str, path: str, value: Any, params: tuple[Param, ...]) -> tuple[DeclaredParam, ...]:
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
            item = _object(where, at, raw, _SCALAR_KEYS)
            if item["name"] != param.name or item["scalar"] != param.kind or type(item["dim"]) is not bool:
                _fail(where, at, f"does not describe parameter {param.name} ({param.kind}) as a scalar")
            key = (param.name, param.kind, item["dim"])
            scalar = _SCALARS.get(key)
            if scalar is None:  # immutable, so shared by every kernel that has it (M, N, K, ...)
                scalar = DeclaredParam(param.name, "", param.kind, (), True, item["dim"], 0, (), 1, 0)
                if len(_SCALARS) < _MAX_INTERNED:
                    _SCALARS[key] = scalar
            result.append(scalar)
            continue
        item = _object(where, at, raw, _ARRAY_ITEM_KEYS)
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
        shape = _list(where, f"{at}.array.shape", array["shape"], 8)
        for j, extent in enumerate(shape):
            if not (extent in dims if type(extent) is str else type(extent) is int and 0 < extent <= _MAX_INT):
                _fail(where, f"{at}.array.shape[{j}]", f"{echo(extent)} is neither an integer size parameter nor a positive number")
        optional = tuple(_list(where, f"{at}.array.optional", array.get("optional", []), 8))
        if optional and (optional != tuple(shape[: len(optional)]) or len(optional) >= len(shape) or not all(type(e) is str for e in optional)):
            _fail(where, f"{at}.array.optional", f"{echo(list(optional))} is not a run of the shape's leading dimensions")
        strides = tuple(_list(where, f"{at}.array.strides", array.get("strides", []), 8))
        if strides and (len(strides) != len(shape) or not all(e in dims if type(e) is str else e == 1 and type(e) is int for e in strides)):
            _fail(where, f"{at}.array.strides", f"{echo(list(strides))} is not one integer size parameter or 1 for each of the shape's {len(shape)} dimensions")
        result.append(DeclaredParam(param.name, array["role"], dtype, tuple(shape), False, False, len(optional), strides, lanes, pack))
    # A stride is one array's one dimension: named once, and in no shape.
    stride_names = [e for p in result for e in p.strides if type(e) is str]
    shape_names = {e for p in result for e in p.shape}
    for name in stride_names:
        if stride_names.count(name) > 1 or name in shape_names:
            _fail(where, path, f"stride {name} is named twice, or also in a shape; it must be one array's one dimension")
    # A dimension or a stride is bound from the arrays that name it: each scalar marked so is named, and only those are.
    named = {extent for p in result for extent in (*p.shape, *p.strides) if type(extent) is str}
    for i, p in enumerate(result):
        if p.scalar and p.dim != (p.name in named):
            _fail(where, f"{path}[{i}].dim", f"{p.dim} for {p.name}, which {'no' if p.dim else 'an'} array's shape names")
    if not any(not p.scalar and p.role != "out" for p in result):
        _fail(where, path, "has no in or inout array")
    return tuple(result)


def backward(where: str, path: str, value: Any) -> tuple[str, tuple[str, ...]]:
    """A declared kernel's backward pairing: (the family, the arrays it saves)."""
    item = _object(where, path, value, frozenset({"family", "saves"}))
    family = _text(where, f"{path}.family", item["family"], _IDENTIFIER, "a family name")
    saves = tuple(_text(where, f"{path}.saves[{i}]", s, _IDENTIFIER, "an array name") for i, s in enumerate(_list(where, f"{path}.saves", item["saves"], _MAX_PARAMS)))
    return family, saves
