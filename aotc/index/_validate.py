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

from aotc.errors import echo
from aotc.index import _declared_entries
from aotc.index._values import (
    _CONSTANT,
    _CTYPE,
    _IDENTIFIER,
    _MAX_ARCHS,
    _MAX_INTERNED,
    _MAX_INT,
    _MAX_KERNELS,
    _MAX_PARAMS,
    _MAX_THREADS,
    _NAME_OR_EMPTY,
    _PLAIN_FILE,
    _SHA256,
    _VERSION,
    _WORD,
    _fail,
    _int,
    _list,
    _object,
    _table,
    _text,
    _type,
)
from aotc.index.schema import (
    ARCH_TEXT,
    CHECKSUM_KEY,
    KERNEL_SEALED,
    LAYOUT_KEYS,
    MAX_FILE_BYTES,
    PACK_CODES,
    SCHEMA,
    SOURCE_DIR,
    TOP_SEALED,
    field_checksums,
    sealed_fields,
)
from aotc.index.views import FileEntry, IndexKernel, Launch, Param, ToolkitEntry

MappingProxyType = type(type.__dict__)  # types.MappingProxyType, without importing types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["Validated", "backward_targets", "freeze", "kernel", "params_of", "toolkit_entry", "validate", "validate_top"]

_TOP_REQUIRED = frozenset({"schema", "library", "semirings", "kernels", CHECKSUM_KEY})
# The build's layout (aotc.index._layout): where its parts lie, the families' catalogs and
# the directory, derived from the kernels table and held to it by LibraryIndex: locators,
# never read for what a kernel does before that kernel's own entry is checked.
_TOP_OPTIONAL = frozenset({"aotc_version", "toolkit", "nvcc_version", *LAYOUT_KEYS})
_KERNEL_REQUIRED = frozenset({*KERNEL_SEALED, CHECKSUM_KEY})
_KERNEL_OPTIONAL = frozenset({"resources", "backward"})
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


_PARAM_KEYS = frozenset({"name", "ctype", "kind", "pack"})
# Checked parameters, interned: a library's kernels share most of theirs.
_PARAMS: dict[tuple[str, str, str], Param] = {}


def params_of(where: str, path: str, value: Any) -> tuple[Param, ...]:
    """A kernel's ``params``, checked (a family's catalog holds them too)."""
    params, names = [], set()
    for i, raw in enumerate(_list(where, path, value, _MAX_PARAMS)):
        at = f"{path}[{i}]"
        item = _object(where, at, raw, _PARAM_KEYS)
        name = _text(where, f"{at}.name", item["name"], _IDENTIFIER, "a parameter name")
        if name in names:
            _fail(where, f"{at}.name", f"{echo(name)} names two parameters")
        names.add(name)
        ctype = _text(where, f"{at}.ctype", item["ctype"], _CTYPE, "a C type")
        kind = _text(where, f"{at}.kind", item["kind"])
        if kind not in PACK_CODES:
            _fail(where, f"{at}.kind", f"{echo(kind)} is not one of {', '.join(PACK_CODES)}")
        pack = _text(where, f"{at}.pack", item["pack"])
        if pack != PACK_CODES[kind]:
            _fail(where, f"{at}.pack", f"{echo(pack)} is not the pack code of kind {kind!r} ({PACK_CODES[kind]!r})")
        key = (name, ctype, kind)
        param = _PARAMS.get(key)
        if param is None:  # immutable, so shared by every kernel that has it
            param = Param(name, ctype, kind, pack)
            if len(_PARAMS) < _MAX_INTERNED:
                _PARAMS[key] = param
        params.append(param)
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


def _kernel(where: str, name: str, value: Any) -> IndexKernel:
    path = f"kernels.{name}"
    entry = _object(where, path, value, _KERNEL_REQUIRED, _KERNEL_OPTIONAL)
    symbol = _text(where, f"{path}.symbol", entry["symbol"], _IDENTIFIER, "a name")
    family = _text(where, f"{path}.family", entry["family"], _IDENTIFIER, "a name")
    params = params_of(where, f"{path}.params", entry["params"])
    axes = _declared_entries.axes(where, f"{path}.axes", entry["axes"])
    signature = _declared_entries.signature(where, f"{path}.signature", entry["signature"], params, axes)
    backward = _declared_entries.backward(where, f"{path}.backward", entry["backward"], name) if "backward" in entry else None
    launch = _launch(where, f"{path}.launch", entry["launch"], params)
    fatbin = _file(where, f"{path}.fatbin", entry["fatbin"], "")
    source = _file(where, f"{path}.source", entry["source"], SOURCE_DIR)
    sass, ptx = _archs(where, f"{path}.sass", entry["sass"]), _archs(where, f"{path}.ptx", entry["ptx"])
    resources = _resources(where, f"{path}.resources", entry.get("resources", {}))
    _checksums(where, path, entry, sealed_fields(entry))
    return IndexKernel(name, symbol, family, params, launch, fatbin, source, sass, ptx, resources, axes, signature, backward)


def validate_top(where: str, document: Any) -> ToolkitEntry | None:
    """Check everything but the kernels' entries: the schema, the top-level keys,
    the library's seal (its name and semirings), the toolkit table, and that the
    kernels table is a table. Returns the toolkit (None where the index has none)."""
    if not isinstance(document, dict):
        _fail(where, "", f"not an aotc index (the top level is {_type(document)}, not an object)")
    schema = document.get("schema")
    if type(schema) is not int or schema != SCHEMA:  # not True, not 2.0
        hint = "; rebuild the library with this aotc" if type(schema) is int and 0 < schema < SCHEMA else ""
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


def kernel(where: str, name: str, entry: Any) -> IndexKernel:
    """One kernel's entry, checked and its checksums recomputed."""
    return _kernel(where, _key(where, "kernels", name), entry)


def validate(where: str, document: Any) -> Validated:
    """Check the whole parsed document; raises IndexFormatError naming the first bad field."""
    toolkit = validate_top(where, document)
    kernels = {name: kernel(where, name, entry) for name, entry in document["kernels"].items()}
    for checked in kernels.values():
        backward_targets(where, checked, kernels)
    return Validated(document, kernels, toolkit)


def backward_targets(where: str, checked: IndexKernel, kernels: Mapping[str, Any]) -> None:
    """The kernels ``checked``'s backward names are kernels of the index (``kernels``:
    its names, or its checked views, which also hold a route's target to having
    gradient kernels of its own)."""
    if checked.backward is None:
        return
    path = f"kernels.{checked.name}.backward"
    named = [(f"{path}.through", checked.backward.through)] if checked.backward.through else [(f"{path}.kernels[{i}].kernel", k) for i, (k, _) in enumerate(checked.backward.kernels)]
    for at, target in named:
        if target not in kernels:
            _fail(where, at, f"{echo(target)} is not a kernel of this index")
        route = kernels[target]
        if checked.backward.through and isinstance(route, IndexKernel) and (route.backward is None or route.backward.through):
            _fail(where, at, f"{target} has no gradient kernels of its own to route to")
