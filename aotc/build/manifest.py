"""Read and validate a kernel manifest, and expand it into ``KernelSpec`` values.

Validation is strict because a manifest drives a long build: every mistake is
caught here, before anything compiles, and reported as one line naming the
file, the line and the key (``manifest.yaml:12: families.gemm.matrix.dtype:
unknown dtype 'f16' (known: f32, f64)``).

This module holds the model and the family expansion; :mod:`aotc.build._yaml`
reads the file, :mod:`aotc.build._checks` turns each problem into that line,
and :mod:`aotc.build._manifest_fields` parses the sections.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aotc._untrusted_files import open_regular, read_capped
from aotc.archs import arch_sort_key
from aotc.build._backward_fields import Backward, backward_field, check_backward
from aotc.build._checks import MAX_KERNELS, Checker, describe, line_of, listing
from aotc.build._family_fields import expand_points, kernel_name, parse_axes, parse_signature, point_text, resolve_signature
from aotc.build._family_launch import LAUNCH_KEYS, DeclaredLaunch, parse_launch
from aotc.build._family_rules import ConstantRule, choose, constants_at, parse_alternatives, parse_constants
from aotc.build._manifest_fields import MATRIX_AXES, parse_archs, parse_excludes, parse_matrices, parse_semirings, parse_tiles
from aotc.build._yaml import LineDict, key_text, load_yaml
from aotc.build.abi import LaunchGeometry, Param, Tile, kernel_params, launch_geometry
from aotc.build.signature import Signature
from aotc.errors import ManifestError, UnreadableFileError, YamlError, echo
from aotc.semiring import DTYPES, DType, Semiring

__all__ = [
    "MAX_MANIFEST_BYTES",
    "SHIPPED_TEMPLATES_DIR",
    "SHIPPED_TEMPLATES_PREFIX",
    "Archs",
    "DeclaredKernelSpec",
    "KernelSpec",
    "Manifest",
    "load_manifest",
    "shipped_template_sets",
]

SHIPPED_TEMPLATES_PREFIX = "aotc:"
# Template sets that ship inside the aotc package (aotc/build/templates/<set>/).
SHIPPED_TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

_MAX_STATIC_SHARED = 48 * 1024  # the static __shared__ limit on every supported arch
# aotc's own manifest is 3 KiB. The cap bounds what `aotc list` spends on a
# file it was handed: the pure-Python YAML reader needs several seconds for
# 256 KiB of dense flow mappings.
MAX_MANIFEST_BYTES = 256 * 1024


@dataclass(frozen=True)
class Archs:
    """The SASS architectures to compile and the PTX architectures to embed."""

    sass: tuple[str, ...]
    ptx: tuple[str, ...]


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
class DeclaredKernelSpec:
    """One kernel of a declared family: a point of its own axes, with the
    signature and launch geometry the manifest declares, resolved there."""

    name: str
    family: str
    template: str
    axes: tuple[tuple[str, str | int], ...]  # (axis, value), in the family's order
    signature: Signature
    declared_launch: DeclaredLaunch
    backward: Backward | None = None  # the family computing its gradients
    constants: tuple[tuple[str, int | str], ...] = ()  # the point's constants, for its template

    @property
    def symbol(self) -> str:
        return self.name

    @property
    def params(self) -> tuple[Param, ...]:
        return tuple(Param(p.name, p.ctype, p.kind) for p in self.signature.params)

    @property
    def launch(self) -> LaunchGeometry:
        grid = self.declared_launch.grid
        return LaunchGeometry(
            self.declared_launch.block,
            (grid[0].grid_entry(), grid[1].grid_entry(), grid[2].grid_entry()),
            # The template's own __shared__ arrays, where the family declares them
            # (else 0: only ptxas knows their size; see resources).
            self.declared_launch.shared_bytes_static,
            self.declared_launch.shared_bytes_dynamic,
        )


AnyKernelSpec = KernelSpec | DeclaredKernelSpec


@dataclass(frozen=True)
class Manifest:
    """A validated manifest and its expansion."""

    path: Path
    library: str
    templates_dir: Path
    archs: Archs
    semirings: tuple[Semiring, ...]
    dtypes: tuple[str, ...]
    kernels: tuple[AnyKernelSpec, ...]

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


def _expand_family(
    check: Checker, name: str, spec: Any, line: int, manifest_semirings: tuple[Semiring, ...], dtypes: tuple[str, ...], templates_dir: Path
) -> list[tuple[KernelSpec, int]]:
    key = f"families.{key_text(name)}"
    fields = check.mapping(spec, key, line, required=("template", "matrix"), optional=("tiles", "exclude"))
    template = _template(check, fields, key, templates_dir)
    semirings = {s.name: s for s in manifest_semirings}
    matrices = parse_matrices(check, fields["matrix"], f"{key}.matrix", line_of(fields, "matrix"), semirings, dtypes)

    tiles_key, tiles_line = f"{key}.tiles", line_of(fields, "tiles")
    tiles = parse_tiles(check, fields["tiles"], tiles_key, tiles_line, dtypes) if "tiles" in fields else {}

    excludes = []
    if "exclude" in fields:
        excludes = parse_excludes(check, fields["exclude"], f"{key}.exclude", line_of(fields, "exclude"), matrices)

    kernels = []
    for matrix in matrices:
        for combo in itertools.product(*(matrix.axes[axis] for axis in MATRIX_AXES)):
            point = dict(zip(MATRIX_AXES, combo))
            if any(all(point[axis] in names for axis, names in rule.items()) for rule in excludes):
                continue
            semiring, dtype = semirings[point["semiring"]], DTYPES[point["dtype"]]
            where = f"{point['semiring']} x {point['dtype']} x {point['pass']}"
            if not semiring.supports(dtype):
                check.fail(matrix.line, f"{key}.matrix", f"{where}: semiring {semiring.name} is not defined on {dtype.name}; exclude it or split the matrix")
            if point["pass"].startswith("backward") and not dtype.is_float:
                check.fail(matrix.line, f"{key}.matrix", f"{where}: backward passes need a float dtype; exclude it or split the matrix")
            if point["variant"] == "packed" and (dtype.name != "bool" or point["pass"] not in ("forward", "argmax")):
                check.fail(matrix.line, f"{key}.matrix", f"{where}: the packed variant is for bool forward and argmax only")
            if point["pass"].startswith("backward") and not semiring.has_gradient:
                check.fail(matrix.line, f"{key}.matrix", f"{where}: semiring {semiring.name} has no gradient (needs add max/min, mul add/mul, no counting)")
            # A matrix block's own tiles come first, then the family's.
            tile = next((t[n] for t in (matrix.tiles, tiles) for n in (dtype.name, "default") if n in t), None)
            if tile is None:
                check.fail(matrix.line, f"{key}.matrix", f"{where}: no tile sizes for dtype {dtype.name} (add tiles: {{{dtype.name}: ...}} or default)")
            suffix = "" if point["variant"] == "single" else f"_{point['variant']}"
            kernel_name = f"{name}_{semiring.name}_{dtype.name}_{point['pass']}{suffix}"
            kernel = KernelSpec(kernel_name, name, template, semiring, dtype, point["pass"], point["variant"], tile)
            shared = kernel.launch.shared_bytes_static
            if shared > _MAX_STATIC_SHARED:
                check.fail(matrix.line, f"{key}.matrix", f"{kernel_name} needs {shared} bytes of shared memory, over the {_MAX_STATIC_SHARED}-byte static limit")
            kernels.append((kernel, matrix.line))
    if not kernels:
        check.fail(line, key, "the matrix expands to no kernels after excludes")
    return kernels


def _template(check: Checker, fields: LineDict, key: str, templates_dir: Path) -> str:
    """The family's template: a file inside the template folder."""
    template = fields["template"]
    template_line = line_of(fields, "template")
    if not isinstance(template, str) or not template:
        check.fail(template_line, f"{key}.template", f"expected a template file name, got {describe(template)}")
    template_path = Path(template)
    if template_path.is_absolute() or ".." in template_path.parts:
        check.fail(template_line, f"{key}.template", f"{echo(template)} must be a path inside {echo(str(templates_dir))}")
    if not _is(Path.is_file, templates_dir / template_path):
        check.fail(template_line, f"{key}.template", f"template {echo(template)} not found in {echo(str(templates_dir))}")
    return template


