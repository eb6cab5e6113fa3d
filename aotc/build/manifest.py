"""Read and validate a kernel manifest, and expand it into ``DeclaredKernelSpec`` values.

Validation is strict because a manifest drives a long build: every mistake is
caught here, before anything compiles, and reported as one line naming the
file, the line and the key (``manifest.yaml:12: families.gemm.matrix.dtype:
'f16' is not a value of this axis (declared: f32, f64)``).

This module holds the model and the family expansion; :mod:`aotc.build._yaml`
reads the file, :mod:`aotc.build._checks` turns each problem into that line,
:mod:`aotc.build._manifest_fields` parses the top-level tables and
:mod:`aotc.build._family_fields` a family's sections.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from aotc._untrusted_files import open_regular, read_capped, read_regular
from aotc.archs import arch_sort_key
from aotc.build._backward_fields import BackwardEntry, Gradient, parse_backward, resolve_backwards
from aotc.build._checks import LIMITS, Checker, describe, line_of, listing
from aotc.build._family_fields import expand_points, kernel_name, parse_axes, parse_signature, point_text, resolve_signature
from aotc.build._family_launch import LAUNCH_KEYS, DeclaredLaunch, parse_launch
from aotc.build._family_rules import ConstantRule, RuleIndex, choose, constants_at, parse_alternatives, parse_constants
from aotc.build._manifest_fields import parse_archs, parse_semirings
from aotc.build._yaml import LineDict, key_text, load_yaml
from aotc.build.signature import LaunchGeometry, Param, Signature
from aotc.errors import ManifestError, UnreadableFileError, YamlError, echo
from aotc.semiring import DTYPES, Semiring

__all__ = [
    "MAX_MANIFEST_BYTES",
    "SHIPPED_TEMPLATES_DIR",
    "SHIPPED_TEMPLATES_PREFIX",
    "Archs",
    "DeclaredKernelSpec",
    "Manifest",
    "load_manifest",
    "shipped_template_sets",
]

SHIPPED_TEMPLATES_PREFIX = "aotc:"
# Template sets that ship inside the aotc package (aotc/build/templates/<set>/).
SHIPPED_TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

# aotc's own manifest is 3 KiB. The cap bounds what `aotc list` spends on a
# file it was handed (limits.manifest_bytes, aotc.build._checks.LIMITS); a
# manifest raises it in a limits: block that opens the file, read before the rest.
MAX_MANIFEST_BYTES = LIMITS["manifest_bytes"].default


@dataclass(frozen=True)
class Archs:
    """The SASS architectures to compile and the PTX architectures to embed."""

    sass: tuple[str, ...]
    ptx: tuple[str, ...]


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
    backward: Gradient | None = None  # its gradient kernels or its route, resolved once every family is expanded
    constants: tuple[tuple[str, int | str], ...] = ()  # the point's constants, for its template

    @property
    def symbol(self) -> str:
        return self.name

    # Computed once a kernel (codegen, its render key and the index read each several times).
    @cached_property
    def params(self) -> tuple[Param, ...]:
        return tuple(Param(p.name, p.ctype, p.kind) for p in self.signature.params)

    @cached_property
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


@dataclass(frozen=True)
class Manifest:
    """A validated manifest and its expansion."""

    path: Path
    library: str
    templates_dir: Path
    archs: Archs
    semirings: tuple[Semiring, ...]
    dtypes: tuple[str, ...]
    kernels: tuple[DeclaredKernelSpec, ...]

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
    # Its Jinja syntax, here rather than at the first rendering, so that `aotc
    # list` refuses what the build would (what it renders to is the build's to check).
    import jinja2

    path = templates_dir.resolve() / template_path
    try:
        text = read_regular(path, _MAX_TEMPLATE_BYTES).decode("utf-8")
        jinja2.Environment(autoescape=False).parse(text, template, str(path))
    except UnreadableFileError as exc:
        check.fail(template_line, f"{key}.template", str(exc))
    except UnicodeDecodeError as exc:
        check.fail(template_line, f"{key}.template", f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except jinja2.TemplateSyntaxError as exc:
        check.fail(template_line, f"{key}.template", f"{path}:{exc.lineno}: {exc.message}")
    return template


_MAX_TEMPLATE_BYTES = 4 << 20  # a template is some KiB of CUDA; this only bounds a stray file


# What a family's entry may hold.
_FAMILY_REQUIRED = ("template", "axes", "signature", "launch")
_FAMILY_OPTIONAL = ("name", "matrix", "exclude", "backward", "constants")


def _expand_family(check: Checker, name: str, spec: LineDict, line: int, templates_dir: Path, before: int) -> tuple[list[tuple[DeclaredKernelSpec, int]], tuple[BackwardEntry, ...]]:
    """The kernels of a family: its axes, signature and launch geometry, resolved at each
    point of its matrix. ``before``: the kernels of the families before it."""
    key = f"families.{key_text(name)}"
    if isinstance(spec, LineDict) and not {"axes", "signature"} & spec.keys() and "matrix" in spec:
        check.fail(line, key, "the GEMM form (a matrix of semirings, dtypes, passes and variants with tiles) is retired; declare axes, a signature and a launch (README, \"The manifest\")")
    fields = check.mapping(spec, key, line, required=_FAMILY_REQUIRED, optional=_FAMILY_OPTIONAL)
    template = _template(check, fields, key, templates_dir)
    axes = parse_axes(check, fields["axes"], f"{key}.axes", line_of(fields, "axes"))
    rules: tuple[ConstantRule, ...] = ()
    if "constants" in fields:
        rules = parse_constants(check, fields["constants"], f"{key}.constants", line_of(fields, "constants"), axes.values)
    points = expand_points(check, axes, fields.get("matrix"), fields.get("exclude"), key, fields)
    # Counted before a kernel is made: each costs a signature, a launch and an index entry.
    check.within("kernels", before + len(points), line, key, f"brings the library to {before + len(points)} kernels")
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
    backward = ()
    if "backward" in fields:
        backward = parse_backward(check, fields["backward"], f"{key}.backward", line_of(fields, "backward"), name, axes.values)
    kernels = []
    family_constants = RuleIndex([rule.when for rule in rules], axes.values)
    shared = _SharedResults()
    for point, place in points:
        at = dict(point)
        # A block's own constants come after the family's, and win.
        constants = {**constants_at(rules, at, family_constants), **constants_at(blocks.get(id(place.constants), ()), at)}
        values = {**constants, **at}
        where = point_text(point)
        kernel = kernel_name(check, fields.get("name"), name, point, constants, f"{key}.name", line_of(fields, "name"))
        chosen = choose(check, signatures, at, sig_key, sig_line, where)
        signature, absent = shared.get(values, (declared[id(chosen)],), resolve_signature, check, declared[id(chosen)], point, values, chosen.key)
        launch = choose(check, launches, at, f"{key}.launch", line_of(fields, "launch"), where)
        inputs = (launch.fields, place.launch, signature, absent)
        geometry = shared.get(values, inputs, parse_launch, check, launch.fields, place.launch, launch.key, values, where, signature, absent, place.launch_key)
        spec = DeclaredKernelSpec(kernel, name, template, point, signature, geometry, None, tuple(constants.items()))
        kernels.append((spec, place.line))
    if not kernels:
        check.fail(line, key, "the matrix expands to no kernels after excludes")
    return kernels, backward


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _SharedResults:
    """A point's signature and launch shape, resolved once per distinct input.

    Each depends on the point only through the axes and constants its
    declaration names (a dtype axis, a tile constant in a launch expression, an
    axis in a ``when``), so points that agree on those share one result: a
    10,000-point family of one dtype resolves its signature once, not 10,000
    times. The names are every identifier in the declaration's repr, more than
    it reads, never fewer; the error path, which names the point, is never kept.
    """

    def __init__(self) -> None:
        self._names: dict[int, tuple[object, frozenset[str]]] = {}
        self._results: dict[tuple[object, ...], Any] = {}

    def get(self, values: dict[str, Any], inputs: tuple[object, ...], resolve: Callable[..., Any], *args: Any) -> Any:
        """``resolve(*args)``, or the result it gave for ``inputs`` and the same values of the names they mention."""
        key: list[object] = [id(item) for item in inputs]
        for item in inputs:
            known = self._names.get(id(item))
            if known is None:  # the item itself is kept, so that its id is not reused
                known = self._names[id(item)] = (item, frozenset(_NAME.findall(repr(item))))
            key += [(name, type(values[name]), values[name]) for name in sorted(known[1]) if name in values]
        frozen = tuple(key)
        if frozen not in self._results:
            self._results[frozen] = resolve(*args)
        return self._results[frozen]


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
    root = check.mapping(root, "(root)", 1, required=("library", "families"), optional=("archs", "templates", "semirings", "dtypes", "limits"))
    if "limits" in root:
        check.raise_limits(root["limits"], line_of(root, "limits"))

    library = check.identifier(root["library"], "library", line_of(root, "library"), kind="library")

    templates = root.get("templates", "templates")
    templates_line = line_of(root, "templates")
    templates_dir = _templates_dir(check, templates, templates_line, path)

    archs = Archs(*parse_archs(check, root.get("archs"), line_of(root, "archs")))
    families_map = check.mapping(root["families"], "families", line_of(root, "families"), optional=root["families"].keys() if isinstance(root["families"], LineDict) else ())
    if not families_map:
        check.fail(line_of(root, "families"), "families", "must not be empty")
    # Template data: the tropical templates read the semirings table (and their
    # families' dtype axes); a family's own axes are its own.
    semirings = parse_semirings(check, root["semirings"], line_of(root, "semirings")) if "semirings" in root else ()
    dtypes = check.choices(root["dtypes"], "dtypes", line_of(root, "dtypes"), DTYPES, "dtype") if "dtypes" in root else ()

    kernels: list[DeclaredKernelSpec] = []
    seen: dict[str, tuple[str, Any]] = {}  # a kernel's name -> its family and point
    backwards: dict[str, tuple[BackwardEntry, ...]] = {}
    for name, spec in families_map.items():
        family_line = line_of(families_map, name)
        check.identifier(name, f"families.{key_text(name)}", family_line, kind="family")
        expanded, backwards[name] = _expand_family(check, name, spec, family_line, templates_dir, len(kernels))
        for kernel, kernel_line in expanded:
            if kernel.name in seen:
                family, axes = seen[kernel.name]
                if family != name:
                    check.fail(kernel_line, f"families.{key_text(name)}", f"kernel {kernel.name} is also produced by family {family}")
                apart = [axis for (axis, value), (_, other) in zip(kernel.axes, axes) if value != other]
                if not apart:  # one point listed twice (a matrix, or two matrices)
                    point = ", ".join(f"{a}={v}" for a, v in kernel.axes)
                    check.fail(kernel_line, f"families.{key_text(name)}", f"kernel {kernel.name} is also produced by this family at the same point ({point}); list each point once")
                points = " and at ".join(", ".join(f"{a}={v}" for a, v in point if a in apart) for point in (axes, kernel.axes))
                fix = " ".join(f"{{{a}}}" for a in apart)
                check.fail(kernel_line, f"families.{key_text(name)}.name", f"kernel {kernel.name} is produced at {points}: the name must tell the points apart (add {fix})")
            seen[kernel.name] = (name, kernel.axes)
            kernels.append(kernel)
    kernels = _resolve_backwards(check, kernels, backwards)
    return Manifest(path, library, templates_dir, archs, semirings, dtypes, tuple(kernels))


def _resolve_backwards(check: Checker, kernels: list[DeclaredKernelSpec], backwards: dict[str, tuple[BackwardEntry, ...]]) -> list[DeclaredKernelSpec]:
    """Each kernel with its gradient resolved to kernel names, at its point."""
    resolved = resolve_backwards(check, kernels, backwards)
    return [replace(k, backward=resolved[k.name]) if k.name in resolved else k for k in kernels]


def load_manifest(path: str | Path) -> Manifest:
    """Read, validate and expand the manifest at ``path``."""
    path = Path(path)
    # Through the untrusted-file reader, as the index is read: a FIFO, a device or
    # a socket is refused, never opened to block. A link the caller names is
    # followed, once, to a file that must be regular.
    real = os.path.realpath(path)
    try:
        with open_regular(real, sys.maxsize) as (fd, st):
            cap = MAX_MANIFEST_BYTES
            if st.st_size > cap:
                cap = _raised_byte_limit(path, os.pread(fd, _HEAD_BYTES, 0))
            if st.st_size > cap:
                raise ManifestError(_too_big(path, cap))
            raw = read_capped(fd, real, cap)
    except UnreadableFileError as exc:
        reason = str(exc).removeprefix(f"{real}: ")
        msg = _too_big(path, cap) if "limit" in reason else f"{path}: cannot read manifest: {reason}"
        raise ManifestError(msg) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{path}:1: (file): not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ManifestError(msg) from None
    return parse_manifest(text, path)


# A manifest over the default size raises limits.manifest_bytes in a block
# that opens the file: only this much of it is read to find it.
_HEAD_BYTES = 64 * 1024


def _too_big(path: Path, cap: int) -> str:
    return f"{path}:1: (file): larger than {cap // 1024} KiB, the limit of {LIMITS['manifest_bytes'].counts} (limits.manifest_bytes, raised by a limits: block that opens the file)"


def _raised_byte_limit(path: Path, head: bytes) -> int:
    """limits.manifest_bytes where a ``limits:`` block opens the file (after comments
    and blank lines), else the default: it must be known before the file is read."""
    lines = head.decode("utf-8", "replace").splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")), len(lines))
    if start == len(lines) or not lines[start].startswith("limits:"):
        return MAX_MANIFEST_BYTES
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", "#", "\n", "\r")), len(lines))
    check = Checker(path)
    try:
        block = load_yaml("\n" * start + "".join(lines[start:end]))
    except YamlError as exc:
        check.fail(exc.line, exc.key, exc.message)
    check.raise_limits(block["limits"], start + 1)
    return check.limits["manifest_bytes"]
