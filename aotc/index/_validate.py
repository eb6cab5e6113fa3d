"""Validating a parsed index into typed views: the top level, and each kernel.

Every key is known, every value has its type and range, every file name is a
plain name inside the library folder, and every checksum the build wrote is
recomputed. The first problem raises IndexFormatError naming the file and
the field path (``kernels.k.launch.block[0]``), with any value from the file
echoed through ``aotc.errors.echo``.

``validate`` checks a whole document; ``validate_top`` what the whole library
needs (everything but the kernels' entries) and ``kernel`` one kernel's
entry, for a reader that checks each kernel on its first use.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from aotc.errors import IndexFormatError, echo
from aotc.index.schema import (
    ARCH_TEXT,
    CHECKSUM_KEY,
    DECLARED_SEALED,
    KERNEL_SEALED,
    MAX_FILE_BYTES,
    PACK_CODES,
    SCHEMA,
    SOURCE_DIR,
    TOP_SEALED,
    field_checksums,
    sealed_fields,
)
from aotc.index.views import DeclaredParam, FileEntry, IndexKernel, Launch, Param, ToolkitEntry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn

__all__ = ["Validated", "duplicate_kind", "freeze", "kernel", "toolkit_entry", "validate", "validate_top"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}")
# A plain file name: no separator, no leading dot, nothing but these characters.
_NAME_OR_EMPTY = re.compile(r"[A-Za-z0-9_.+-]{0,64}")
_CONSTANT = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,63}")
_PLAIN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CTYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_ *]{0,63}")
_VERSION = re.compile(r"\d{1,6}(\.\d{1,6}){1,3}")
_TEXT_LIMIT = 256
_MAX_KERNELS = 10_000
_MAX_PARAMS = 64
_MAX_ARCHS = 64
_MAX_THREADS = 1024
_MAX_INT = 2**31 - 1

_TOP_REQUIRED = frozenset({"schema", "library", "semirings", "kernels", CHECKSUM_KEY})
# kernel_lines: the directory of the one-kernel-a-line layout (aotc.index._lines), held to
# the kernels table by LibraryIndex: a locator, never read for what a kernel does.
_TOP_OPTIONAL = frozenset({"aotc_version", "toolkit", "nvcc_version", "kernel_lines"})
_KERNEL_REQUIRED = frozenset({*KERNEL_SEALED, CHECKSUM_KEY})
_DECLARED_REQUIRED = frozenset({*DECLARED_SEALED, CHECKSUM_KEY})
_ROLES = ("in", "out", "inout")
_DTYPES = ("f32", "f64", "i32", "i64", "bool")  # aotc.semiring.DTYPES' names, without importing it at load
_KERNEL_OPTIONAL = frozenset({"resources"})
_DECLARED_OPTIONAL = frozenset({"resources", "backward"})
_SEMIRING_KEYS = frozenset({"add", "mul", "zero", "one", "counting"})
_TOOLKIT_REQUIRED = frozenset({"version", "cuda_major", "min_driver", "wheel"})
_TOOLKIT_OPTIONAL = frozenset({"compiler", "compression"})


class Validated:
    """What ``validate`` found: the checked document (mutable: freeze() it before
    handing it out) and its typed views."""

    __slots__ = ("document", "kernels", "toolkit")

    def __init__(self, document: dict[str, Any], kernels: dict[str, IndexKernel], toolkit: ToolkitEntry | None) -> None:
        self.document = document
        self.kernels = kernels
        self.toolkit = toolkit


def _fail(where: str, path: str, problem: str) -> NoReturn:
    msg = f"{where}: {path}: {problem}" if path else f"{where}: {problem}"
    raise IndexFormatError(msg)


def _type(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _object(
    where: str, path: str, value: Any, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        _fail(where, path, f"is {_type(value)}, not an object")
    for key in sorted(required - value.keys()):
        _fail(where, f"{path}.{key}" if path else key, "missing")
    for key in sorted(value.keys() - required - optional):
        _fail(where, path or "(top level)", f"unknown key {echo(key)}")
    return value


def _table(where: str, path: str, value: Any, limit: int) -> dict[str, Any]:
    """An object keyed by names the file chooses (kernels, semirings, archs)."""
    if not isinstance(value, dict):
        _fail(where, path, f"is {_type(value)}, not an object")
    if len(value) > limit:
        _fail(where, path, f"has {len(value)} entries, more than {limit}")
    return value


def _list(where: str, path: str, value: Any, limit: int) -> list[Any]:
    if not isinstance(value, list):
        _fail(where, path, f"is {_type(value)}, not a list")
    if len(value) > limit:
        _fail(where, path, f"has {len(value)} items, more than {limit}")
    return value


def _text(where: str, path: str, value: Any, pattern: re.Pattern[str] | None = None, what: str = "") -> str:
    if not isinstance(value, str):
        _fail(where, path, f"is {_type(value)}, not a string")
    if pattern is not None and not pattern.fullmatch(value):
        _fail(where, path, f"{echo(value)} is not {what}")
    if len(value) > _TEXT_LIMIT or not value.isprintable():
        _fail(where, path, f"{echo(value)} is not a short printable string")
    return value


def _int(where: str, path: str, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(where, path, f"is {_type(value)}, not an integer")
    if not low <= value <= high:
        _fail(where, path, f"{echo(value)} is outside {low}..{high}")
    return value


def freeze(value: Any) -> Any:
    """The document, read-only: objects as mapping proxies, lists as tuples (depth is capped)."""
    if isinstance(value, dict):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def _checksums(where: str, path: str, entry: dict[str, Any], sealed: tuple[str, ...]) -> None:
    recorded = _object(where, f"{path}.{CHECKSUM_KEY}" if path else CHECKSUM_KEY, entry[CHECKSUM_KEY], frozenset(sealed))
    actual = field_checksums(entry, sealed)
    for name in sealed:
        field = f"{path}.{name}" if path else name
        digest = _text(where, f"{field} checksum", recorded[name], _SHA256, "a sha256 digest")
        if digest != actual[name]:
            _fail(where, field, "checksum mismatch: edited after the build (rebuild or reinstall the library)")


def toolkit_entry(where: str, value: Any) -> ToolkitEntry:
    """The ``toolkit`` table; its messages name ``toolkit.<field>`` and the value found."""
    if not isinstance(value, dict):
        _fail(where, "", f"toolkit is {type(value).__name__}, not an object")
    table = _object(where, "toolkit", value, _TOOLKIT_REQUIRED, _TOOLKIT_OPTIONAL)
    version, cuda_major = table["version"], table["cuda_major"]
    min_driver, wheel = table["min_driver"], table["wheel"]
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        _fail(where, "", f"toolkit.version {echo(version)} is not a version like '13.0.88'")
    if not isinstance(cuda_major, int) or isinstance(cuda_major, bool) or not 1 <= cuda_major <= 999:
        _fail(where, "", f"toolkit.cuda_major {echo(cuda_major)} is not a CUDA major version like 13")
    if not isinstance(min_driver, int) or isinstance(min_driver, bool) or not 1000 <= min_driver <= 999_999:
        _fail(where, "", f"toolkit.min_driver {echo(min_driver)} is not a cuDriverGetVersion number like 13000")
    if not isinstance(wheel, str) or not _WORD.fullmatch(wheel.strip()):
        _fail(where, "", f"toolkit.wheel {echo(wheel)} is not a distribution name like 'aotc'")
    extra = {key: _text(where, f"toolkit.{key}", table.get(key, ""), _NAME_OR_EMPTY, "a name") for key in _TOOLKIT_OPTIONAL}
    return ToolkitEntry(version, cuda_major, min_driver, wheel.strip(), extra["compiler"], extra["compression"])


def _semirings(where: str, value: Any) -> None:
    table = _table(where, "semirings", value, _MAX_ARCHS)
    for name, raw in table.items():
        path = f"semirings.{_key(where, 'semirings', name)}"
        spec = _object(where, path, raw, _SEMIRING_KEYS)
        for key in ("add", "mul", "zero", "one"):
            _text(where, f"{path}.{key}", spec[key], _CONSTANT, "an operation or constant like 'max' or '-inf'")
        if not isinstance(spec["counting"], bool):
            _fail(where, f"{path}.counting", f"is {_type(spec['counting'])}, not a boolean")


def _key(where: str, path: str, name: str) -> str:
    if not _IDENTIFIER.fullmatch(name):
        _fail(where, path, f"key {echo(name)} is not a name (letters, digits, underscores)")
    return name


def _file(where: str, path: str, value: Any, subfolder: str) -> FileEntry:
    entry = _object(where, path, value, frozenset({"file", "sha256", "size"}))
    file = entry["file"]
    if not isinstance(file, str):
        _fail(where, f"{path}.file", f"is {_type(file)}, not a string")
    head, _, name = file.rpartition("/") if subfolder else ("", "", file)
    if head != subfolder or not _PLAIN_FILE.fullmatch(name) or ".." in name:
        what = f"a plain file name under {subfolder}/" if subfolder else "a plain file name"
        _fail(where, f"{path}.file", f"{echo(file)} is not {what}")
    sha256 = _text(where, f"{path}.sha256", entry["sha256"], _SHA256, "a sha256 digest (64 lowercase hex digits)")
    return FileEntry(file, sha256, _int(where, f"{path}.size", entry["size"], 0, MAX_FILE_BYTES))


def _params(where: str, path: str, value: Any) -> tuple[Param, ...]:
    params = []
    for i, raw in enumerate(_list(where, path, value, _MAX_PARAMS)):
        at = f"{path}[{i}]"
        item = _object(where, at, raw, frozenset({"name", "ctype", "kind", "pack"}))
        name = _text(where, f"{at}.name", item["name"], _IDENTIFIER, "a parameter name")
        if any(p.name == name for p in params):
            _fail(where, f"{at}.name", f"{echo(name)} names two parameters")
        ctype = _text(where, f"{at}.ctype", item["ctype"], _CTYPE, "a C type")
        kind = _text(where, f"{at}.kind", item["kind"])
        if kind not in PACK_CODES:
            _fail(where, f"{at}.kind", f"{echo(kind)} is not one of {', '.join(PACK_CODES)}")
        pack = _text(where, f"{at}.pack", item["pack"])
        if pack != PACK_CODES[kind]:
            _fail(where, f"{at}.pack", f"{echo(pack)} is not the pack code of kind {kind!r} ({PACK_CODES[kind]!r})")
        params.append(Param(name, ctype, kind, pack))
    return tuple(params)


def _launch(where: str, path: str, value: Any, params: tuple[Param, ...]) -> Launch:
    keys = frozenset({"block", "grid", "shared_bytes_static", "shared_bytes_dynamic"})
    launch = _object(where, path, value, keys)
    block_list = _list(where, f"{path}.block", launch["block"], 3)
    grid_list = _list(where, f"{path}.grid", launch["grid"], 3)
    if len(block_list) != 3 or len(grid_list) != 3:
        _fail(where, f"{path}.block" if len(block_list) != 3 else f"{path}.grid", "needs 3 axes")
    block = tuple(_int(where, f"{path}.block[{i}]", b, 1, _MAX_THREADS) for i, b in enumerate(block_list))
    if block[0] * block[1] * block[2] > _MAX_THREADS:
        _fail(where, f"{path}.block", f"{list(block)} is more than {_MAX_THREADS} threads")
    sizes = {p.name for p in params if p.kind != "ptr"}
    grid = []
    for i, raw in enumerate(grid_list):
        at = f"{path}.grid[{i}]"
        axis = _object(where, at, raw, frozenset({"extent", "tile"}))
        extent = _text(where, f"{at}.extent", axis["extent"])
        # A size parameter or a number, or a declared kernel's product of them ("rows*heads", "4*n").
        factors = extent.split("*")
        if len(factors) > 8 or not all(f in sizes or (f.isascii() and f.isdigit() and len(f) <= 10) for f in factors):
            _fail(where, f"{at}.extent", f"{echo(extent)} is neither a size parameter, a number, nor a product of them")
        grid.append((extent, _int(where, f"{at}.tile", axis["tile"], 1, _MAX_INT)))
    shared = [_int(where, f"{path}.{k}", launch[k], 0, _MAX_INT) for k in ("shared_bytes_static", "shared_bytes_dynamic")]
    return Launch(block, tuple(grid), shared[0], shared[1])  # type: ignore[arg-type]


def _archs(where: str, path: str, value: Any) -> tuple[str, ...]:
    items = _list(where, path, value, _MAX_ARCHS)
    return tuple(_text(where, f"{path}[{i}]", a, ARCH_TEXT, "an arch like '80', '90a' or '100f'") for i, a in enumerate(items))


def _resources(where: str, path: str, value: Any) -> Mapping[str, Mapping[str, int]]:
    table = _table(where, path, value, _MAX_ARCHS)
    result = {}
    for arch, raw in table.items():
        at = f"{path}.{_text(where, path, arch, ARCH_TEXT, 'an arch like 80')}"
        usage = _table(where, at, raw, _MAX_ARCHS)
        for key, number in usage.items():
            _int(where, f"{at}.{_key(where, at, key)}", number, 0, _MAX_INT)
        result[arch] = MappingProxyType(dict(usage))
    return MappingProxyType(result)


def _axes(where: str, path: str, value: Any) -> Mapping[str, str | int]:
    table = _table(where, path, value, _MAX_PARAMS)
    for axis, axis_value in table.items():
        at = f"{path}.{_text(where, path, axis, _IDENTIFIER, 'an axis name')}"
        if type(axis_value) is int:
            _int(where, at, axis_value, 0, _MAX_INT)
        else:
            _text(where, at, axis_value, _IDENTIFIER, "an axis value (a name or an integer)")
    return MappingProxyType(dict(table))


def _signature(where: str, path: str, value: Any, params: tuple[Param, ...]) -> tuple[DeclaredParam, ...]:
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
            item = _object(where, at, raw, frozenset({"name", "scalar", "dim"}))
            if item["name"] != param.name or item["scalar"] != param.kind or type(item["dim"]) is not bool:
                _fail(where, at, f"does not describe parameter {param.name} ({param.kind}) as a scalar")
            result.append(DeclaredParam(param.name, "", param.kind, (), True, item["dim"]))
            continue
        item = _object(where, at, raw, frozenset({"name", "array"}))
        array = _object(where, f"{at}.array", item["array"], frozenset({"dtype", "role", "shape"}), frozenset({"optional", "strides"}))
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
        result.append(DeclaredParam(param.name, array["role"], dtype, tuple(shape), False, False, len(optional), strides))
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


def _kernel(where: str, name: str, value: Any, semirings: Mapping[str, Any]) -> IndexKernel:
    path = f"kernels.{name}"
    declared = isinstance(value, dict) and "axes" in value
    entry = _object(where, path, value, _DECLARED_REQUIRED if declared else _KERNEL_REQUIRED, _DECLARED_OPTIONAL if declared else _KERNEL_OPTIONAL)
    found_by = ("symbol", "family") if declared else ("symbol", "family", "semiring", "dtype", "pass", "variant")
    words = dict.fromkeys(("semiring", "dtype", "pass", "variant"), "")
    words.update({k: _text(where, f"{path}.{k}", entry[k], _IDENTIFIER, "a name") for k in found_by})
    if not declared and words["semiring"] not in semirings:
        _fail(where, f"{path}.semiring", f"{echo(words['semiring'])} is not in the semirings table")
    params = _params(where, f"{path}.params", entry["params"])
    axes = _axes(where, f"{path}.axes", entry["axes"]) if declared else None
    signature = _signature(where, f"{path}.signature", entry["signature"], params) if declared else None
    backward = _backward(where, f"{path}.backward", entry["backward"]) if "backward" in entry else None
    launch = _launch(where, f"{path}.launch", entry["launch"], params)
    fatbin = _file(where, f"{path}.fatbin", entry["fatbin"], "")
    source = _file(where, f"{path}.source", entry["source"], SOURCE_DIR)
    sass, ptx = _archs(where, f"{path}.sass", entry["sass"]), _archs(where, f"{path}.ptx", entry["ptx"])
    resources = _resources(where, f"{path}.resources", entry.get("resources", {}))
    _checksums(where, path, entry, sealed_fields(entry))
    return IndexKernel(
        name, words["symbol"], words["family"], words["semiring"], words["dtype"], words["pass"], words["variant"],
        params, launch, fatbin, source, sass, ptx, resources, axes, signature, backward,
    )  # fmt: skip


def _backward(where: str, path: str, value: Any) -> tuple[str, tuple[str, ...]]:
    """A declared kernel's backward pairing: (the family, the arrays it saves)."""
    item = _object(where, path, value, frozenset({"family", "saves"}))
    family = _text(where, f"{path}.family", item["family"], _IDENTIFIER, "a family name")
    saves = tuple(_text(where, f"{path}.saves[{i}]", s, _IDENTIFIER, "an array name") for i, s in enumerate(_list(where, f"{path}.saves", item["saves"], _MAX_PARAMS)))
    return family, saves


