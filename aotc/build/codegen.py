"""Render one self-contained ``.cu`` file per kernel (``DeclaredKernelSpec``) with Jinja2.

Generated files include no headers of their own (shared device code is pulled
in with Jinja ``{% include %}``), so the very same bytes compile under nvcc,
under NVRTC at run time, and as host C++ in the CPU emulator. The one
exception is a parameter list that names a CUDA type: ``__half`` and
``__nv_bfloat16`` come from cuda_fp16.h and cuda_bf16.h (nvcc finds them in
its toolkit, the emulator provides its own, and NVRTC, which has them not built
in, is given the folder that holds them: ``aotc._cuda_headers``); such a source
opens with their ``#include`` (and is compiled outside the build cache, which
does not key what an include reads: ``aotc.build.fatbin_cache``).

A file is rewritten only when its bytes change. With the build's codegen step
declared as producing these files, an unrelated manifest edit leaves their
timestamps alone and recompiles nothing. Nor is a kernel rendered again
while nothing it is rendered from has changed (``aotc.build._render_keys``):
a one-value edit of a 10,000-kernel manifest renders one kernel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import jinja2

from aotc._untrusted_files import read_regular
from aotc.build._files import write_if_changed
from aotc.build._render_keys import RenderKeys
from aotc.build.line_map import line_map, map_path, mark, write_map
from aotc.build.manifest import DeclaredKernelSpec, Manifest
from aotc.build.signature import ELEMENT_TYPES, parameter_check
from aotc.errors import BuildError, UnreadableFileError

__all__ = ["GenerateResult", "generate", "render_kernel", "source_name"]

SOURCE_SUFFIX = ".cu"


@dataclass(frozen=True)
class GenerateResult:
    """What :func:`generate` did to each file."""

    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]
    removed: tuple[Path, ...]


def _raise(message: str) -> None:
    """Let a template refuse a combination it cannot implement."""
    raise jinja2.TemplateRuntimeError(message)


class _MarkingLoader(jinja2.FileSystemLoader):
    """The templates, each with a marker naming the line before every newline of
    its text (``aotc.build.line_map``): rendered, they say where each line came from."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str | None, object]:
        source, filename, uptodate = super().get_source(environment, template)
        return mark(source, template) or source, filename, uptodate


class _ByName(dict):
    """A table whose entries ``name.key`` reads for every key: a template's
    ``ctype.values`` is the C type of a parameter named ``values``, where a
    dict's own attributes (``values``, ``items``, ``keys``, ``get``) would win."""


class _Environment(jinja2.Environment):
    def getattr(self, obj: object, attribute: str) -> object:
        if isinstance(obj, _ByName) and attribute in obj:
            return obj[attribute]
        if isinstance(obj, _ByName) and not hasattr(dict, attribute):
            # A misspelt parameter: Jinja would name the table's Python class.
            hint = f"ctype.{attribute}: the signature has no parameter {attribute!r} (its parameters: {', '.join(obj)})"
            return self.undefined(obj=obj, name=attribute, hint=hint)
        return super().getattr(obj, attribute)


def _environment(templates_dir: Path, *, marking: bool = False) -> jinja2.Environment:
    loader = (_MarkingLoader if marking else jinja2.FileSystemLoader)(str(templates_dir.resolve()))
    env = _Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.globals["raise"] = _raise
    env.filters["ctype"] = _ctype_of
    return env


def _ctype_of(dtype: str) -> str:
    """``{{ dtype | ctype }}``: the C type of a dtype name."""
    if dtype not in ELEMENT_TYPES:
        _raise(f"ctype: {dtype!r} is not a dtype (dtypes: {', '.join(ELEMENT_TYPES)})")
    return ELEMENT_TYPES[dtype].ctype


def _context(manifest: Manifest, kernel: DeclaredKernelSpec) -> dict[str, object]:
    """What a family's template sees: its constants and axis values by
    name, the parameter list rendered from the signature, each parameter's C
    type, the split offset of each grid axis ("" where none: a template shared
    by families that do and do not split adds it to ``blockIdx`` where named),
    and the manifest's tables (``semirings``, ``dtypes``: name to model)."""
    return {
        **dict(kernel.constants),
        **dict(kernel.axes),
        "semirings": {s.name: s for s in manifest.semirings},
        "dtypes": ELEMENT_TYPES,
        "library": manifest.library,
        "family": kernel.family,
        "kernel_name": kernel.symbol,
        "params": ", ".join(p.declaration() for p in kernel.params),
        "ctype": _ByName({p.name: p.dtype.ctype if hasattr(p, "dtype") else p.ctype for p in kernel.signature.params}),
        "split": {axis: next((p.name for p in kernel.signature.params if getattr(p, "split", "") == axis), "") for axis in "xyz"},
        "block": kernel.launch.block,
        "shared_bytes_dynamic": kernel.launch.shared_bytes_dynamic,
        "shared_bytes_static": kernel.launch.shared_bytes_static,
    }


