"""Reading an index's bytes and parsing them as JSON, within bounds.

The index is read before anything in it can be trusted, so nothing here may
hang, exhaust memory or recurse on a hostile file: the open never blocks or
follows a symlink, only a regular file is read, its size is capped before a
byte is read, and the nesting depth is measured by a loop before ``json``
(which recurses) sees the text.
"""

from __future__ import annotations

import json
import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any

from aotc.errors import IndexFormatError, LibraryNotFoundError, echo
from aotc.index.schema import MAX_DEPTH, MAX_INDEX_BYTES

__all__ = ["parse_index_bytes", "read_capped", "read_index_file"]

# O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
# O_NOFOLLOW: a symlink fails with ELOOP instead of being followed.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def read_capped(fd: int, where: str, limit: int) -> bytes:
    """All of the regular file open at ``fd``, refused beyond ``limit`` bytes."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        msg = f"{where}: not a regular file"
        raise IndexFormatError(msg)
    if info.st_size > limit:
        msg = f"{where}: {info.st_size} bytes, more than the {limit} an index may have"
        raise IndexFormatError(msg)
    chunks, total = [], 0
    while True:
        # One byte past the limit shows a file that grew after fstat.
        chunk = os.read(fd, limit + 1 - total)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            msg = f"{where}: more than the {limit} bytes an index may have"
            raise IndexFormatError(msg)


def read_index_file(path: Path) -> bytes:
    """The bytes of ``path``, a regular file of at most MAX_INDEX_BYTES."""
    try:
        fd = os.open(path, OPEN_FLAGS)
    except FileNotFoundError:
        msg = f"{path}: no such file"
        raise LibraryNotFoundError(msg) from None
    except OSError as exc:
        what = "a symlink (an index must be a regular file)" if _is_symlink(path) else exc.strerror
        msg = f"{path}: cannot open: {what}"
        raise IndexFormatError(msg) from None
    try:
        return read_capped(fd, str(path), MAX_INDEX_BYTES)
    except OSError as exc:
        msg = f"{path}: cannot read: {exc.strerror}"
        raise IndexFormatError(msg) from None
    finally:
        os.close(fd)


def _is_symlink(path: Path) -> bool:
    try:
        return path.is_symlink()
    except OSError:
        return False


# A JSON string, and the brackets outside strings. The closing quote is
# optional so that a string never closed still matches (to the end of the
# text): a pattern that could fail there would be retried from every later
# quote, quadratic on text such as '\\"' * 40000.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text``, found without recursion.

    Brackets inside strings do not count. In text that is not JSON (a string
    never closed) the count may come out higher, which only refuses it sooner.
    Each step runs in C, linear in the length of the text.
    """
    brackets = _NOT_BRACKETS.sub("", _STRING.sub("", text))
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets)), default=0))


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
    depth = _depth(text)
    if depth > MAX_DEPTH:
        msg = f"{where}: not a valid index (nested {depth} deep; an index nests at most {MAX_DEPTH})"
        raise IndexFormatError(msg)
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (IndexFormatError, ValueError, RecursionError) as exc:
        # IndexFormatError from the hooks: a duplicate key or NaN. ValueError: malformed
        # JSON (JSONDecodeError), or an integer of more digits than Python converts.
        msg = f"{where}: not a valid index ({exc})"
        raise IndexFormatError(msg) from None
