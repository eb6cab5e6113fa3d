"""The ``aotc.libraries`` entry points of the installed distributions, kept between processes.

Reading them means reading every installed distribution's metadata
(``importlib.metadata``): some 150 ms with 300 distributions installed, at
every ``aotc.load(name)`` of a package's library. What that read found is
kept in the cache folder (``AOTC_CACHE_DIR``, else the user's cache folder
plus ``aotc``), under ``library-names/``, one small file per import path
(``sys.path``, the interpreter and aotc's version), with a stamp of every
folder on that path and of every declaring distribution's
``entry_points.txt`` (its mtime in ns, and size). A later process that finds
the same stamps uses what was kept, and reads nothing else:

- installing or uninstalling a distribution adds or removes its
  ``.dist-info`` (or ``.egg-info``) folder in a folder of the path, or a
  ``.pth`` file there (an editable install), which changes that folder's
  mtime; a path of other folders is another file;
- a declaration edited in place changes its ``entry_points.txt``'s stamp.

A folder's mtime ticks coarsely (a few ms on Linux), so a change in the same
tick as the last could leave its stamp alone: nothing is kept while a
stamped folder or file is less than two seconds old. What is not caught: an
``entry_points.txt`` of a distribution that declared nothing, edited in
place to declare a library; ``aotc cache clear`` forgets what was kept.

A kept file is trusted as far as its folder: it must be this user's and
writable by no one else (the disk cache's rule, ``foreign_directory``), and
it is read as any untrusted file (regular, capped, no symlink); anything
wrong with it is a miss, and the metadata is read again.
"""

from __future__ import annotations

import json
import os
import sys
import time

from aotc._folders import SETTLED_NS, cache_folder, clear_kept_files
from aotc._untrusted_files import foreign_directory, read_regular
from aotc._version import __version__
from aotc.errors import UnreadableFileError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GROUP", "KEPT_FOLDER", "declarations", "forget"]

GROUP = "aotc.libraries"
KEPT_FOLDER = "library-names"
_FORMAT = 1  # bump when what a kept file holds changes
_MAX_KEPT_BYTES = 1 << 20


def declarations() -> tuple[list[list[str]], list[str]]:
    """Every ``aotc.libraries`` entry point of the installed distributions, the first
    of a distribution's name on the path as ``importlib.metadata`` counts them:
    ``[name, value, "distribution version", its metadata folder (its .dist-info)]``;
    and the distributions whose entry points cannot be read, each named with why."""
    paths = [os.path.abspath(entry or os.curdir) for entry in sys.path if isinstance(entry, str)]
    kept = _kept_file(paths)
    found = _recall(kept, paths) if kept else None
    if found is None:
        started = time.time_ns()
        stamps = [_stamp(path) for path in paths]
        found = _read_metadata()
        if kept:
            _keep(kept, paths, stamps, found, started)
    return found


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _kept_file(paths: list[str]) -> str:
    import hashlib  # the index's seals import it anyway, before any load by name

    folder = cache_folder()
    if not folder:
        return ""
    key = json.dumps([_FORMAT, __version__, sys.version, sys.executable, paths]).encode("utf-8", "surrogatepass")
    return os.path.join(folder, KEPT_FOLDER, hashlib.sha256(key).hexdigest()[:32] + ".json")


def _recall(kept: str, paths: list[str]) -> tuple[list[list[str]], list[str]] | None:
    """What was kept for ``paths``, if every stamp still holds; else None."""
    if foreign_directory(os.path.dirname(kept)):
        return None
    try:
        record = json.loads(read_regular(kept, _MAX_KEPT_BYTES))
        if record["paths"] != paths or len(record["stamps"]) != len(paths):
            return None
        for path, stamp in [*zip(paths, record["stamps"]), *record["files"]]:
            if _stamp(path) != stamp:
                return None
        found, broken = record["found"], record["broken"]
        if all(isinstance(item, list) and len(item) == 4 and all(isinstance(part, str) for part in item) for item in found) and all(isinstance(b, str) for b in broken):
            return found, broken
    except (UnreadableFileError, ValueError, KeyError, TypeError):
        pass  # a kept file of another shape, or none: read the metadata again
    return None


def _keep(kept: str, paths: list[str], stamps: list[Any], found: tuple[list[list[str]], list[str]], started: int) -> None:
    """Write what was found, unless a stamp is too young to be trusted (see the module docstring)."""
    declaring = sorted({info for _, _, _, info in found[0] if info})
    files = [[path, _stamp(path)] for path in (os.path.join(info, "entry_points.txt") for info in declaring)]
    if any(stamp is not None and started - stamp[0] < SETTLED_NS for stamp in [*stamps, *(s for _, s in files)]):
        return
    folder = os.path.dirname(kept)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if foreign_directory(folder):
            return
        record = {"paths": paths, "stamps": stamps, "files": files, "found": found[0], "broken": found[1]}
        temp = f"{kept}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as file:
            json.dump(record, file)
        os.replace(temp, kept)
    except OSError:
        pass  # an unwritable cache: the next process reads the metadata again


def _read_metadata() -> tuple[list[list[str]], list[str]]:
    from importlib import metadata

    found: list[list[str]] = []
    broken: list[str] = []
    seen: set[str] = set()
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"] or ""
            key = name.lower().replace("-", "_").replace(".", "_")
            if key in seen:
                continue
            seen.add(key)
            info = getattr(dist, "_path", None)  # the .dist-info folder (a PathDistribution's)
            for ep in dist.entry_points.select(group=GROUP):
                found.append([ep.name, ep.value, f"{name} {dist.version}", os.fspath(info) if info is not None else ""])
        except Exception as exc:  # noqa: BLE001 - a package's malformed metadata, whatever its parser raises
            where = getattr(dist, "_path", None)
            broken.append(f"{where or 'a package'} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
    return found, broken


def forget() -> int:
    """Remove every kept file (``aotc cache clear``); returns how many."""
    return clear_kept_files(KEPT_FOLDER, ".json")