def render_kernel(
    manifest: Manifest, kernel: DeclaredKernelSpec, env: jinja2.Environment | None = None, context: dict[str, object] | None = None
) -> str:
    """The ``.cu`` source of one kernel, after the headers its parameter list's
    C types need and followed by the check that its compiled parameter list is
    the declared one (``aotc.build.signature.parameter_check``). ``context``: the
    kernel's template namespace, where the caller has it already."""
    env = env or _environment(manifest.templates_dir)
    context = context if context is not None else _context(manifest, kernel)
    try:
        source = env.get_template(kernel.template).render(context)
    except jinja2.TemplateError as exc:
        where, line = _template_position(exc, manifest.templates_dir)
        msg = f"{where or kernel.template}{f':{line}' if line else ''}: rendering {kernel.name}: {exc.message or exc}"
        raise BuildError(msg) from None
    headers = "".join(f"#include <{header}>\n" for header in kernel.signature.headers)
    return headers + source + parameter_check(kernel.family, kernel.symbol, tuple((p.name, p.ctype) for p in kernel.params))


def source_lines(
    manifest: Manifest, kernel: DeclaredKernelSpec, source: str, marking: jinja2.Environment, context: dict[str, object] | None = None
) -> bytes:
    """The line map of ``source``, ``kernel``'s rendering (``aotc.build.line_map``):
    empty origins throughout where the marked rendering does not agree."""
    marked = render_kernel(manifest, kernel, marking, context)
    origins = line_map(marked, source) or [""] * (source.count("\n") + 1)
    return write_map(origins, str(manifest.templates_dir.resolve()))


def _template_position(exc: jinja2.TemplateError, templates_dir: Path) -> tuple[str | None, int | None]:
    """The template file and line an error came from.

    Syntax errors carry them; runtime errors (an undefined variable) don't, but
    Jinja rewrites the traceback so the innermost template frame points there.
    """
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return exc.filename, exc.lineno
    root = str(templates_dir.resolve())
    found: tuple[str | None, int | None] = (None, None)
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(root):
            found = (filename, tb.tb_lineno)  # the whole path, as a syntax error's
        tb = tb.tb_next
    return found


def source_name(kernel: DeclaredKernelSpec) -> str:
    return f"{kernel.name}{SOURCE_SUFFIX}"


# The files generate() wrote into a folder, one name a line: it removes only
# what it wrote, never a file someone else put there.
OWNED_LIST = ".aotc-generated"


def generate(manifest: Manifest, out_dir: str | Path, kernels: Iterable[DeclaredKernelSpec] | None = None) -> GenerateResult:
    """Render every kernel (or the given ones) into ``out_dir``, each source with its line map.

    Sources of kernels no longer in the manifest are removed, so a stale file
    can never be compiled or shipped by mistake; but only sources this
    function wrote there before (``OWNED_LIST``): any other file stays.
    """
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        msg = f"{out_dir}: exists and is not a folder; name a folder for the generated sources"
        raise BuildError(msg) from None
    except OSError as exc:
        msg = f"{out_dir}: cannot make the output folder: {exc.strerror or exc}"
        raise BuildError(msg) from None
    env = _environment(manifest.templates_dir)
    marking = _environment(manifest.templates_dir, marking=True)
    selected = tuple(manifest.kernels if kernels is None else kernels)
    owned = _owned(out_dir)
    keys = RenderKeys(out_dir, manifest.templates_dir)
    written, unchanged = [], []
    for kernel in selected:
        path = out_dir / source_name(kernel)
        context = _context(manifest, kernel)
        key = keys.key(context, kernel.template, kernel.signature.headers, kernel.params)
        if keys.current(path, key):
            unchanged.append(path)
            continue
        source = render_kernel(manifest, kernel, env, context)
        try:
            changed = write_if_changed(path, source.encode("utf-8"))
            # Beside it, where each line came from: a failed compile names the template's line.
            write_if_changed(Path(map_path(path)), source_lines(manifest, kernel, source, marking, context))
        except OSError as exc:
            msg = f"{path}: cannot write the generated source: {exc.strerror or exc}"
            raise BuildError(msg) from None
        keys.rendered(path, key)
        (written if changed else unchanged).append(path)
    names = {n for k in selected for n in (source_name(k), Path(map_path(source_name(k))).name)}
    removed = []
    if kernels is None:
        for stale in sorted(owned - names):
            path = out_dir / stale
            if path.is_file() and not path.is_symlink():
                path.unlink()
                if path.suffix == SOURCE_SUFFIX:
                    removed.append(path)
        owned = set()
    write_if_changed(out_dir / OWNED_LIST, "".join(f"{n}\n" for n in sorted(owned | names)).encode())
    keys.save(everything=kernels is None)
    return GenerateResult(tuple(written), tuple(unchanged), tuple(removed))


def _owned(out_dir: Path) -> set[str]:
    """The names ``OWNED_LIST`` holds: plain file names of sources and line maps,
    nothing else (the list is a file in a folder anyone may have written)."""
    try:
        text = read_regular(out_dir / OWNED_LIST, 16 * 1024 * 1024).decode("utf-8", "replace")
    except UnreadableFileError:
        return set()
    return {
        name for name in text.splitlines()
        if name == Path(name).name and not name.startswith(".") and name.endswith((SOURCE_SUFFIX, ".lines"))
    }  # fmt: skip
