"""Validation helpers for the manifest loader: each problem becomes one error line.

Every check names the file, the line and the dotted key of what it refused, so
a person can go straight to the line to fix (``manifest.yaml:12:
families.gemm.matrix.dtype: unknown dtype 'f16' (known: f32, f64)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

from aotc.build._yaml import LineDict, LineList, key_text
from aotc.errors import ManifestError, echo

__all__ = ["MAX_INT", "MAX_NAME", "Checker", "describe", "join", "line_of", "listing"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names become parts of kernel names, which are C symbols and file names
# (<kernel>.resources.txt must stay under 255 bytes), and parts of error lines.
MAX_NAME = 40
# No size or count in a manifest comes near this; bigger is a typo.
MAX_INT = 1 << 16
# The longest "(known: ...)" list an error line shows.
_LISTING_CHARS = 100


class Checker:
    """Validation helpers that turn every problem into one ManifestError line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, line: int, key: str, message: str) -> NoReturn:
        msg = f"{self.path}:{line}: {key}: {message}"
        raise ManifestError(msg)

    def mapping(
        self, value: Any, key: str, line: int, *, required: Iterable[str] = (), optional: Iterable[str] = ()
    ) -> LineDict:
        if not isinstance(value, LineDict):
            self.fail(line, key, f"expected a mapping, got {describe(value)}")
        required, optional = tuple(required), tuple(optional)
        for name in value:
            if name not in required and name not in optional:
                known = listing((*required, *optional))
                self.fail(value.key_lines[name], join(key, key_text(name)), f"unknown key (known: {known})")
        for name in required:
            if name not in value:
                self.fail(value.line, key, f"missing required key {name!r}")
        return value

    def sequence(self, value: Any, key: str, line: int) -> LineList:
        if not isinstance(value, LineList):
            self.fail(line, key, f"expected a list, got {describe(value)}")
        if not value:
            self.fail(line, key, "must not be empty")
        return value

    def identifier(self, value: Any, key: str, line: int) -> str:
        if not isinstance(value, str) or not _IDENTIFIER.match(value):
            self.fail(line, key, f"{echo(value)} is not a C identifier (letters, digits and _, not starting with a digit)")
        if len(value) > MAX_NAME:
            self.fail(line, key, f"{echo(value)} is longer than {MAX_NAME} characters")
        return value

    def choices(self, value: Any, key: str, line: int, known: Iterable[str], what: str) -> tuple[str, ...]:
        """A non-empty list of distinct names, each one of ``known``."""
        items = self.sequence(value, key, line)
        known = tuple(known)
        result: list[str] = []
        for item, item_line in zip(items, items.item_lines):
            if not isinstance(item, str) or item not in known:
                self.fail(item_line, key, f"unknown {what} {echo(item)} (known: {listing(known)})")
            if item in result:
                self.fail(item_line, key, f"{what} {echo(item)} is listed twice")
            result.append(item)
        return tuple(result)

    def positive_int(self, value: Any, key: str, line: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            self.fail(line, key, f"expected a positive integer, got {describe(value)}")
        if value > MAX_INT:
            self.fail(line, key, f"{value} is over the limit of {MAX_INT}")
        return value


def describe(value: Any) -> str:
    if value is None:
        return "nothing"
    return {LineDict: "a mapping", LineList: "a list"}.get(type(value), f"{type(value).__name__} {echo(value)}")


def listing(names: Iterable[str]) -> str:
    """``names`` comma-separated for a "(known: ...)" note, cut to stay one short line."""
    text = ", ".join(names)
    if len(text) <= _LISTING_CHARS:
        return text
    cut = text[: _LISTING_CHARS - 5]
    return f"{cut.rpartition(', ')[0] or cut}, ..."


def join(*keys: str) -> str:
    return ".".join(k for k in keys if k and k != "(root)")


def line_of(mapping: LineDict, key: str) -> int:
    return mapping.key_lines.get(key, mapping.line)
