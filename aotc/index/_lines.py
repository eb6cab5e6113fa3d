"""The build's layout of ``index.json``, read part by part (``aotc.index._layout`` writes it and shows it).

``split`` (bytes in hand) and ``open_lines`` (a file) read the top level and
the ``kernel_index`` line that follows it, and nothing else: loading costs
the same for 64 kernels or 100,000. The rest is read when it is used, each
part within its own cap and from the same file (an ``index.json`` replaced
since the load is refused: "changed since it was loaded"):

- the families' catalogs, at the bindings' first use (``catalog``);
- the directory, at the first lookup of a kernel by name or by its family's
  axis values (``row``, ``find``, ``members``): one line, searched with
  ``bytes.find`` (and regular expressions where a search leaves an axis
  open, or reads every row), in C, never parsed whole;
- a kernel's line, at its first use (``entry``).

Nothing here is trusted: each part is read with the marker the layout puts
before it, which must be there; a kernel's line must open with the name and
family its directory row gives; and what a catalog and a row claim about a
kernel (its form, its axis values) is held to its sealed entry before any
field of it is used (``aotc.index.families``, ``LibraryIndex``). An index in
any other layout makes ``split`` and ``open_lines`` return None: the reader
then parses and validates the whole document.

A kernel's first use reads its row (``aotc.index._rows``) and its line
without ``re``: importing it, with ``enum``, would cost a start-up more than the
rest of it. The searches that need a pattern compile it on first use.
"""

from __future__ import annotations

import os

