"""A row of the build's layout's directory (``kernel_lines``), read by hand.

A row is ``"name":[offset,"family",[axis values],form]``: the kernel's name,
its line's offset (1 to 12 digits), its family (a name), its axis values as
written (up to 4096 bytes, no bracket) and its form (1 to 7 digits); names
are the validator's (``[A-Za-z_][A-Za-z0-9_]{0,63}``, no escapes, so the raw
bytes are the value). A kernel's first use reads its row here: with
``bytes.find`` and ``bytes`` tests, in C, not a regular expression (``re``,
with ``enum``, would cost a start-up more than the rest of it).
"""

from __future__ import annotations

from aotc.errors import IndexFormatError
from aotc.index.schema import DIRECTORY_KEY

__all__ = ["is_name", "row", "row_around"]

_OFFSET_DIGITS, _NAME_BYTES, _VALUES_BYTES, _FORM_DIGITS = 12, 64, 4096, 7


def row(where: str, data: bytes, at: int, name: str) -> tuple[int, str, bytes, int]:
    """Kernel ``name``'s row at ``at`` in the directory ``data``, followed by ``,``
    or ``}``: (line offset, family, axis values as written, form)."""
    found = _fields(data, at, name.encode())
    if found is None or data[found[0] : found[0] + 1] not in (b",", b"}"):
        msg = f"{where}: {DIRECTORY_KEY}.{name}: not a row like [offset, family, [axis values], form]"
        raise IndexFormatError(msg)
    return found[1:]


def row_around(where: str, data: bytes, at: int) -> tuple[str, str, bytes, int]:
    """The row whose family was found at ``at`` (its ``,"family",[``): (name, family, axis values, form)."""
    colon = data.rfind(b'":[', 0, at)
    start = data.rfind(b'"', 0, colon)
    name = data[start + 1 : colon].decode("ascii", "replace")
    found = row(where, data, start, name)
    if start + 1 + len(name) + 3 + len(str(found[0])) != at or data[start - 1 : start] not in (b"{", b","):
        msg = f"{where}: {DIRECTORY_KEY}: a row near byte {at} is not like [offset, family, [axis values], form]"
        raise IndexFormatError(msg)
    return (name, *found[1:])  # type: ignore[return-value]


def is_name(text: bytes) -> bool:
    """``[A-Za-z_][A-Za-z0-9_]{0,63}`` (bytes' isalpha and isalnum are ASCII's)."""
    return 0 < len(text) <= _NAME_BYTES and (text[:1].isalpha() or text[:1] == b"_") and text.replace(b"_", b"a").isalnum()


def _fields(data: bytes, at: int, name: bytes) -> tuple[int, int, str, bytes, int] | None:
    """The row of ``name`` at ``at``: where it ends, and its four fields; None if there is none."""
    head = b'"' + name + b'":['
    if not (is_name(name) and data.startswith(head, at)):
        return None
    at += len(head)
    stop = data.find(b',"', at, at + _OFFSET_DIGITS + 2)
    offset = data[at:stop]
    if stop < 0 or not offset.isdigit():  # bytes' isdigit: ASCII digits, at least one
        return None
    at = stop + 2
    stop = data.find(b'",[', at, at + _NAME_BYTES + 3)
    family = data[at:stop]
    if stop < 0 or not is_name(family):
        return None
    at = stop + 3
    stop = data.find(b"],", at, at + _VALUES_BYTES + 2)
    point = data[at:stop]
    if stop < 0 or b"[" in point or b"]" in point:
        return None
    at = stop + 2
    stop = data.find(b"]", at, at + _FORM_DIGITS + 1)
    form = data[at:stop]
    if stop < 0 or not form.isdigit():
        return None
    return stop + 1, int(offset), family.decode(), point, int(form)