# What a declared family's entry may hold; a family with a signature is declared.
_DECLARED_REQUIRED = ("template", "axes", "signature", "launch")
_DECLARED_OPTIONAL = ("name", "matrix", "exclude", "backward", "constants")


def _expand_declared(check: Checker, name: str, spec: LineDict, line: int, templates_dir: Path) -> list[tuple[DeclaredKernelSpec, int]]:
    """The kernels of a family that declares its axes, signature and launch geometry."""
    key = f"families.{key_text(name)}"
    fields = check.mapping(spec, key, line, required=_DECLARED_REQUIRED, optional=_DECLARED_OPTIONAL)
    template = _template(check, fields, key, templates_dir)
    axes = parse_axes(check, fields["axes"], f"{key}.axes", line_of(fields, "axes"))
    rules: tuple[ConstantRule, ...] = ()
    if "constants" in fields:
        rules = parse_constants(check, fields["constants"], f"{key}.constants", line_of(fields, "constants"), axes.values)
    points = expand_points(check, axes, fields.get("matrix"), fields.get("exclude"), key, fields)
    # Each matrix block's own constants, parsed once (its points share its Place).
    places = {id(place): place for _, place in points if place.constants is not None}
    blocks = {id(p.constants): parse_constants(check, p.constants, p.constants_key, p.line, axes.values) for p in places.values()}
    constant_names = frozenset(n for r in (*rules, *(r for b in blocks.values() for r in b)) for n in r.values)
    sig_key, sig_line = f"{key}.signature", line_of(fields, "signature")
    signatures = parse_alternatives(check, fields["signature"], sig_key, sig_line, axes.values)
    declared = {id(a): parse_signature(check, a.fields, a.key, a.line, axes, constant_names) for a in signatures}
    launches = parse_alternatives(check, fields["launch"], f"{key}.launch", line_of(fields, "launch"), axes.values)
    for a in launches:
        check.mapping(a.fields, a.key, a.line, required=("grid", "block"), optional=LAUNCH_KEYS)
    backward = backward_field(fields, check, key)
    if backward is not None and (len(signatures) > 1 or any(d.when for d in declared[id(signatures[0])])):
        check.fail(line_of(fields, "backward"), f"{key}.backward", "a family with a backward has one signature at every point (no alternatives, no parameter `when`)")
    kernels = []
    for point, place in points:
        at = dict(point)
        constants = constants_at(rules + blocks.get(id(place.constants), ()), at)
        values = {**constants, **at}
        where = point_text(point)
        kernel = kernel_name(check, fields.get("name"), name, point, constants, f"{key}.name", line_of(fields, "name"))
        chosen = choose(check, signatures, at, sig_key, sig_line, where)
        signature, absent = resolve_signature(check, declared[id(chosen)], point, values, chosen.key)
        launch = choose(check, launches, at, f"{key}.launch", line_of(fields, "launch"), where)
        geometry = parse_launch(check, launch.fields, place.launch, launch.key, values, where, signature, absent, place.launch_key)
        spec = DeclaredKernelSpec(kernel, name, template, point, signature, geometry, backward, tuple(constants.items()))
        kernels.append((spec, place.line))
    if not kernels:
        check.fail(line, key, "the matrix expands to no kernels after excludes")
    return kernels