from aotc._untrusted_files import open_regular
from aotc.errors import IndexFormatError
from aotc.index._json import parse_json_text
from aotc.index._rows import row as parse_row
from aotc.index._rows import row_around
from aotc.index.schema import (
    DIRECTORY_KEY,
    FAMILIES_KEY,
    LAYOUT_CLOSE,
    LAYOUT_DIRECTORY,
    LAYOUT_FAMILIES,
    LAYOUT_INDEX,
    LAYOUT_KEY,
    LAYOUT_TABLE,
    MAX_CATALOG_BYTES,
    MAX_DEPTH,
    MAX_DIRECTORY_BYTES,
    MAX_KERNEL_LINE_BYTES,
    MAX_TOP_BYTES,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

__all__ = ["KernelLines", "open_lines", "split"]

_INDEX = LAYOUT_INDEX.encode()
_FAMILIES = LAYOUT_FAMILIES.encode()
_DIRECTORY = LAYOUT_DIRECTORY.encode()
_TABLE = LAYOUT_TABLE.encode()
_CLOSE = LAYOUT_CLOSE.encode()
_NAME = rb"([A-Za-z_][A-Za-z0-9_]{0,63})"  # the validator's rule for names: no escapes, so raw text is the value
_PATTERNS = {
    # A row's name: what iterating the kernels reads of each (a literal first: the scan runs in C's fast search).
    "names": rb'"' + _NAME + rb'":\[',
    # A family's line opening, in the families' part.
    "family": rb'\n"' + _NAME + rb'": \{',
}
_compiled: dict[str, Any] = {}
# One axis value of a row: an integer, a name, or null (a kernel without that axis).
_VALUE = rb'(?:\d{1,10}|"[A-Za-z_][A-Za-z0-9_]{0,63}"|null)'
_PARTS = ("families", "directory", "table")


def _pattern(name: str) -> Any:
    """One of ``_PATTERNS``, compiled at its first use (no search of a start-up needs one)."""
    found = _compiled.get(name)
    if found is None:
        import re

        found = _compiled[name] = re.compile(_PATTERNS[name])
    return found


class KernelLines:
    """One index in the build's layout: where its parts are, and each read when asked.
    ``fetch(start, end, cap)`` returns the bytes from ``start`` to ``end`` (or, with
    ``end`` None, to the newline after ``start``, at most ``cap`` bytes): a slice of
    the bytes in hand, or a read of the file."""

    __slots__ = ("_catalogs", "_directory", "_families", "_fetch", "_found", "_names", "_rows", "count", "spans", "where")

    def __init__(self, where: str, fetch: Callable[..., bytes], base: int, layout: dict[str, Any]) -> None:
        self.where = where
        self._fetch = fetch
        self.count: int = layout["kernels"]  # what the layout claims; iterating counts them
        self.spans = {part: (base + layout[part][0], base + layout[part][1]) for part in _PARTS}
        self._directory: bytes | None = None
        self._families: bytes | None = None
        self._names: dict[str, None] | None = None
        self._rows: dict[str, tuple[int, str, bytes, int]] | None = None  # every row, where a reader asked for all
        self._found: dict[str, tuple[int, str, bytes, int]] = {}  # the rows looked up one at a time
        self._catalogs: dict[str, Any] = {}

    # -- the parts --------------------------------------------------------------

    def _part(self, part: str, marker: bytes, cap: int) -> bytes:
        start, end = self.spans[part]
        if end - start > cap:
            msg = f"{self.where}: {LAYOUT_KEY}.{part}: {end - start} bytes, over the limit of {cap}"
            raise IndexFormatError(msg)
        data = self._fetch(start - len(marker), end)
        if not data.startswith(marker) or len(data) != end - start + len(marker):
            msg = f"{self.where}: {LAYOUT_KEY}.{part}: points at no {part} of this index; rebuild or reinstall the library"
            raise IndexFormatError(msg)
        return data[len(marker) :]

    def directory(self) -> bytes:
        """The directory's one line (``{"name":[offset,"family",[values],form],...}``), read once."""
        if self._directory is None:
            data = self._part("directory", _DIRECTORY, MAX_DIRECTORY_BYTES)
            if not (data.startswith(b"{") and data.endswith(b"}")):
                msg = f"{self.where}: {DIRECTORY_KEY}: not one line of an object"
                raise IndexFormatError(msg)
            self._directory = data
        return self._directory

    def _family_part(self) -> bytes:
        if self._families is None:
            self._families = self._part("families", _FAMILIES, MAX_CATALOG_BYTES)
        return self._families

    # -- the kernels' names ----------------------------------------------------------

    @property
    def names(self) -> dict[str, None]:
        """Every kernel's name, in index order (one scan of the directory, when first asked)."""
        if self._names is None:
            found = _pattern("names").findall(self.directory())
            names = dict.fromkeys(map(bytes.decode, found))
            if len(names) != len(found):
                msg = f"{self.where}: {DIRECTORY_KEY}: names a kernel twice"
                raise IndexFormatError(msg)
            self._names = names
        return self._names

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.row(name) is not None

    def rows(self) -> dict[str, tuple[int, str, bytes, int]]:
        """Every kernel's directory row, by name, in index order: one scan (a reader
        that checks every kernel asks, so that each lookup is not a search)."""
        if self._rows is None:
            data = self.directory()
            rows = {}
            for match in _pattern("names").finditer(data):
                name = match.group(1).decode()
                rows[name] = parse_row(self.where, data, match.start(), name)
            if list(rows) != list(self.names):
                msg = f"{self.where}: {DIRECTORY_KEY}: a row is not like [offset, family, [axis values], form]"
                raise IndexFormatError(msg)
            self._rows = rows
        return self._rows

    def row(self, name: str) -> tuple[int, str, bytes, int] | None:
        """Kernel ``name``'s directory row: (line offset, family, axis values as written, form); None if it has none."""
        if self._rows is not None:
            return self._rows.get(name)
        found = self._found.get(name)
        if found is not None:  # a kernel's first use asks a few times (its name, its entry, its backward)
            return found
        if self._names is not None:  # scanned already: a dict lookup answers "none"
            if name not in self._names:
                return None
        data = self.directory()
        key = b'"' + name.encode() + b'":['
        at = data.find(key)
        while at > 0 and data[at - 1 : at] not in (b"{", b","):  # inside another row: cannot be, for names of this form
            at = data.find(key, at + 1)
        if at < 0:
            return None
        found = self._found[name] = parse_row(self.where, data, at, name)
        return found

    # -- a family's kernels ---------------------------------------------------------------

    def family_names(self) -> tuple[str, ...]:
        """The families whose catalogs the index holds, in index order."""
        return tuple(name.decode() for name in _pattern("family").findall(self._family_part()))

    def catalog(self, family: str) -> Any:
        """Family ``family``'s catalog, parsed (strict JSON); None where the index has none."""
        found = self._catalogs.get(family)
        if found is None:
            data = self._family_part()
            key = b'\n"' + family.encode() + b'": {'
            at = data.find(key)
            if at < 0:
                return None
            end = data.find(b"\n", at + 1)
            line = data[at + len(key) - 1 : end if end >= 0 else len(data)]
            line = line[:-1] if line.endswith(b",") and end >= 0 else line
            found = self._catalogs[family] = parse_json_text(_text(line, f"{self.where}: {FAMILIES_KEY}.{family}"), f"{self.where}: {FAMILIES_KEY}.{family}", MAX_DEPTH - 2)
        return found

    def find(self, family: str, values: list[bytes | None]) -> Iterator[tuple[str, bytes, int]]:
        """The kernels of ``family`` with these axis values (each as the directory
        writes it; None: any), in index order, found as they are asked for:
        (name, axis values as written, form)."""
        data = self.directory()
        prefix = b',"' + family.encode() + b'",['
        if all(value is not None for value in values):  # one literal: C's fast search
            key = prefix + b",".join(values) + b"],"  # type: ignore[arg-type]
            at = data.find(key)
            while at >= 0:
                name, _, point, form = row_around(self.where, data, at)
                yield name, point, form
                at = data.find(key, at + 1)
            return
        import re  # an axis left open: a pattern of the values given

        items = b",".join(re.escape(value) if value is not None else _VALUE for value in values)
        for match in re.finditer(re.escape(prefix) + items + rb"\],", data):
            name, _, point, form = row_around(self.where, data, match.start())
            yield name, point, form

    def members(self, family: str) -> list[tuple[str, bytes, int]]:
        """Every kernel of ``family``: (name, axis values as written, form), in index order."""
        import re

        pattern = re.compile(rb'"' + _NAME + rb'":\[\d{1,12},"' + re.escape(family.encode()) + rb'",\[([^\[\]]{0,4096})\],(\d{1,7})\]')
        return [(name.decode(), point, int(form)) for name, point, form in pattern.findall(self.directory())]

    # -- a kernel's line --------------------------------------------------------------

    def entry(self, name: str, row: tuple[int, str, bytes, int] | None = None) -> Any:
        """The parsed entry of kernel ``name`` (strict JSON), from the line its row points
        at, which must open with its name and the same family."""
        found = row or self.row(name)
        where = f"{self.where}: kernels.{name}"
        if found is None:
            msg = f"{where}: not in the directory ({DIRECTORY_KEY})"
            raise IndexFormatError(msg)
        start, end = self.spans["table"]
        position = start + found[0]
        line = self._fetch(position, None, min(MAX_KERNEL_LINE_BYTES, end - position)) if position < end else b""
        # The newline before the line, its name, then its family: both names, as the row's parse checked.
        if not line.startswith(b'\n"' + name.encode() + b'": {"family": "' + found[1].encode() + b'", '):
            msg = f"{where}: the directory ({DIRECTORY_KEY}) points at no line of this kernel; rebuild or reinstall the library"
            raise IndexFormatError(msg)
        last = position + len(line) >= end
        if not last and not line.endswith(b","):
            msg = f"{where}: its line does not end with ',' within {MAX_KERNEL_LINE_BYTES} bytes (not JSON)"
            raise IndexFormatError(msg)
        body = line[len(name) + 5 : None if last else -1]  # after '\n"name": '
        entry = parse_json_text(_text(body, where + " (its line)"), where, MAX_DEPTH - 2)
        if not isinstance(entry, dict):
            msg = f"{where}: is not an object"
            raise IndexFormatError(msg)
        return entry

    def lines_in_table(self) -> int:
        """How many lines the kernels table holds (a read of the whole table, in parts)."""
        start, end = self.spans["table"]
        count, at = 0, start
        while at < end:
            chunk = self._fetch(at, min(end, at + (1 << 22)))
            if not chunk:
                break
            count += chunk.count(b"\n")
            at += len(chunk)
        return count


def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{where}: not UTF-8 at byte {exc.start}"
        raise IndexFormatError(msg) from None


def split(data: bytes, where: str) -> tuple[dict[str, Any], KernelLines] | None:
    """The top level (parsed; its kernels table empty) and the parts of the index
    ``data`` in the build's layout, or None where it is in another."""
    if not data.endswith(_CLOSE):
        return None

    def fetch(start: int, end: int | None, cap: int = 0) -> bytes:
        if end is None:
            stop = data.find(b"\n", start + 1, start + cap + 1)
            return data[start : start + cap if stop < 0 else stop]
        return data[start:end]

    return _open(data, where, len(data), fetch)


def open_lines(path: str, where: str) -> tuple[dict[str, Any], KernelLines] | None:
    """``split`` for the file ``path``, reading only its top level now."""
    with open_regular(path, 1 << 62) as (fd, st):
        head = _read_head(fd, st.st_size)
        tail = os.pread(fd, len(_CLOSE), max(0, st.st_size - len(_CLOSE)))
    if head is None or tail != _CLOSE:
        return None
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def fetch(start: int, end: int | None, cap: int = 0) -> bytes:
        with open_regular(path, 1 << 62) as (fd, now):
            if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != identity:
                msg = f"{where}: changed since it was loaded; load the library again"
                raise IndexFormatError(msg)
            return _read_line(fd, start, cap) if end is None else _read_span(fd, start, end)

    return _open(head, where, st.st_size, fetch)


def _read_head(fd: int, size: int) -> bytes | None:
    """The file's bytes through the ``kernel_index`` line, or None."""
    head, want = b"", 1 << 13
    while True:
        chunk = os.pread(fd, min(want, size) - len(head), len(head))
        head += chunk
        at = head.find(_INDEX)
        end = head.find(b"\n", at + len(_INDEX)) if at >= 0 else -1
        if end >= 0:
            return head[: end + 1]
        if not chunk or len(head) >= min(size, MAX_TOP_BYTES):
            return None
        want *= 4


def _read_span(fd: int, start: int, end: int) -> bytes:
    """The bytes from ``start`` to ``end`` (fewer where the file ends first)."""
    span = b""
    while start + len(span) < end:
        chunk = os.pread(fd, end - start - len(span), start + len(span))
        if not chunk:
            break
        span += chunk
    return span


def _read_line(fd: int, start: int, cap: int) -> bytes:
    """From ``start`` (a newline) to the next newline, at most ``cap`` bytes."""
    line, want = b"", 1 << 13
    while True:
        chunk = os.pread(fd, min(want, cap) - len(line), start + len(line))
        line += chunk
        stop = line.find(b"\n", 1)
        if stop >= 0:
            return line[:stop]
        if not chunk or len(line) >= cap:
            return line
        want *= 4


def _open(head: bytes, where: str, size: int, fetch: Callable[..., bytes]) -> tuple[dict[str, Any], KernelLines] | None:
    """``split``, given the bytes through the ``kernel_index`` line (or all of them)."""
    at = head.find(_INDEX)
    end = head.find(b"\n", at + len(_INDEX)) if at >= 0 else -1
    if end < 0:
        return None
    try:
        top = parse_json_text((head[:at] + b"\n}").decode("utf-8"), where, MAX_DEPTH)
        layout = parse_json_text(head[at + len(_INDEX) : end].decode("utf-8"), where, 2)
    except (IndexFormatError, UnicodeDecodeError):
        return None  # the whole-document reader names the problem
    if not isinstance(top, dict) or "kernels" in top or LAYOUT_KEY in top or not _spans_fit(layout, size - end - 1 - len(_CLOSE)):
        return None
    top["kernels"] = {}
    return top, KernelLines(where, fetch, end + 1, layout)


def _spans_fit(layout: Any, size: int) -> bool:
    """Whether ``layout`` is a ``kernel_index`` of parts in order within ``size`` bytes."""
    if not isinstance(layout, dict) or set(layout) != {"kernels", *_PARTS} or type(layout["kernels"]) is not int or layout["kernels"] < 1:
        return False
    last = 0
    for part in _PARTS:
        span = layout[part]
        if not (isinstance(span, list) and len(span) == 2 and all(type(n) is int for n in span) and last <= span[0] <= span[1] <= size):
            return False
        last = span[1]
    return True
