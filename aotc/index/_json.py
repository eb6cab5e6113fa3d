"""Reading an index's bytes and parsing them as JSON, within bounds.

The index is read before anything in it can be trusted, so nothing here may
hang, exhaust memory or recurse on a hostile file: the open never blocks or
follows a symlink, only a regular file is read, its size is capped before a
byte is read, and the nesting depth is measured by a loop before ``json``
(which recurses) sees the text. The text is parsed by json's own C scanner
(``aotc._cjson``): importing ``json``, with ``re`` and ``enum``, would cost a
start-up more than the rest of it.
"""

from __future__ import annotations

import os
from itertools import accumulate

from aotc import _cjson
from aotc._untrusted_files import read_regular
from aotc.errors import IndexFormatError, LibraryNotFoundError, UnreadableFileError, echo
from aotc.index.schema import MAX_DEPTH, MAX_INDEX_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse_index_bytes", "parse_json_text", "read_index_file"]


def read_index_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path``, a regular file of at most MAX_INDEX_BYTES."""
    try:
        return read_regular(path, MAX_INDEX_BYTES)
    except UnreadableFileError as exc:
        if not os.path.lexists(path):
            msg = f"{path}: no such file"
            raise LibraryNotFoundError(msg) from None
        raise IndexFormatError(str(exc)) from None


# A JSON string, and the brackets outside strings. The closing quote is
# optional so that a string never closed still matches (to the end of the
# text): a pattern that could fail there would be retried from every later
# quote, quadratic on text such as '\\"' * 40000. Compiled on first need:
# the build writes no escapes, and `re` is no part of a start-up.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"?'
_NOT_BRACKETS = r"[^\[\]{}]+"
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


# Every byte but brackets and the double quote, and each bracket's step in depth.
_NOT_BRACKETS_OR_QUOTES = bytes(c for c in range(256) if c not in b'[]{}"')
_BYTE_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def _depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text``, found without recursion.

    Brackets inside strings do not count. In text that is not JSON (a string
    never closed) the count may come out higher, which only refuses it sooner.
    Each step runs in C, linear in the length of the text.
    """
    if text.isascii() and "\\" not in text:
        # What the build writes: no escapes, so every quote opens or closes a
        # string. Keep brackets and quotes, then drop what lies between quote
        # pairs: a few times faster than the regular expressions below.
        kept = text.encode("ascii").translate(None, _NOT_BRACKETS_OR_QUOTES).split(b'"')
        steps = map(_BYTE_STEP.__getitem__, b"".join(kept[::2]))
    else:
        import re

        steps = map(_STEP.__getitem__, re.sub(_NOT_BRACKETS, "", re.sub(_STRING, "", text, flags=re.DOTALL)))
    return max(0, max(accumulate(steps), default=0))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        msg = f"key {echo(duplicate)} appears twice in one object"
        raise IndexFormatError(msg)  # parse_index_bytes adds where
    return result


def _no_constant(name: str) -> Any:
    msg = f"{name} is not JSON"
    raise IndexFormatError(msg)  # parse_index_bytes adds where


def parse_index_bytes(data: bytes, where: str) -> Any:
    """The JSON value of ``data``; one-line IndexFormatError for anything that is not strict JSON."""
    if len(data) > MAX_INDEX_BYTES:
        msg = f"{where}: {len(data)} bytes, more than the {MAX_INDEX_BYTES} an index may have"
        raise IndexFormatError(msg)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{where}: not a valid index (not UTF-8 at byte {exc.start})"
        raise IndexFormatError(msg) from None
    return parse_json_text(text, where, MAX_DEPTH)


def parse_json_text(text: str, where: str, max_depth: int) -> Any:
    """The JSON value of ``text``, nested at most ``max_depth`` deep, with no
    duplicate key and no NaN; one-line IndexFormatError otherwise."""
    depth = _depth(text)
    if depth > max_depth:
        msg = f"{where}: not a valid index (nested {depth} deep; an index nests at most {MAX_DEPTH})"
        raise IndexFormatError(msg)
    try:
        return _cjson.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (IndexFormatError, ValueError, RecursionError) as exc:
        # IndexFormatError from the hooks: a duplicate key or NaN. ValueError: malformed
        # JSON (JSONDecodeError), or an integer of more digits than Python converts.
        msg = f"{where}: not a valid index ({exc})"
        raise IndexFormatError(msg) from None
