"""Read and validate a kernel manifest, and expand it into ``KernelSpec`` values.

Validation is strict because a manifest drives a long build: every mistake is
caught here, before anything compiles, and reported as one line naming the
file, the line and the key (``manifest.yaml:12: families.gemm.matrix.dtype:
unknown dtype 'f16' (known: f32, f64)``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

from aotc.build._yaml import LineDict, LineList, load_yaml

from aotc.errors import YamlError
from aotc.build.abi import PASSES, VARIANTS, LaunchGeometry, Param, Tile, kernel_params, launch_geometry
from aotc.archs import DEFAULT_SASS, arch_sort_key, parse_arch
from aotc.errors import ArchError
from aotc.errors import ManifestError
from aotc.semiring import CONSTANTS, DTYPES, DType, Semiring

__all__ = [
    "SHIPPED_TEMPLATES_DIR",
    "SHIPPED_TEMPLATES_PREFIX",
    "Archs",
    "Family",
    "KernelSpec",
    "Manifest",
    "load_manifest",
    "shipped_template_sets",
]

SHIPPED_TEMPLATES_PREFIX = "aotc:"
# Template sets that ship inside the aotc package (aotc/build/templates/<set>/).
SHIPPED_TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_STATIC_SHARED = 48 * 1024  # the static __shared__ limit on every supported arch
_MAX_THREADS = 1024
_MATRIX_AXES = ("semiring", "dtype", "pass", "variant")


@dataclass(frozen=True)
class Archs:
    """The SASS architectures to compile and the PTX architectures to embed."""

    sass: tuple[str, ...]
    ptx: tuple[str, ...]


@dataclass(frozen=True)
class Family:
    """One kernel family: a template and the combinations it is expanded for."""

    name: str
    template: str


@dataclass(frozen=True)
class KernelSpec:
    """One kernel to generate and compile: a point of a family's matrix."""

    name: str
    family: str
    template: str
    semiring: Semiring
    dtype: DType
    pass_name: str
    variant: str
    tile: Tile

    @property
    def symbol(self) -> str:
        return self.name

    @property
    def params(self) -> tuple[Param, ...]:
        return kernel_params(self.pass_name, self.variant, self.dtype)

    @property
    def launch(self) -> LaunchGeometry:
        return launch_geometry(self.tile, self.semiring.element_size(self.dtype), self.pass_name, self.variant)


@dataclass(frozen=True)
class Manifest:
    """A validated manifest and its expansion."""

    path: Path
    library: str
    templates_dir: Path
    archs: Archs
    semirings: tuple[Semiring, ...]
    dtypes: tuple[str, ...]
    families: tuple[Family, ...]
    kernels: tuple[KernelSpec, ...]

    def with_archs(self, sass: tuple[str, ...] | None = None, ptx: tuple[str, ...] | None = None) -> Manifest:
        """The same manifest with overridden architecture lists.

        Overriding only SASS makes PTX the highest SASS architecture, as the
        manifest default does: a reduced build stays reduced.
        """
        if sass is None and ptx is None:
            return self
        new_sass = sass if sass is not None else self.archs.sass
        new_ptx = ptx if ptx is not None else (max(new_sass, key=arch_sort_key),)
        return replace(self, archs=Archs(new_sass, new_ptx))


