"""The index's kernels a line each: one kernel's entry found and parsed without the others.

The build writes ``index.json`` with a directory of the kernels on one line
and the kernels table last, one kernel a line, each entry opening with the
family it is found by::

    {
     "schema": 3,
     ...the rest of the top level, indented...,
     "kernel_lines": {"gemm_maxplus_f32_forward":[0,"gemm"],...},
     "kernels": {
    "gemm_maxplus_f32_forward": {"family": "gemm", "symbol": ..., "axes": {...}, ...},
    ...
     }
    }

The directory gives each kernel's family and where its line starts, counted
in bytes from the kernels table's opening brace.
JSON strings hold no raw newline, so every newline is whitespace between
values, and each line of the table is one kernel's entry.

``split`` finds that layout in an index's bytes, or returns None (the reader
then parses and validates the whole document, as for any index written
otherwise). It parses the top level but for the two tables, and reads the
directory with one regular-expression scan, in C; it never touches the
kernels' lines, so loading costs the same whatever the library's size. The
directory is a locator, never trusted: ``KernelLines.entry`` checks that the
line it points at opens with the kernel's name and the same family, and
parses that line alone; the reader then validates the entry and verifies
its checksums, before any field of it is used. ``aotc inspect`` reads the
whole document, and ``check`` holds the directory to it. The build writes
the layout (``aotc.build.index_writer.dumps``); both take its markers from
``aotc.index.schema``.
"""

from __future__ import annotations

import os
import re

