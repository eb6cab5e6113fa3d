"""JSON through CPython's own C accelerator, ``_json``, without importing ``json``.

``json.loads`` and ``json.dumps`` run ``_json``'s scanner and encoder; the
``json`` package around them imports ``re``, and ``re`` imports ``enum``,
``functools`` and ``collections``: some 31 M instructions, about 3 ms of a
4 ms start-up on the 2-core VM (benchmarks/RESULTS.md, issue 39). Reading an
index needs none of that, so this module hands the C scanner and encoder the
same settings ``json.JSONDecoder`` and ``json.JSONEncoder`` give them.

Only what succeeds is answered here. Anything the fast path does not finish
(malformed text, a value json cannot write, a Python without ``_json``) is
done again by ``json`` itself, which raises its own error with its own
message: the fast path never decides what is valid JSON on its own
(``tests/test_cjson.py`` holds the two to each other).
"""

from __future__ import annotations

from aotc.errors import ArgumentTypeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    from _json import encode_basestring_ascii, make_encoder, make_scanner
except ImportError:  # a Python built without the accelerator: json does it all
    make_scanner = make_encoder = encode_basestring_ascii = None

__all__ = ["dumps", "loads"]

_WHITESPACE = " \t\n\r"  # json's own (json.decoder.WHITESPACE)


class _DecoderSettings:
    """What ``json.JSONDecoder(object_pairs_hook=..., parse_constant=...)`` hands the scanner."""

    __slots__ = ("memo", "object_hook", "object_pairs_hook", "parse_constant", "parse_float", "parse_int", "strict")

    def __init__(self, object_pairs_hook: Callable[..., Any] | None, parse_constant: Callable[[str], Any] | None) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = object_pairs_hook
        self.parse_float = float  # the types themselves: the scanner then converts in C
        self.parse_int = int
        self.parse_constant = parse_constant if parse_constant is not None else _CONSTANTS.__getitem__
        self.memo: dict[str, str] = {}


_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
_scanners: dict[tuple[Any, Any], Any] = {}  # one scanner per pair of hooks, as json keeps one decoder


def loads(text: str, *, object_pairs_hook: Callable[..., Any] | None = None, parse_constant: Callable[[str], Any] | None = None) -> Any:
    """``json.loads(text, object_pairs_hook=..., parse_constant=...)``, the same value
    or the same exception, without importing ``json`` when ``text`` is JSON."""
    if make_scanner is not None and isinstance(text, str):
        key = (object_pairs_hook, parse_constant)
        scan = _scanners.get(key)
        if scan is None:
            scan = _scanners[key] = make_scanner(_DecoderSettings(object_pairs_hook, parse_constant))
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scan(text, start)
        except (StopIteration, ValueError, SystemError, RecursionError):
            # Not JSON, or not what Python converts: json says why, in its own words.
            # (Without json.decoder imported, the scanner's own error is a SystemError.)
            pass
        else:
            # A JSON value never ends in whitespace: the rest is whitespace or is extra data.
            if end == len(text.rstrip(_WHITESPACE)):
                return value
    import json

    return json.loads(text, object_pairs_hook=object_pairs_hook, parse_constant=parse_constant)


def _refuse(value: Any) -> Any:
    raise ArgumentTypeError(type(value).__name__)  # json.dumps, called next, says what it cannot write


_encoders: dict[tuple[bool, bool], Any] = {}  # stateless (no markers), so shared by every call and thread


def dumps(value: Any, *, sort_keys: bool = False, allow_nan: bool = True) -> str:
    """``json.dumps(value, sort_keys=..., allow_nan=..., separators=(",", ":"))``
    (ASCII only), the same text or the same exception, without importing ``json``."""
    if make_encoder is not None:
        key = (sort_keys, allow_nan)
        encode = _encoders.get(key)
        if encode is None:
            # json.JSONEncoder.iterencode's one-shot call: markers, default, the
            # string encoder, indent, the separators, sort_keys, skipkeys,
            # allow_nan. No markers: a value that holds itself recurses to a
            # RecursionError, and json then names the circular reference.
            encode = _encoders[key] = make_encoder(None, _refuse, encode_basestring_ascii, None, ":", ",", sort_keys, False, allow_nan)
        try:
            return "".join(encode(value, 0))
        except (TypeError, ValueError, RecursionError):
            pass  # json says why
    import json

    return json.dumps(value, sort_keys=sort_keys, allow_nan=allow_nan, separators=(",", ":"))
