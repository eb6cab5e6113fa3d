"""The checks every index field goes through: its type, its keys, its text
and its range, each failure one line naming the file and the field path.

``aotc.index._validate`` (the top level and each kernel) and
``aotc.index._declared_entries`` (a declared kernel's axes and signature)
are built from these.
"""

from __future__ import annotations

import re

from aotc.errors import IndexFormatError, echo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}")
# A plain file name: no separator, no leading dot, nothing but these characters.
_NAME_OR_EMPTY = re.compile(r"[A-Za-z0-9_.+-]{0,64}")
_CONSTANT = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,63}")
_PLAIN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CTYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_ *]{0,63}")
_VERSION = re.compile(r"\d{1,6}(\.\d{1,6}){1,3}")
_TEXT_LIMIT = 256
# What a manifest may raise its kernel limit to (aotc.build._checks.LIMITS).
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


def _text(where: str, path: str, value: Any, pattern: re.Pattern[str] | None = None, what: str = "") -> str:
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