class _Checker:
    """Validation helpers that turn every problem into one ManifestError line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, line: int, key: str, message: str) -> NoReturn:
        msg = f"{self.path}:{line}: {key}: {message}"
        raise ManifestError(msg)

    def mapping(
        self, value: Any, key: str, line: int, *, required: Iterable[str] = (), optional: Iterable[str] = ()
    ) -> LineDict:
        if not isinstance(value, LineDict):
            self.fail(line, key, f"expected a mapping, got {_describe(value)}")
        required, optional = tuple(required), tuple(optional)
        for name in value:
            if name not in required and name not in optional:
                known = ", ".join((*required, *optional))
                self.fail(value.key_lines[name], _join(key, name), f"unknown key (known: {known})")
        for name in required:
            if name not in value:
                self.fail(value.line, key, f"missing required key {name!r}")
        return value

    def sequence(self, value: Any, key: str, line: int) -> LineList:
        if not isinstance(value, LineList):
            self.fail(line, key, f"expected a list, got {_describe(value)}")
        if not value:
            self.fail(line, key, "must not be empty")
        return value

    def identifier(self, value: Any, key: str, line: int) -> str:
        if not isinstance(value, str) or not _IDENTIFIER.match(value):
            self.fail(line, key, f"{value!r} is not a C identifier (letters, digits and _, not starting with a digit)")
        return value

    def choices(self, value: Any, key: str, line: int, known: Iterable[str], what: str) -> tuple[str, ...]:
        """A non-empty list of distinct names, each one of ``known``."""
        items = self.sequence(value, key, line)
        known = tuple(known)
        result: list[str] = []
        for item, item_line in zip(items, items.item_lines):
            if not isinstance(item, str) or item not in known:
                self.fail(item_line, key, f"unknown {what} {item!r} (known: {', '.join(known)})")
            if item in result:
                self.fail(item_line, key, f"{what} {item!r} is listed twice")
            result.append(item)
        return tuple(result)

    def positive_int(self, value: Any, key: str, line: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            self.fail(line, key, f"expected a positive integer, got {value!r}")
        return value


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    return {LineDict: "a mapping", LineList: "a list"}.get(type(value), f"{type(value).__name__} {value!r}")


def _join(*keys: str) -> str:
    return ".".join(k for k in keys if k and k != "(root)")


def _line(mapping: LineDict, key: str) -> int:
    return mapping.key_lines.get(key, mapping.line)


def _parse_archs(check: _Checker, value: Any, line: int) -> Archs:
    if value is None:
        return Archs(DEFAULT_SASS, (DEFAULT_SASS[-1],))
    archs = check.mapping(value, "archs", line, optional=("sass", "ptx"))

    def arch_list(key: str) -> tuple[str, ...]:
        items = check.sequence(archs[key], f"archs.{key}", _line(archs, key))
        result: list[str] = []
        for item, item_line in zip(items, items.item_lines):
            try:
                arch = parse_arch(item)
            except ArchError as exc:
                check.fail(item_line, f"archs.{key}", str(exc))
            if arch in result:
                check.fail(item_line, f"archs.{key}", f"architecture {arch} is listed twice")
            result.append(arch)
        return tuple(sorted(result, key=arch_sort_key))

    sass = arch_list("sass") if "sass" in archs else DEFAULT_SASS
    ptx = arch_list("ptx") if "ptx" in archs else (max(sass, key=arch_sort_key),)
    return Archs(sass, ptx)


def _constant(check: _Checker, value: Any, key: str, line: int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = {float("inf"): "+inf", float("-inf"): "-inf"}.get(value, str(value))
        text = {"0.0": "0", "1.0": "1"}.get(text, text)
    elif isinstance(value, str):
        text = {"inf": "+inf"}.get(value.strip().lower(), value.strip().lower())
    else:
        check.fail(line, key, f"expected a constant, got {_describe(value)}")
    if text not in CONSTANTS:
        check.fail(line, key, f"unknown constant {value!r} (known: {', '.join(CONSTANTS)})")
    return text


def _parse_semirings(check: _Checker, value: Any, line: int) -> tuple[Semiring, ...]:
    table = check.mapping(value, "semirings", line, optional=value.keys() if isinstance(value, LineDict) else ())
    if not table:
        check.fail(line, "semirings", "must not be empty")
    result = []
    for name, spec in table.items():
        key, name_line = f"semirings.{name}", _line(table, name)
        check.identifier(name, key, name_line)
        fields = check.mapping(spec, key, name_line, required=("add", "mul", "zero", "one"), optional=("counting",))
        counting = fields.get("counting", False)
        if not isinstance(counting, bool):
            check.fail(_line(fields, "counting"), f"{key}.counting", f"expected true or false, got {_describe(counting)}")
        zero = _constant(check, fields["zero"], f"{key}.zero", _line(fields, "zero"))
        one = _constant(check, fields["one"], f"{key}.one", _line(fields, "one"))
        semiring = Semiring(name, fields["add"], fields["mul"], zero, one, counting)
        try:
            semiring.validate()
        except ValueError as exc:
            field, _, reason = str(exc).partition(": ")
            check.fail(_line(fields, field), f"{key}.{field}", reason)
        if not any(semiring.supports(d) for d in DTYPES.values()):
            check.fail(name_line, key, f"operations {semiring.add}/{semiring.mul} fit no dtype")
        result.append(semiring)
    return tuple(result)


def _parse_tile(check: _Checker, value: Any, key: str, line: int) -> Tile:
    fields = check.mapping(
        value, key, line, required=("block_m", "block_n", "block_k", "thread_m", "thread_n"), optional=("stages",)
    )
    sizes = {name: check.positive_int(v, f"{key}.{name}", _line(fields, name)) for name, v in fields.items()}
    tile = Tile(**sizes)
    if tile.stages not in (1, 2):
        check.fail(_line(fields, "stages"), f"{key}.stages", f"expected 1 or 2, got {tile.stages}")
    for block, thread in (("block_m", "thread_m"), ("block_n", "thread_n")):
        if sizes[block] % sizes[thread]:
            check.fail(line, key, f"{block}={sizes[block]} is not a multiple of {thread}={sizes[thread]}")
    if tile.threads > _MAX_THREADS:
        check.fail(line, key, f"{tile.threads} threads per block exceed {_MAX_THREADS}")
    for block in ("block_m", "block_n"):
        if (sizes[block] * tile.block_k) % tile.threads:
            check.fail(line, key, f"{block}*block_k={sizes[block] * tile.block_k} is not a multiple of {tile.threads} threads")
    return tile


def _as_names(check: _Checker, value: Any, key: str, line: int) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(check.sequence(value, key, line))


@dataclass(frozen=True)
class _Matrix:
    axes: dict[str, tuple[str, ...]]
    line: int
    tiles: dict[str, Tile]


def _parse_matrices(
    check: _Checker, value: Any, key: str, line: int, semirings: Mapping[str, Semiring], dtypes: tuple[str, ...]
) -> list[_Matrix]:
    known = {"semiring": tuple(semirings), "dtype": dtypes, "pass": PASSES, "variant": VARIANTS}
    blocks = list(zip(value, value.item_lines)) if isinstance(value, LineList) else [(value, line)]
    if isinstance(value, LineList) and not value:
        check.fail(line, key, "must not be empty")
    matrices = []
    for index, (block, block_line) in enumerate(blocks):
        block_key = f"{key}[{index}]" if isinstance(value, LineList) else key
        fields = check.mapping(
            block, block_key, block_line, required=("semiring", "dtype", "pass"), optional=("variant", "tiles")
        )
        axes = {
            axis: check.choices(fields[axis], f"{block_key}.{axis}", _line(fields, axis), known[axis], axis)
            for axis in _MATRIX_AXES
            if axis in fields
        }
        axes.setdefault("variant", ("single",))
        tiles = {}
        if "tiles" in fields:
            tiles = _parse_tiles(check, fields["tiles"], f"{block_key}.tiles", _line(fields, "tiles"), dtypes)
        matrices.append(_Matrix(axes, block_line, tiles))
    return matrices


def _parse_tiles(check: _Checker, value: Any, key: str, line: int, dtypes: tuple[str, ...]) -> dict[str, Tile]:
    """Tile sizes per dtype, or under ``default``."""
    tiles = check.mapping(value, key, line, optional=(*dtypes, "default"))
    return {dt: _parse_tile(check, v, f"{key}.{dt}", _line(tiles, dt)) for dt, v in tiles.items()}


def _parse_excludes(check: _Checker, value: Any, key: str, line: int, matrices: list[_Matrix]) -> list[dict[str, frozenset[str]]]:
    items = check.sequence(value, key, line)
    excludes = []
    for index, (item, item_line) in enumerate(zip(items, items.item_lines)):
        item_key = f"{key}[{index}]"
        fields = check.mapping(item, item_key, item_line, optional=_MATRIX_AXES)
        if not fields:
            check.fail(item_line, item_key, "an exclude must name at least one of semiring, dtype, pass, variant")
        rule = {}
        for axis, names in fields.items():
            names = _as_names(check, names, f"{item_key}.{axis}", _line(fields, axis))
            used = {n for m in matrices for n in m.axes[axis]}
            for name in names:
                if name not in used:
                    check.fail(_line(fields, axis), f"{item_key}.{axis}", f"{name!r} is not in this family's matrix")
            rule[axis] = frozenset(names)
        excludes.append(rule)
    return excludes


def _expand_family(
    check: _Checker, name: str, spec: Any, line: int, manifest_semirings: tuple[Semiring, ...], dtypes: tuple[str, ...], templates_dir: Path
) -> tuple[Family, list[tuple[KernelSpec, int]]]:
    key = f"families.{name}"
    check.identifier(name, key, line)
    fields = check.mapping(spec, key, line, required=("template", "matrix"), optional=("tiles", "exclude"))

    template = fields["template"]
    template_line = _line(fields, "template")
    if not isinstance(template, str) or not template:
        check.fail(template_line, f"{key}.template", f"expected a template file name, got {_describe(template)}")
    template_path = Path(template)
    if template_path.is_absolute() or ".." in template_path.parts:
        check.fail(template_line, f"{key}.template", f"{template!r} must be a path inside {templates_dir}")
    if not (templates_dir / template_path).is_file():
        check.fail(template_line, f"{key}.template", f"template {template!r} not found in {templates_dir}")

    semirings = {s.name: s for s in manifest_semirings}
    matrices = _parse_matrices(check, fields["matrix"], f"{key}.matrix", _line(fields, "matrix"), semirings, dtypes)

    tiles_key, tiles_line = f"{key}.tiles", _line(fields, "tiles")
    tiles = _parse_tiles(check, fields["tiles"], tiles_key, tiles_line, dtypes) if "tiles" in fields else {}

    excludes = []
    if "exclude" in fields:
        excludes = _parse_excludes(check, fields["exclude"], f"{key}.exclude", _line(fields, "exclude"), matrices)

    kernels = []
    for matrix in matrices:
        for combo in itertools.product(*(matrix.axes[axis] for axis in _MATRIX_AXES)):
            point = dict(zip(_MATRIX_AXES, combo))
            if any(all(point[axis] in names for axis, names in rule.items()) for rule in excludes):
                continue
            semiring, dtype = semirings[point["semiring"]], DTYPES[point["dtype"]]
            where = f"{point['semiring']} x {point['dtype']} x {point['pass']}"
            if not semiring.supports(dtype):
                check.fail(matrix.line, f"{key}.matrix", f"{where}: semiring {semiring.name!r} is not defined on {dtype.name}; exclude it or split the matrix")
            if point["pass"].startswith("backward") and not dtype.is_float:
                check.fail(matrix.line, f"{key}.matrix", f"{where}: backward passes need a float dtype; exclude it or split the matrix")
            if point["variant"] == "packed" and (dtype.name != "bool" or point["pass"] not in ("forward", "argmax")):
                check.fail(matrix.line, f"{key}.matrix", f"{where}: the packed variant is for bool forward and argmax only")
            if point["pass"].startswith("backward") and not semiring.has_gradient:
                check.fail(matrix.line, f"{key}.matrix", f"{where}: semiring {semiring.name!r} has no gradient (needs add max/min, mul add/mul, no counting)")
            # A matrix block's own tiles come first, then the family's.
            tile = next((t[n] for t in (matrix.tiles, tiles) for n in (dtype.name, "default") if n in t), None)
            if tile is None:
                check.fail(matrix.line, f"{key}.matrix", f"{where}: no tile sizes for dtype {dtype.name!r} (add tiles: {{{dtype.name}: ...}} or default)")
            suffix = "" if point["variant"] == "single" else f"_{point['variant']}"
            kernel_name = f"{name}_{semiring.name}_{dtype.name}_{point['pass']}{suffix}"
            kernel = KernelSpec(kernel_name, name, template, semiring, dtype, point["pass"], point["variant"], tile)
            shared = kernel.launch.shared_bytes_static
            if shared > _MAX_STATIC_SHARED:
                check.fail(matrix.line, f"{key}.matrix", f"{where}: {kernel_name} needs {shared} bytes of shared memory, over the {_MAX_STATIC_SHARED}-byte static limit")
            kernels.append((kernel, matrix.line))
    if not kernels:
        check.fail(line, key, "the matrix expands to no kernels after excludes")
    return Family(name, template), kernels


def _templates_dir(check: _Checker, templates: Any, line: int, path: Path) -> Path:
    """The manifest's template folder: beside it, or ``aotc:<set>``, a set shipped in aotc.

    Shipped sets let a downstream manifest add a semiring and reuse aotc's own
    kernels without copying their templates.
    """
    if isinstance(templates, str) and templates.startswith(SHIPPED_TEMPLATES_PREFIX):
        name = templates.removeprefix(SHIPPED_TEMPLATES_PREFIX)
        known = shipped_template_sets()
        if name not in known:
            check.fail(line, "templates", f"no template set {name!r} ships with aotc (shipped: {', '.join(known) or 'none'})")
        return SHIPPED_TEMPLATES_DIR / name
    if not isinstance(templates, str) or not templates or Path(templates).is_absolute() or ".." in Path(templates).parts:
        check.fail(line, "templates", f"expected a folder inside the manifest's folder or aotc:<set>, got {templates!r}")
    templates_dir = path.parent / templates
    if not templates_dir.is_dir():
        check.fail(line, "templates", f"folder {templates_dir} not found")
    return templates_dir


def shipped_template_sets() -> list[str]:
    """The template sets installed with aotc, usable as ``templates: aotc:<set>``."""
    if not SHIPPED_TEMPLATES_DIR.is_dir():
        return []
    return sorted(p.name for p in SHIPPED_TEMPLATES_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def parse_manifest(text: str, path: Path) -> Manifest:
    """Validate manifest text read from ``path`` and expand it."""
    check = _Checker(path)
    try:
        root = load_yaml(text)
    except YamlError as exc:
        check.fail(exc.line, exc.key, exc.message)
    if root is None:
        check.fail(1, "(root)", "the manifest is empty")
    root = check.mapping(root, "(root)", 1, required=("library", "semirings", "dtypes", "families"), optional=("archs", "templates"))

    library = check.identifier(root["library"], "library", _line(root, "library"))

    templates = root.get("templates", "templates")
    templates_line = _line(root, "templates")
    templates_dir = _templates_dir(check, templates, templates_line, path)

    archs = _parse_archs(check, root.get("archs"), _line(root, "archs"))
    semirings = _parse_semirings(check, root["semirings"], _line(root, "semirings"))
    dtypes = check.choices(root["dtypes"], "dtypes", _line(root, "dtypes"), DTYPES, "dtype")

    families_map = check.mapping(root["families"], "families", _line(root, "families"), optional=root["families"].keys() if isinstance(root["families"], LineDict) else ())
    if not families_map:
        check.fail(_line(root, "families"), "families", "must not be empty")
    families, kernels, seen = [], [], {}
    for name, spec in families_map.items():
        family, expanded = _expand_family(check, name, spec, _line(families_map, name), semirings, dtypes, templates_dir)
        families.append(family)
        for kernel, kernel_line in expanded:
            if kernel.name in seen:
                check.fail(kernel_line, f"families.{name}", f"kernel {kernel.name} is also produced by family {seen[kernel.name]}")
            seen[kernel.name] = name
            kernels.append(kernel)
    return Manifest(path, library, templates_dir, archs, semirings, dtypes, tuple(families), tuple(kernels))


def load_manifest(path: str | Path) -> Manifest:
    """Read, validate and expand the manifest at ``path``."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        msg = f"{path}: cannot read manifest: {exc.strerror or exc}"
        raise ManifestError(msg) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{path}:1: (file): not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ManifestError(msg) from None
    return parse_manifest(text, path)