def validate_top(where: str, document: Any) -> ToolkitEntry | None:
    """Check everything but the kernels' entries: the schema, the top-level keys,
    the library's seal (its name and semirings), the toolkit table, and that the
    kernels table is a table. Returns the toolkit (None where the index has none)."""
    if not isinstance(document, dict):
        _fail(where, "", f"not an aotc index (the top level is {_type(document)}, not an object)")
    schema = document.get("schema")
    if type(schema) is not int or schema != SCHEMA:  # not True, not 2.0
        hint = "; rebuild the library with this aotc" if schema == 1 else ""
        _fail(where, "", f"index schema {echo(schema)}, this aotc reads schema {SCHEMA}{hint}")
    _object(where, "", document, _TOP_REQUIRED, _TOP_OPTIONAL)
    _text(where, "library", document["library"], _IDENTIFIER, "a library name")
    for key in ("aotc_version", "nvcc_version"):
        if key in document:
            _text(where, key, document[key], _WORD, "a version")
    _semirings(where, document["semirings"])
    toolkit = toolkit_entry(where, document["toolkit"]) if "toolkit" in document else None
    _table(where, "kernels", document["kernels"], _MAX_KERNELS)
    _checksums(where, "", document, TOP_SEALED)
    return toolkit


def kernel(where: str, name: str, entry: Any, semirings: Mapping[str, Any]) -> IndexKernel:
    """One kernel's entry, checked and its checksums recomputed; ``semirings`` is
    the (checked) semirings table its semiring must be in."""
    return _kernel(where, _key(where, "kernels", name), entry, semirings)


def duplicate_kind(where: str, name: str, other: str) -> NoReturn:
    _fail(where, f"kernels.{name}", f"has the semiring, dtype, pass and variant of kernel {other!r}")


def validate(where: str, document: Any) -> Validated:
    """Check the whole parsed document; raises IndexFormatError naming the first bad field."""
    toolkit = validate_top(where, document)
    kernels: dict[str, IndexKernel] = {}
    owners: dict[tuple[str, str, str, str], str] = {}
    for name, entry in document["kernels"].items():
        checked = kernel(where, name, entry, document["semirings"])
        other = owners.setdefault(checked.key, name) if checked.axes is None else name
        if other != name:
            duplicate_kind(where, name, other)
        kernels[name] = checked
    return Validated(document, kernels, toolkit)