def _is(kind: Callable[[Path], bool], path: Path) -> bool:
    """``path.is_file()`` or ``is_dir()``, false for a name the OS refuses (too long)."""
    try:
        return kind(path)
    except (OSError, ValueError):
        return False


def _templates_dir(check: Checker, templates: Any, line: int, path: Path) -> Path:
    """The manifest's template folder: beside it, or ``aotc:<set>``, a set shipped in aotc.

    Shipped sets let a downstream manifest add a semiring and reuse aotc's own
    kernels without copying their templates.
    """
    if isinstance(templates, str) and templates.startswith(SHIPPED_TEMPLATES_PREFIX):
        name = templates.removeprefix(SHIPPED_TEMPLATES_PREFIX)
        known = shipped_template_sets()
        if name not in known:
            check.fail(line, "templates", f"no template set {echo(name)} ships with aotc (shipped: {listing(known) or 'none'})")
        return SHIPPED_TEMPLATES_DIR / name
    if not isinstance(templates, str) or not templates or Path(templates).is_absolute() or ".." in Path(templates).parts:
        check.fail(line, "templates", f"expected a folder inside the manifest's folder or aotc:<set>, got {describe(templates)}")
    templates_dir = path.parent / templates
    if not _is(Path.is_dir, templates_dir):
        check.fail(line, "templates", f"folder {echo(templates)} not found beside the manifest")
    return templates_dir


