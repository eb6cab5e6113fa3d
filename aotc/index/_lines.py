"""The index's kernels a line each: one kernel's entry found and parsed without the others.

The build writes ``index.json`` with the kernels table last, one kernel a
line, each entry opening with the four fields it is found by::

    {
     "schema": 2,
     ...the rest of the top level, indented...,
     "kernels": {
    "gemm_maxplus_f32_forward": {"semiring": "maxplus", "dtype": "f32", "pass": "forward", "variant": "single", ...},
    ...
     }
    }

JSON strings hold no raw newline, so every newline is whitespace between
values, and the lines of the table are its entries. ``split`` finds that
layout in an index's bytes, or returns None (the reader then parses and
validates the whole document, as for any index written otherwise). It parses
the top level alone and reads each line's kernel name and four fields with
one regular-expression scan, in C: they say where a kernel's entry is, not
what the kernel does. ``KernelLines.entry`` parses one kernel's line when the
kernel is first used; the reader validates it and verifies its checksums
then, before any field of it is used.
"""

from __future__ import annotations

import re
from operator import itemgetter

from aotc.errors import IndexFormatError
from aotc.index._json import parse_json_text
from aotc.index.schema import MAX_DEPTH

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["KINDS_FIRST", "KernelLines", "dumps", "split"]

# The fields a kernel is found by, in the order each line opens with.
KINDS_FIRST = ("semiring", "dtype", "pass", "variant")
_OPEN = b',\n "kernels": {'
_CLOSE = b"\n }\n}\n"
_NAME = rb"([A-Za-z_][A-Za-z0-9_]{0,63})"  # the validator's rule for names: no escapes, so raw text is the value
# A line's opening: name, then the four fields. Only its first ~120 bytes are read.
_LINE = re.compile(
    rb'\n"' + _NAME + rb'": \{"semiring": "' + _NAME + rb'", "dtype": "' + _NAME
    + rb'", "pass": "' + _NAME + rb'", "variant": "' + _NAME + rb'", '
)  # fmt: skip


class KernelLines:
    """The kernels table of an index in the line layout: names, found-by fields
    (unverified), and each kernel's line, parsed on request."""

    __slots__ = ("_by_kind", "found", "lines", "names", "where")

    def __init__(self, where: str, names: dict[str, int], found: list[tuple[bytes, ...]], lines: list[bytes]) -> None:
        self.where = where
        self.names = names  # name -> line number
        self.found = found  # per line: (name, semiring, dtype, pass, variant), as bytes
        self.lines = lines
        self._by_kind: dict[tuple[bytes, ...], list[str]] | None = None

    def kind(self, name: str) -> tuple[str, str, str, str]:
        """The four fields ``name``'s line opens with: where to look, not yet verified."""
        _, semiring, dtype, pass_, variant = self.found[self.names[name]]
        return semiring.decode(), dtype.decode(), pass_.decode(), variant.decode()

    def claimants(self, key: tuple[str, str, str, str]) -> list[str]:
        """The names of the kernels whose lines open with ``key``'s four fields."""
        by_kind = self._by_kind
        if by_kind is None:
            kinds = list(map(_KIND, self.found))
            names = list(self.names)
            by_kind = dict(zip(kinds, map(_one, names)))  # in C: a dict of 1,000 costs ~0.1 ms
            if len(by_kind) != len(kinds):  # two lines claim one kind: list them all
                by_kind = {}
                for kind, name in zip(kinds, names):
                    by_kind.setdefault(kind, []).append(name)
            self._by_kind = by_kind
        return by_kind.get(tuple(part.encode() for part in key), [])

    def entry(self, name: str) -> Any:
        """The parsed entry of kernel ``name`` (strict JSON: no duplicate key, no NaN)."""
        number = self.names[name]
        line = self.lines[number]
        head = b'"' + self.found[number][0] + b'": '
        last = number == len(self.lines) - 1
        body = line[len(head) :] if last else line[len(head) : -1]
        if not last and not line.endswith(b","):
            msg = f"{self.where}: kernels.{name}: its line does not end with ',' (not JSON)"
            raise IndexFormatError(msg)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"{self.where}: kernels.{name}: not UTF-8 at byte {exc.start} of its line"
            raise IndexFormatError(msg) from None
        entry = parse_json_text(text, f"{self.where}: kernels.{name}", MAX_DEPTH - 2)
        if not isinstance(entry, dict):
            msg = f"{self.where}: kernels.{name}: is not an object"
            raise IndexFormatError(msg)
        return entry


_NAME_OF = itemgetter(0)
_KIND = itemgetter(1, 2, 3, 4)


def _one(name: str) -> list[str]:
    return [name]


def split(data: bytes, where: str) -> tuple[Any, KernelLines] | None:
    """The top level (parsed; its kernels table empty) and the kernel lines of
    ``data``, or None where ``data`` is not in the line layout."""
    start = data.find(_OPEN)
    if start < 0 or not data.endswith(_CLOSE):
        return None
    table_start, table_end = start + len(_OPEN), len(data) - len(_CLOSE)
    found = _LINE.findall(data, table_start, table_end)
    # Each match opens a line; as many as the table's lines means every line opens so.
    if not found or len(found) != data.count(b"\n", table_start, table_end):
        return None
    try:
        top = parse_json_text((data[:start] + b"\n}").decode("utf-8"), where, MAX_DEPTH)
    except (IndexFormatError, UnicodeDecodeError):
        return None  # the whole-document reader names the problem
    if not isinstance(top, dict) or "kernels" in top:
        return None
    top["kernels"] = {}
    names = dict(zip(map(bytes.decode, map(_NAME_OF, found)), range(len(found))))
    if len(names) != len(found):
        return None  # a name twice: the whole-document reader names it
    return top, KernelLines(where, names, found, data[table_start + 1 : table_end].split(b"\n"))


def dumps(index: dict[str, Any]) -> bytes:
    """``index`` in the line layout (the build's writer; ``json`` only)."""
    import json

    top = {key: value for key, value in index.items() if key != "kernels"}
    kernels = index.get("kernels", {})
    if not kernels:
        return (json.dumps(index, indent=1) + "\n").encode("utf-8")
    lines = []
    for name, entry in kernels.items():
        ordered = {key: entry[key] for key in KINDS_FIRST if key in entry}
        ordered.update((key, value) for key, value in entry.items() if key not in ordered)
        lines.append(f"{json.dumps(name)}: {json.dumps(ordered)}")
    head = json.dumps(top, indent=1)[: -len("\n}")]
    return (head + _OPEN.decode() + "\n" + ",\n".join(lines) + _CLOSE.decode()).encode("utf-8")
