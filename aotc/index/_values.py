"""The checks every index field goes through: its type, its keys, its text
and its range, each failure one line naming the file and the field path.

``aotc.index._validate`` (the top level and each kernel) and
``aotc.index._declared_entries`` (a declared kernel's axes and signature)
are built from these.

What a string may hold is a rule written with ``str`` methods (``Chars``,
``DottedNumber``), each the regular expression it names (``.pattern``):
importing ``re`` imports ``enum``, ``functools`` and ``collections`` (25 M
instructions, some 2.5 ms), and ``re`` compiles each pattern with its parser,
written in Python: more, together, than a whole start-up may cost
(benchmarks/RESULTS.md, issue 39). A set of characters, a first character
and a length are what ``str.strip`` and ``len`` answer in C.
``tests/test_index_text_rules.py`` holds each rule to its expression on
generated strings.
"""

from __future__ import annotations

from aotc.errors import IndexFormatError, echo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from aotc.index.schema import ArchText

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
WORD_CHARS = _LETTERS + "0123456789_"
NAME_START = _LETTERS + "_"


class Chars:
    """A string of ``shortest`` to ``longest`` characters of ``chars``, whose first
    is one of ``first`` (default: ``chars``). ``fullmatch`` answers as a pattern's
    ``fullmatch`` would, true or false."""

    __slots__ = ("_chars", "_first", "longest", "pattern", "shortest")

    def __init__(self, pattern: str, chars: str, longest: int, *, first: str | None = None, shortest: int = 1) -> None:
        self.pattern = pattern  # the regular expression this rule is (for messages and tests)
        self._chars = chars
        self._first = frozenset(chars if first is None else first)
        self.longest = longest
        self.shortest = shortest

    def fullmatch(self, text: str) -> bool:
        # strip() removes every leading and trailing character of the set: a string of them alone leaves "".
        return self.shortest <= len(text) <= self.longest and (not text or text[0] in self._first) and not text.strip(self._chars)

    def __repr__(self) -> str:
        return f"<text rule {self.pattern}>"


class DottedNumber:
    """``parts`` runs of 1 to ``digits`` decimal digits, joined by dots (``13.0.88``).

    A decimal digit is what ``\\d`` matches in a ``str`` pattern: ``str.isdecimal``."""

    __slots__ = ("digits", "parts", "pattern")

    def __init__(self, pattern: str, parts: tuple[int, int], digits: int) -> None:
        self.pattern = pattern
        self.parts = parts
        self.digits = digits

    def fullmatch(self, text: str) -> bool:
        pieces = text.split(".")
        low, high = self.parts
        return low <= len(pieces) <= high and all(0 < len(piece) <= self.digits and piece.isdecimal() for piece in pieces)

    def __repr__(self) -> str:
        return f"<text rule {self.pattern}>"


# Each rule is the regular expression it names, answered without `re` (see the module docstring).
_IDENTIFIER = Chars(r"[A-Za-z_][A-Za-z0-9_]{0,63}", WORD_CHARS, 64, first=NAME_START)
_WORD = Chars(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}", WORD_CHARS + ".+-", 64, first=WORD_CHARS)
# A plain file name: no separator, no leading dot, nothing but these characters.
_NAME_OR_EMPTY = Chars(r"[A-Za-z0-9_.+-]{0,64}", WORD_CHARS + ".+-", 64, shortest=0)
_CONSTANT = Chars(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,63}", WORD_CHARS + ".+-", 64, first=WORD_CHARS + "+-")
_PLAIN_FILE = Chars(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}", WORD_CHARS + ".+-", 128, first=WORD_CHARS)
_SHA256 = Chars(r"[0-9a-f]{64}", "0123456789abcdef", 64, shortest=64)
_CTYPE = Chars(r"[A-Za-z_][A-Za-z0-9_ *]{0,63}", WORD_CHARS + " *", 64, first=NAME_START)
_VERSION = DottedNumber(r"\d{1,6}(\.\d{1,6}){1,3}", (2, 4), 6)
_TEXT_LIMIT = 256
# Kernels an index may hold: what a manifest may raise its kernel limit to
# (aotc.build._checks.LIMITS), so every library a build accepts loads; each
# part of the build's layout is read within its own cap (aotc.index.schema).
_MAX_KERNELS = 1_000_000
_MAX_PARAMS = 64
_MAX_ARCHS = 64
_MAX_THREADS = 1024
_MAX_INT = 2**31 - 1
# Checked parameters are interned (shared by the kernels that have them): the
# first few thousand are kept, whatever indexes a process reads.
_MAX_INTERNED = 4096


def _fail(where: str, path: str, problem: str) -> NoReturn:
    msg = f"{where}: {path}: {problem}" if path else f"{where}: {problem}"
    raise IndexFormatError(msg)


def _type(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _object(
    where: str, path: str, value: Any, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    # The common case first, in two set comparisons; any doubt takes the checks below, which name the key.
    if type(value) is dict and required <= value.keys() and (value.keys() == required or value.keys() <= required | optional):
        return value
    if not isinstance(value, dict):
        _fail(where, path, f"is {_type(value)}, not an object")
    for key in sorted(required - value.keys()):
        _fail(where, f"{path}.{key}" if path else key, "missing")
    for key in sorted(value.keys() - required - optional):
        _fail(where, path or "(top level)", f"unknown key {echo(key)}")
    return value


def _table(where: str, path: str, value: Any, limit: int) -> dict[str, Any]:
    """An object keyed by names the file chooses (kernels, semirings, archs)."""
    if not isinstance(value, dict):
        _fail(where, path, f"is {_type(value)}, not an object")
    if len(value) > limit:
        _fail(where, path, f"has {len(value)} entries, more than {limit}")
    return value


def _list(where: str, path: str, value: Any, limit: int) -> list[Any]:
    if not isinstance(value, list):
        _fail(where, path, f"is {_type(value)}, not a list")
    if len(value) > limit:
        _fail(where, path, f"has {len(value)} items, more than {limit}")
    return value


def _text(where: str, path: str, value: Any, pattern: Chars | ArchText | None = None, what: str = "") -> str:
    # The same three rules as below, in one expression: a kernel entry holds some 90 strings.
    if type(value) is str and (pattern is None or pattern.fullmatch(value)) and len(value) <= _TEXT_LIMIT and value.isprintable():
        return value
    if not isinstance(value, str):
        _fail(where, path, f"is {_type(value)}, not a string")
    if pattern is not None and not pattern.fullmatch(value):
        _fail(where, path, f"{echo(value)} is not {what}")
    if len(value) > _TEXT_LIMIT or not value.isprintable():
        _fail(where, path, f"{echo(value)} is not a short printable string")
    return value


def _int(where: str, path: str, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(where, path, f"is {_type(value)}, not an integer")
    if not low <= value <= high:
        _fail(where, path, f"{echo(value)} is outside {low}..{high}")
    return value