def shipped_template_sets() -> list[str]:
    """The template sets installed with aotc, usable as ``templates: aotc:<set>``."""
    if not SHIPPED_TEMPLATES_DIR.is_dir():
        return []
    return sorted(p.name for p in SHIPPED_TEMPLATES_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def parse_manifest(text: str, path: Path) -> Manifest:
    """Validate manifest text read from ``path`` and expand it."""
    check = Checker(path)
    try:
        root = load_yaml(text)
    except YamlError as exc:
        check.fail(exc.line, exc.key, exc.message)
    if root is None:
        check.fail(1, "(root)", "the manifest is empty")
    root = check.mapping(root, "(root)", 1, required=("library", "families"), optional=("archs", "templates", "semirings", "dtypes"))

    library = check.identifier(root["library"], "library", line_of(root, "library"), kind="library")

    templates = root.get("templates", "templates")
    templates_line = line_of(root, "templates")
    templates_dir = _templates_dir(check, templates, templates_line, path)

    archs = Archs(*parse_archs(check, root.get("archs"), line_of(root, "archs")))
    families_map = check.mapping(root["families"], "families", line_of(root, "families"), optional=root["families"].keys() if isinstance(root["families"], LineDict) else ())
    if not families_map:
        check.fail(line_of(root, "families"), "families", "must not be empty")
    # Tropical GEMM families need the semirings and dtypes their matrices draw on;
    # declared families bring their own axes.
    gemm = [n for n, spec in families_map.items() if not (isinstance(spec, LineDict) and "signature" in spec)]
    for table in ("semirings", "dtypes"):
        if gemm and table not in root:
            check.fail(1, "(root)", f"missing required key {table!r} (family {gemm[0]} is a GEMM family; a declared family has a signature)")
    semirings = parse_semirings(check, root["semirings"], line_of(root, "semirings")) if "semirings" in root else ()
    dtypes = check.choices(root["dtypes"], "dtypes", line_of(root, "dtypes"), DTYPES, "dtype") if "dtypes" in root else ()

    kernels: list[AnyKernelSpec] = []
    seen: dict[str, str] = {}
    for name, spec in families_map.items():
        family_line = line_of(families_map, name)
        check.identifier(name, f"families.{key_text(name)}", family_line, kind="family")
        if name in gemm:
            expanded = _expand_family(check, name, spec, family_line, semirings, dtypes, templates_dir)
        else:
            expanded = _expand_declared(check, name, spec, family_line, templates_dir)
        if len(kernels) + len(expanded) > MAX_KERNELS:
            check.fail(family_line, f"families.{key_text(name)}", f"brings the library to {len(kernels) + len(expanded)} kernels, over the limit of {MAX_KERNELS}")
        for kernel, kernel_line in expanded:
            if kernel.name in seen:
                check.fail(kernel_line, f"families.{key_text(name)}", f"kernel {kernel.name} is also produced by family {seen[kernel.name]}")
            seen[kernel.name] = name
            kernels.append(kernel)
    _check_backwards(check, kernels)
    return Manifest(path, library, templates_dir, archs, semirings, dtypes, tuple(kernels))


def _check_backwards(check: Checker, kernels: list[AnyKernelSpec]) -> None:
    """Each declared family's backward pairing, against the other families' signatures."""
    declared = [k for k in kernels if isinstance(k, DeclaredKernelSpec)]
    signatures: dict[str, Signature] = {}
    axes: dict[str, dict[str, set[object]]] = {}
    for k in declared:
        signatures.setdefault(k.family, k.signature)  # names and roles are the same at every point
        for axis, value in k.axes:
            axes.setdefault(k.family, {}).setdefault(axis, set()).add(value)
    for k in {k.family: k for k in declared if k.backward is not None}.values():
        check_backward(check, f"families.{key_text(k.family)}", k.family, k.backward, signatures, axes)


def load_manifest(path: str | Path) -> Manifest:
    """Read, validate and expand the manifest at ``path``."""
    path = Path(path)
    # Through the untrusted-file reader, as the index is read: a FIFO, a device or
    # a socket is refused, never opened to block. A link the caller names is
    # followed, once, to a file that must be regular.
    real = os.path.realpath(path)
    too_big = f"{path}:1: (file): larger than {MAX_MANIFEST_BYTES // 1024} KiB; a manifest is a few KiB of YAML"
    try:
        with open_regular(real, sys.maxsize) as (fd, st):
            if st.st_size > MAX_MANIFEST_BYTES:
                raise ManifestError(too_big)
            raw = read_capped(fd, real, MAX_MANIFEST_BYTES)
    except UnreadableFileError as exc:
        reason = str(exc).removeprefix(f"{real}: ")
        msg = too_big if "limit" in reason else f"{path}: cannot read manifest: {reason}"
        raise ManifestError(msg) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{path}:1: (file): not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ManifestError(msg) from None
    return parse_manifest(text, path)
