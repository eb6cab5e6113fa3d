"""What the index step keeps between builds, so that an edit to one kernel costs
the step one kernel's files and one entry's checksums, however many the library holds.

The step indexes every kernel at every run (ninja runs it once for any change),
and at 2,048 kernels reading every fatbin, source and ptxas report again, and
sealing every entry again, was most of a one-kernel edit's wait. The memo
(``<build>/aotc/<library>/index.memo``, beside the fatbins, never staged) holds:

- for each file the step read, its identity (device, inode, size, mtime in ns)
  and what the step made of it: a fatbin's or source's sha256 and size, a ptxas
  report's parsed table. A file whose identity is unchanged is not read again.
  The compile step and codegen replace a changed output with a new file (and a
  rewrite in place moves its mtime), so a changed file never keeps its identity;
- the sha256 of the ``index.json`` the step last wrote, so that its entries,
  sealed, are reused wherever a new entry equals the old one field for field.
  An ``index.json`` changed since (by hand, or by another build) is not trusted:
  every entry is sealed anew.

The memo is tagged with aotc's version and the bytes of the modules that make
what it keeps; another tag, or a memo that does not parse, is an empty memo.
A memo is only ever a shortcut to bytes the step would write anyway: the
index is the same with or without one (tests/build/test_tool.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from aotc._untrusted_files import read_regular
from aotc._version import __version__
from aotc.build._files import write_if_changed
from aotc.build.index_writer import file_digest
from aotc.build.resources import parse_resource_report
from aotc.errors import BuildError, UnreadableFileError

__all__ = ["IndexMemo"]

_MAX_MEMO_BYTES = 256 << 20
# The modules whose code decides what the memo keeps: the entry's file fields,
# the report's parse, the checksums (and this one, for the memo's own format).
_MAKERS = ("aotc.build.index_writer", "aotc.build.resources", "aotc.index.schema", __name__)

_Identity = list[int]  # st_dev, st_ino, st_size, st_mtime_ns


def _identity(path: str) -> _Identity | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _tag() -> str:
    digest = hashlib.sha256(f"aotc {__version__}\0".encode())
    for name in _MAKERS:
        file = getattr(sys.modules.get(name), "__file__", None)
        digest.update(f"{name}\0".encode() + (Path(file).read_bytes() if file else b"?"))
    return digest.hexdigest()


class IndexMemo:
    """The memo at ``path`` (none when ``path`` is empty): read at the step's start,
    written at its end with what this run read (so a kernel removed is forgotten)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.tag = _tag() if path else ""
        self._known: dict[str, list[Any]] = {}
        self._index_sha256 = ""
        self._seen: dict[str, list[Any]] = {}
        if not path:
            return
        try:
            memo = json.loads(read_regular(Path(path), _MAX_MEMO_BYTES))
        except (UnreadableFileError, ValueError, UnicodeDecodeError):
            return
        if isinstance(memo, dict) and memo.get("tag") == self.tag and isinstance(memo.get("files"), dict):
            self._known = memo["files"]
            self._index_sha256 = str(memo.get("index", ""))

    def _recall(self, path: str, detail: str) -> tuple[_Identity | None, Any]:
        """(the file's identity now, what was made of it under ``detail`` if it is unchanged, else None).
        What the memo holds is checked for its shape: a memo is never more than a shortcut."""
        identity = _identity(path)
        known = self._known.get(path)
        if identity is None or not isinstance(known, list) or len(known) != 3 or known[0] != identity or known[1] != detail:
            return identity, None
        made = known[2]
        if detail == "digest":
            shaped = isinstance(made, dict) and set(made) == {"sha256", "size"} and isinstance(made["sha256"], str) and type(made["size"]) is int
        else:
            shaped = isinstance(made, dict) and all(
                isinstance(table, dict) and all(type(count) is int for count in table.values()) for table in made.values()
            )
        if not shaped:
            return identity, None
        self._seen[path] = known
        return identity, made

    def _remember(self, path: str, identity: _Identity | None, detail: str, made: Any) -> Any:
        if identity is not None:
            self._seen[path] = [identity, detail, made]
        return made

    def file_digest(self, path: str, missing: str) -> dict[str, Any]:
        """``{"sha256", "size"}`` of the file at ``path``; ``missing`` is the error if there is none."""
        identity, made = self._recall(path, "digest")
        if made is not None:
            return dict(made)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise BuildError(missing) from None
        return dict(self._remember(path, identity, "digest", file_digest(data)))

    def resources(self, path: str, symbol: str) -> dict[str, dict[str, int]]:
        """ptxas' report at ``path`` for ``symbol``, parsed; ``{}`` where there is none."""
        identity, made = self._recall(path, f"report {symbol}")
        if made is not None:
            return made
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                parsed = parse_resource_report(f.read(), symbol)
        except FileNotFoundError:
            return {}
        return self._remember(path, identity, f"report {symbol}", parsed)

    def sealed_entries(self, index_path: str) -> dict[str, Any]:
        """The kernels of the index this step last wrote at ``index_path``, sealed;
        ``{}`` if that file is not the one written (or there is no memo)."""
        if not self._index_sha256:
            return {}
        try:
            data = read_regular(Path(index_path), _MAX_MEMO_BYTES)
        except UnreadableFileError:
            return {}
        if hashlib.sha256(data).hexdigest() != self._index_sha256:
            return {}
        kernels = json.loads(data).get("kernels")
        return kernels if isinstance(kernels, dict) else {}

    def save(self, index_bytes: bytes) -> None:
        """Write the memo: what this run read, and the digest of the index it wrote."""
        if not self.path:
            return
        memo = {"tag": self.tag, "index": hashlib.sha256(index_bytes).hexdigest(), "files": self._seen}
        write_if_changed(Path(self.path), json.dumps(memo, separators=(",", ":")).encode("utf-8"))
