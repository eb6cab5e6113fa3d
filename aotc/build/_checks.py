"""Validation helpers for the manifest loader: each problem becomes one error line.

Every check names the file, the line and the dotted key of what it refused, so
a person can go straight to the line to fix (``manifest.yaml:12:
families.gemm.matrix.dtype: unknown dtype 'f16' (known: f32, f64)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from aotc.build._yaml import LineDict, LineList, key_text
from aotc.errors import ManifestError, echo, listing

__all__ = [
    "LIMITS", "MAX_DIMS", "MAX_EXPRESSION_CHARS", "MAX_EXPRESSION_DEPTH", "MAX_INT", "MAX_INT32", "MAX_NAME", "MAX_PARAMS",
    "RESERVED_FOR", "RESERVED_NAMES",
    "Checker", "Limit", "describe", "join", "line_of", "listing",
]  # fmt: skip

# A whole-string match (\Z, not $, which also matches before a final newline).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# The manifest's caps, in one place (docs/design.md, "Trust model", lists them).
# Names become parts of kernel names, which are C symbols and file names
# (<kernel>.resources.txt must stay under 255 bytes), and parts of error lines.
MAX_NAME = 40
# No size or count in a manifest comes near this; bigger is a typo.
MAX_INT = 1 << 16


class Limit(NamedTuple):
    """A cap a manifest may raise for itself, under ``limits:``."""

    default: int
    ceiling: int  # the most a manifest may raise it to
    counts: str  # what it counts, as a refusal says it


# The caps that bound a manifest's size, each raised in the manifest by its
# name (``limits: {kernels: 200000}``). The defaults stop the pathological (a
# stranger's file handed to `aotc list`: a matrix of 64^5 points hung it),
# not the large: a library of 100,000 kernels lists in seconds. Each is
# counted before the work it guards (a matrix's points before any is made),
# and the work after it is linear, so a raised limit raises time and memory
# in proportion; the ceiling keeps even a raised one finite.
LIMITS = {
    "kernels": Limit(100_000, 1_000_000, "kernels a library"),
    "points": Limit(1_000_000, 10_000_000, "points a family's matrix holds before excludes"),
    "axis_values": Limit(4_096, 65_536, "values an axis"),
    # The YAML reader's time is in proportion to the bytes (about 4 s a MiB of
    # dense flow mappings here); a file over it is refused before it is read.
    "manifest_bytes": Limit(4 << 20, 64 << 20, "bytes a manifest"),
}
# A launch expression's text, and how deeply its operations nest (a*b*c is 2 deep).
MAX_EXPRESSION_CHARS = 200
MAX_EXPRESSION_DEPTH = 12
# What the index keeps of a kernel (aotc.index, which refuses more): parameters
# a signature, axes a family, semirings a manifest; dimensions an array's shape
# (also its optional: and strides:); integers of axes and constants.
MAX_PARAMS = 64
MAX_DIMS = 8
MAX_INT32 = 2**31 - 1

# Names become C and C++ identifiers (kernel symbols, parameters): none may be
# a keyword of either, a name CUDA predefines, or one C and C++ reserve (__x,
# _X). Python's keywords are names C takes: a family with a parameter named
# `lambda` is called through aotc.kernels.Family itself, with no generated entry.
RESERVED_NAMES = frozenset(
    # C (C23) and C++ (C++23) keywords, alternative tokens included
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class "
    "compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype "
    "default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline "
    "int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register "
    "reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast struct switch "
    "template this thread_local throw true try typedef typeid typename typeof typeof_unqual union unsigned using "
    "virtual void volatile wchar_t while xor xor_eq "
    # CUDA's predefined variables and types
    "threadIdx blockIdx blockDim gridDim warpSize dim3".split()
)
# Names refused for one kind of thing only, beside RESERVED_NAMES: a library's
# name is its torch.ops namespace; a family's is an attribute of
# aotc.kernels.Kernels, whose own attributes would hide it; a parameter's or
# an axis's is a keyword of the family's call, which takes stream= itself.
RESERVED_FOR = {
    "library": frozenset({"aotc", "aten", "prim", "prims", "torch", "quantized"}),
    "family": frozenset({"library", "serial", "names", "family", "layout", "layout_of", "kernel", "torch_ops"}),
    "parameter": frozenset({"stream"}),
    "axis": frozenset({"stream"}),
}


class Checker:
    """Validation helpers that turn every problem into one ManifestError line."""

    def __init__(self, path: Path, limits: dict[str, int] | None = None) -> None:
        self.path = path
        # LIMITS' values for this manifest: the defaults, or what its limits: raised them to.
        self.limits = limits or {name: limit.default for name, limit in LIMITS.items()}

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
                # `{shape: rows, n}` reads n as a key with no value: the list lost its brackets.
                hint = "; it has no value: inside { }, a list needs its brackets ([a, b])" if value[name] is None else ""
                self.fail(value.key_lines[name], join(key, key_text(name)), f"unknown key (known: {known}){hint}")
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

    def identifier(self, value: Any, key: str, line: int, *, kind: str = "name") -> str:
        """A C identifier of at most MAX_NAME characters: the one check of every
        name. A ``name`` (and a library, family or parameter) may not be one of
        RESERVED_NAMES, or begin as C reserves (__x, _X); an ``axis`` name (a
        template variable: the tropical family's is `pass`) and a ``value`` may;
        RESERVED_FOR adds the names one kind may not take."""
        if not isinstance(value, str) or not _IDENTIFIER.match(value):
            self.fail(line, key, f"{echo(value)} is not a C identifier (letters, digits and _, not starting with a digit)")
        if len(value) > MAX_NAME:
            self.fail(line, key, f"{echo(value)} is longer than {MAX_NAME} characters")
        if kind not in ("axis", "value") and (value in RESERVED_NAMES or value.startswith("__") or (value[0] == "_" and value[1:2].isupper())):
            self.fail(line, key, f"{echo(value)} is a reserved word of C, C++ or CUDA; choose another name")
        if value in RESERVED_FOR.get(kind, ()):
            self.fail(line, key, f"{echo(value)} cannot name a {kind}: {_WHY_RESERVED[kind]}")
        return value

    def at_most(self, count: int, limit: int, line: int, key: str, what: str) -> None:
        """One of the caps above: ``count`` ``what`` are more than ``limit``."""
        if count > limit:
            self.fail(line, key, f"{count} {what} are more than the limit of {limit}")

    def within(self, name: str, count: int, line: int, key: str, problem: str) -> None:
        """``count`` against one of LIMITS: over it, ``problem`` and the limit, named
        as the manifest raises it (``limits.kernels``)."""
        if count > self.limits[name]:
            self.fail(line, key, f"{problem}, over the limit of {self.limits[name]} {LIMITS[name].counts} (limits.{name})")

    def raise_limits(self, value: Any, line: int) -> None:
        """A manifest's ``limits:``: each named limit set, up to its ceiling."""
        table = self.mapping(value, "limits", line, optional=LIMITS)
        for name, raw in table.items():
            at, at_line, limit = f"limits.{name}", line_of(table, name), LIMITS[name]
            if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= limit.ceiling:
                self.fail(at_line, at, f"expected 1 to {limit.ceiling} {limit.counts} (default {limit.default}), got {describe(raw)}")
            self.limits[name] = raw

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


_WHY_RESERVED = {
    "library": "a library's name is its torch.ops namespace, and that one is taken",
    "family": "aotc.kernels.Kernels has an attribute of that name",
    "parameter": "a family's call takes stream= itself",
    "axis": "a family's call takes stream= itself",
}


def describe(value: Any) -> str:
    if value is None:
        return "nothing"
    return {LineDict: "a mapping", LineList: "a list"}.get(type(value), f"{type(value).__name__} {echo(value)}")


def join(*keys: str) -> str:
    return ".".join(k for k in keys if k and k != "(root)")


def line_of(mapping: LineDict, key: str) -> int:
    return mapping.key_lines.get(key, mapping.line)