from aotc._untrusted_files import open_regular
from aotc.errors import IndexFormatError
from aotc.index._json import parse_json_text
from aotc.index.schema import (
    DIRECTORY_KEY,
    LAYOUT_CLOSE,
    LAYOUT_DIRECTORY,
    LAYOUT_TABLE,
    MAX_DEPTH,
    MAX_INDEX_BYTES,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["KernelLines", "check", "open_lines", "split"]

_DIRECTORY = LAYOUT_DIRECTORY.encode()
_TABLE = LAYOUT_TABLE.encode()
_CLOSE = LAYOUT_CLOSE.encode()
_NAME = rb"([A-Za-z_][A-Za-z0-9_]{0,63})"  # the validator's rule for names: no escapes, so raw text is the value
# A directory entry: a kernel's name, the offset of its line and its family.
_ENTRY = re.compile(rb'"' + _NAME + rb'":\[(\d{1,10}),"' + _NAME + rb'"\]')
# A line's opening: the newline before it, its name, then its family.
_LINE = re.compile(rb'\n"' + _NAME + rb'": \{"family": "' + _NAME + rb'", ')
# A directory entry's name: what loading reads of each kernel.
_NAMES = re.compile(rb'"' + _NAME + rb'":\[')  # a literal first: the scan runs in C's fast search


class KernelLines:
    """The kernels of an index in the line layout: names and families from its
    directory (unverified), and each kernel's line, found and parsed on request.
    ``fetch(position, end)`` returns the bytes from ``position`` (a newline) to the
    next newline, or to ``end`` (``whole``: to ``end``): a slice of the bytes in
    hand, or a read of the file.

    Only the names are taken from the directory at once (one scan, one bytes
    object a kernel); a kernel's entry there is found by its name, a
    ``bytes.find`` in C."""

    __slots__ = ("_dir_end", "_dir_start", "_end", "_entries", "_fetch", "_head", "_start", "complete", "names", "where")

    def __init__(self, where: str, fetch: Any, table: tuple[int, int], head: bytes, directory: tuple[int, int]) -> None:
        self.where = where
        self._fetch = fetch
        self._start, self._end = table  # the kernels table: its lines lie between
        self._head = head  # the bytes through the table's opening: the directory among them
        self._dir_start, self._dir_end = directory
        found = _NAMES.findall(head, *directory)
        self.names = dict.fromkeys(map(bytes.decode, found))  # in directory order
        self._entries: dict[str, tuple[bytes, ...]] = {}  # name -> (name, offset, family)
        self.complete = len(self.names) == len(found) > 0  # no name twice

    def _entry_of(self, name: str) -> tuple[bytes, ...]:
        entry = self._entries.get(name)
        if entry is None:
            at = self._head.find(b'"' + name.encode() + b'":[', self._dir_start, self._dir_end)
            match = _ENTRY.match(self._head, at, self._dir_end) if at > self._dir_start else None
            if match is None or self._head[at - 1 : at] not in (b"{", b","):
                msg = f"{self.where}: {DIRECTORY_KEY}.{name}: not an entry like [offset, family]"
                raise IndexFormatError(msg)
            entry = self._entries[name] = match.groups()
        return entry

    def family(self, name: str) -> str:
        """The family the directory gives ``name``: where to look, not yet verified."""
        return self._entry_of(name)[2].decode()

    def families(self) -> dict[str, str]:
        """Every kernel: name -> family, as the directory says (unverified), in one scan."""
        return {name.decode(): family.decode() for name, _, family in _ENTRY.findall(self._head, self._dir_start, self._dir_end)}

    def _body(self, name: str, table: bytes | None = None) -> bytes:
        """The JSON text of kernel ``name``'s entry: the line its directory entry
        points at (in ``table``, the kernels table's bytes, where given), which
        must open with its name and the same family."""
        found = self._entry_of(name)
        where = f"{self.where}: kernels.{name}"
        position = self._start + int(found[1])
        if table is None:
            line = self._fetch(position, self._end) if position < self._end else b""
        else:
            at = position - self._start
            stop = table.find(b"\n", at + 1)
            line = table[at : stop if stop >= 0 else len(table)] if at < len(table) else b""
        opening = _LINE.match(line)
        if opening is None or opening.groups() != (found[0], found[2]):
            msg = f"{where}: the directory ({DIRECTORY_KEY}) points at no line of this kernel; rebuild or reinstall the library"
            raise IndexFormatError(msg)
        last = position + len(line) >= self._end
        if not last and not line.endswith(b","):
            msg = f"{where}: its line does not end with ',' (not JSON)"
            raise IndexFormatError(msg)
        return line[len(found[0]) + 5 : None if last else -1]  # after '\n"name": '

    def entry(self, name: str) -> Any:
        """The parsed entry of kernel ``name`` (strict JSON: no duplicate key, no NaN),
        from the line its directory entry points at, which must open with its name
        and the same family."""
        where = f"{self.where}: kernels.{name}"
        body = self._body(name)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"{where}: not UTF-8 at byte {exc.start} of its line"
            raise IndexFormatError(msg) from None
        entry = parse_json_text(text, where, MAX_DEPTH - 2)
        if not isinstance(entry, dict):
            msg = f"{where}: is not an object"
            raise IndexFormatError(msg)
        return entry


def split(data: bytes, where: str) -> tuple[Any, KernelLines] | None:
    """The top level (parsed; its kernels table empty) and the kernels of ``data``,
    or None where ``data`` is not in the line layout."""
    if not data.endswith(_CLOSE):
        return None

    def fetch(position: int, end: int, whole: bool = False) -> bytes:
        stop = -1 if whole else data.find(b"\n", position + 1, end)
        return data[position : end if stop < 0 else stop]

    return _split(data, where, len(data), fetch)


def open_lines(path: str, where: str) -> tuple[Any, KernelLines] | None:
    """``split`` for the file ``path``, reading only its top level and directory
    (some 90 bytes a kernel) now, and each kernel's line when it is asked for;
    None where the file is not in the line layout (then read it whole)."""
    with open_regular(path, MAX_INDEX_BYTES) as (fd, st):
        head = _read_head(fd, st.st_size)
        tail = os.pread(fd, len(_CLOSE), max(0, st.st_size - len(_CLOSE)))
    if head is None or tail != _CLOSE:
        return None
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def fetch(position: int, end: int, whole: bool = False) -> bytes:
        with open_regular(path, MAX_INDEX_BYTES) as (line_fd, now):
            if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != identity:
                msg = f"{where}: changed since it was loaded; load the library again"
                raise IndexFormatError(msg)
            return _read_span(line_fd, position, end) if whole else _read_line(line_fd, position, end)

    return _split(head, where, st.st_size, fetch)


def _read_head(fd: int, size: int) -> bytes | None:
    """The file's bytes up to and including the kernels table's opening, or None."""
    head, want = b"", 1 << 17  # a directory of 1,000 kernels is ~90 KB
    while True:
        chunk = os.pread(fd, min(want, size) - len(head), len(head))
        head += chunk
        table = head.find(_TABLE)
        if table >= 0:
            return head[: table + len(_TABLE)]
        if not chunk or len(head) >= size:  # the end (or a file that shrank while read)
            return None
        want *= 4


def _read_span(fd: int, position: int, end: int) -> bytes:
    """The bytes from ``position`` to ``end`` (fewer where the file ends first)."""
    span = b""
    while position + len(span) < end:
        chunk = os.pread(fd, end - position - len(span), position + len(span))
        if not chunk:
            break
        span += chunk
    return span


def _read_line(fd: int, position: int, end: int) -> bytes:
    """From ``position`` (a newline) to the next newline, or to ``end``."""
    line, want = b"", 1 << 13
    while True:
        chunk = os.pread(fd, min(want, end - position) - len(line), position + len(line))
        line += chunk
        stop = line.find(b"\n", 1)
        if stop >= 0:
            return line[:stop]
        if not chunk or position + len(line) >= end:
            return line
        want *= 4


def _split(data: bytes, where: str, size: int, fetch: Any) -> tuple[Any, KernelLines] | None:
    """``split``, given the bytes through the kernels table's opening (or all of them)."""
    table = data.find(_TABLE)
    if table < 0:
        return None
    directory = data.rfind(_DIRECTORY, 0, table)
    if directory < 0:
        return None
    try:
        top = parse_json_text((data[:directory] + b"\n}").decode("utf-8"), where, MAX_DEPTH)
    except (IndexFormatError, UnicodeDecodeError):
        return None  # the whole-document reader names the problem
    if not isinstance(top, dict) or "kernels" in top or DIRECTORY_KEY in top:
        return None
    lines = KernelLines(where, fetch, (table + len(_TABLE), size - len(_CLOSE)), data, (directory + len(_DIRECTORY), table))
    if not lines.complete:
        return None  # no kernel, or a name twice: the whole-document reader names it
    top["kernels"] = {}
    return top, lines


def check(data: bytes, document: dict[str, Any], where: str) -> None:
    """Hold the directory of a whole, validated ``document`` (the bytes ``data``)
    to its kernels: the same names in the same order, each with its family and
    the start of its own line. IndexFormatError names the first that is not."""
    directory = document.get(DIRECTORY_KEY)
    if directory is None:
        return
    kernels = document["kernels"]
    if not isinstance(directory, dict) or list(directory) != list(kernels):
        msg = f"{where}: {DIRECTORY_KEY}: does not list the kernels of the kernels table, in its order"
        raise IndexFormatError(msg)
    split_at = split(data, where)
    if split_at is None:
        msg = f"{where}: {DIRECTORY_KEY}: the index is not laid out one kernel a line"
        raise IndexFormatError(msg)
    lines = split_at[1]
    for name, entry in kernels.items():
        given = directory[name]
        if name not in lines.names or lines.family(name) != entry["family"] or not isinstance(given, list) or given[1:] != [entry["family"]]:
            msg = f"{where}: {DIRECTORY_KEY}.{name}: does not give the kernel's family"
            raise IndexFormatError(msg)
        if lines.entry(name) != entry:
            msg = f"{where}: {DIRECTORY_KEY}.{name}: does not point at the kernel's line"
            raise IndexFormatError(msg)
