"""Whether a kernel's generated source is current, so that codegen renders only what changed.

A kernel's source and line map are a function of its template namespace (its
axes, constants, signature, launch shape, and the manifest's tables), its
template's name, its parameter list and headers, the template files, and the
generator's own code. ``RenderKeys`` digests those into one key per kernel and
records it beside the sources (``.aotc-rendered``) with the size and mtime of
the files it wrote. A kernel is rendered again only where its key differs, or
its source or line map is no longer the file that was written (removed, or
edited by hand). So a one-value manifest edit renders one kernel, however
many the manifest holds, and the build compiles one.

The namespace is digested as the template sees it, every name and value, so
a name the namespace gains later is keyed without a change here; a value
whose ``repr`` is not its content (an object shown by address) only makes its
kernels render every time. The record lives in a folder anyone may write
(``aotc generate DIR``): it is read through the untrusted-file reader, and a
forged line can only make codegen keep a file that is already there.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from aotc._untrusted_files import read_regular
from aotc._version import __version__
from aotc.build._files import write_if_changed
from aotc.build.line_map import map_path
from aotc.errors import UnreadableFileError

__all__ = ["RECORD", "RenderKeys"]

RECORD = ".aotc-rendered"
_MAX_RECORD_BYTES = 256 << 20
# Values whose repr is longer than this are remembered, by identity, while kept
# alive here: the tables every kernel's namespace shares (dtypes) are shown once.
_SHARED_REPR_CHARS = 512

_Entry = tuple[str, int, int, int, int]  # key, source size and mtime_ns, line map size and mtime_ns


def _stat(path: str | Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _generator_digest(templates_dir: Path) -> str:
    """What every kernel's rendering depends on: the template files, where they
    are (the line maps name it), and the code that renders them."""
    import jinja2

    digest = hashlib.sha256(f"{__version__}\0jinja2 {jinja2.__version__}\0{templates_dir.resolve()}\0".encode())
    for path in sorted(p for p in templates_dir.rglob("*") if p.is_file()):
        digest.update(f"template {path.relative_to(templates_dir).as_posix()}\0".encode() + path.read_bytes())
    for name in sorted(name for name in sys.modules if name == "aotc" or name.startswith("aotc.")):
        file = getattr(sys.modules[name], "__file__", None)
        if file and os.path.isfile(file):
            digest.update(f"module {name}\0".encode() + Path(file).read_bytes())
    return digest.hexdigest()


def _read(path: Path) -> dict[str, _Entry]:
    try:
        text = read_regular(path, _MAX_RECORD_BYTES).decode("utf-8", "replace")
    except UnreadableFileError:
        return {}
    known: dict[str, _Entry] = {}
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) == 6 and all(part.isdigit() for part in parts[1:5]):
            known[parts[5]] = (parts[0], int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4]))
    return known


class RenderKeys:
    """The render keys of one output folder: what was recorded, and this run's."""

    def __init__(self, out_dir: Path, templates_dir: Path) -> None:
        self.path = out_dir / RECORD
        self.base = _generator_digest(templates_dir)
        self.known = _read(self.path)
        self.now: dict[str, _Entry] = {}
        self._shared: dict[int, tuple[object, str]] = {}

    def key(self, context: dict[str, object], template: str, headers: tuple[str, ...], params: tuple[object, ...]) -> str:
        """The digest of everything one kernel's source and line map are rendered from."""
        digest = hashlib.sha256(f"{self.base}\0{template}\0{headers!r}\0{params!r}".encode())
        for name, value in context.items():
            remembered = self._shared.get(id(value))
            if remembered is None:
                text = repr(value)
                if len(text) > _SHARED_REPR_CHARS:
                    self._shared[id(value)] = (value, text)  # kept alive: its id is not reused
            else:
                text = remembered[1]
            digest.update(f"\0{name}\0{text}".encode())
        return digest.hexdigest()

    def current(self, source: Path, key: str) -> bool:
        """Whether ``source`` and its line map are the files rendered with ``key``; if so, kept."""
        entry = self.known.get(source.name)
        if entry is None or entry[0] != key:
            return False
        if (_stat(source), _stat(map_path(source))) != ((entry[1], entry[2]), (entry[3], entry[4])):
            return False
        self.now[source.name] = entry
        return True

    def rendered(self, source: Path, key: str) -> None:
        """``source`` and its line map were just written (or found equal) for ``key``."""
        stats = (_stat(source), _stat(map_path(source)))
        if stats[0] is not None and stats[1] is not None:
            self.now[source.name] = (key, *stats[0], *stats[1])

    def save(self, *, everything: bool) -> None:
        """Write the record: this run's keys; and, unless ``everything`` was rendered, the others kept."""
        entries = self.now if everything else {**self.known, **self.now}
        lines = "".join(f"{key} {a} {b} {c} {d} {name}\n" for name, (key, a, b, c, d) in sorted(entries.items()))
        write_if_changed(self.path, lines.encode())
