"""The index's schema constants and its checksums: the one place the writer and the reader agree.

The build (``aotc.build.index_writer``) writes ``index.json``; the runtime,
``aotc inspect``, ``aotc warm`` and ``aotc doctor`` read it through
``aotc.index.LibraryIndex``. Both import what follows, so a field the build
seals is a field the reader checks.
"""

from __future__ import annotations

import sys

from aotc import _cjson
from aotc.dtypes import SCALAR_TYPES

try:  # CPython's own sha256, built in: no OpenSSL to load for a few hundred bytes
    if sys.version_info >= (3, 12):
        from _sha2 import sha256 as _builtin_sha256
    else:
        from _sha256 import sha256 as _builtin_sha256
except ImportError:  # a Python built without it: hashlib for everything
    _builtin_sha256 = None

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "ARCH_TEXT",
    "CHECKSUM_KEY",
    "DIRECTORY_KEY",
    "FAMILIES_KEY",
    "INDEX_NAME",
    "KERNEL_SEALED",
    "LAYOUT_CLOSE",
    "LAYOUT_DIRECTORY",
    "LAYOUT_FAMILIES",
    "LAYOUT_INDEX",
    "LAYOUT_KEY",
    "LAYOUT_KEYS",
    "LAYOUT_TABLE",
    "MAX_CATALOG_BYTES",
    "MAX_DEPTH",
    "MAX_DIRECTORY_BYTES",
    "MAX_FILE_BYTES",
    "MAX_INDEX_BYTES",
    "MAX_KERNEL_LINE_BYTES",
    "MAX_LAID_OUT_BYTES",
    "MAX_TOP_BYTES",
    "PACK_CODES",
    "SCHEMA",
    "SOURCE_DIR",
    "TOP_SEALED",
    "ArchText",
    "canonical_json",
    "field_checksums",
    "sealed_fields",
    "sha256_bytes",
    "size_text",
]

# 2: every kernel and the top level carry a "checksum" table (below); schema 1 had none.
# 3: a declared kernel's backward names its gradient kernels or its route, not a family.
SCHEMA = 3
INDEX_NAME = "index.json"
SOURCE_DIR = "src"

# An index read and parsed whole (any layout but the build's, below): a real
# index is about 2.1 KB per kernel, so 8 MiB is some 4,000 kernels, and
# refusing a larger file before parsing keeps /dev/zero or a runaway file out
# of memory. The build's layout is never read whole: each part is read when it
# is used, within its own cap, whatever the file's size.
MAX_INDEX_BYTES = 8 * 1024 * 1024
# The build's layout, part by part: the top level (the library's name,
# semirings, toolkit: a few KB), the directory (under 64 bytes a kernel: a
# million kernels), one family's catalog, and one kernel's line (about 2 KB).
MAX_TOP_BYTES = 1024 * 1024
MAX_DIRECTORY_BYTES = 64 * 1024 * 1024
MAX_CATALOG_BYTES = 64 * 1024 * 1024
MAX_KERNEL_LINE_BYTES = 1024 * 1024
# An index in the build's layout held in memory whole, as a wheel's member is
# (aotc inspect on a wheel): checked a part at a time, never parsed whole.
MAX_LAID_OUT_BYTES = 256 * 1024 * 1024  # a 100,000-kernel index is some 210 MB
# The deepest real path is kernels.k.launch.grid[i].tile: six levels below the top.
MAX_DEPTH = 16
# The largest fatbin or source the reader will load (a fatbin of one kernel for
# every architecture is a few MB); the index's own "size" must also match.
MAX_FILE_BYTES = 256 * 1024 * 1024


class ArchText:
    """An architecture as the index writes it: ``80``, ``90a``, ``100f``, ``1000``:
    a major of 1 to 3 digits (no leading zero), a minor digit, an optional variant."""

    __slots__ = ()
    pattern = r"([1-9][0-9]{0,2})([0-9])([af]?)"

    def parts(self, text: str) -> tuple[int, int, str] | None:
        """(major, minor, variant) of ``text``, or None if it is no architecture."""
        variant = text[-1:] if text[-1:] in ("a", "f") else ""
        digits = text[: len(text) - len(variant)]
        if not 2 <= len(digits) <= 4 or digits[0] == "0" or digits.strip("0123456789"):
            return None
        return int(digits[:-1]), int(digits[-1]), variant

    def fullmatch(self, text: str) -> bool:
        return self.parts(text) is not None

    def __repr__(self) -> str:
        return f"<text rule {self.pattern}>"


# Architecture text as the index writes it: "80", "90a", "100f"; ARCH_TEXT.parts(text)
# gives its major, minor and variant.
ARCH_TEXT = ArchText()

# struct codes of each parameter kind: pointers travel as 64-bit device addresses.
PACK_CODES = {"ptr": "Q", **{name: d.code for name, d in SCALAR_TYPES.items()}}

CHECKSUM_KEY = "checksum"
# Everything a launch (or the choice of which kernel to launch) reads from a
# kernel entry: a kernel is found by its family and axes, and carries its
# signature for the generated bindings (and its "backward", where it has one,
# sealed too). "resources" is ptxas' report, printed and never acted on.
KERNEL_SEALED = ("symbol", "family", "axes", "signature", "params", "launch", "fatbin", "source", "sass", "ptx")
# The semirings table gives results their zero and one. The toolkit table only
# gates the driver check, and older-style fixtures drop it, so it is not sealed.
TOP_SEALED = ("library", "semirings")

# The layout the build writes and aotc.load reads (aotc.index._layout writes
# it, aotc.index._lines reads it): the top level indented, then where the rest
# lies (LAYOUT_KEY, one line), the families' catalogs a family a line, the
# directory of the kernels on one line, then the kernels table, one kernel a
# line, each opening with the family it is found by.
LAYOUT_KEY = "kernel_index"
FAMILIES_KEY = "kernel_families"
DIRECTORY_KEY = "kernel_lines"
LAYOUT_INDEX = ',\n "kernel_index": '
LAYOUT_FAMILIES = ',"kernel_families": {'
LAYOUT_DIRECTORY = ',\n "kernel_lines": '
LAYOUT_TABLE = ',\n "kernels": {'
LAYOUT_CLOSE = "\n }\n}\n"
# The layout's top-level keys: locators, derived from the kernels, never sealed.
LAYOUT_KEYS = (LAYOUT_KEY, FAMILIES_KEY, DIRECTORY_KEY)


# Up to this size the built-in sha256 is used: the seals' fields (a few hundred
# bytes each). Importing hashlib loads OpenSSL (10 M instructions, about 1 ms),
# which hashes a large file some 15x faster than the built-in.
_BUILTIN_SHA256_BYTES = 1 << 14


def sha256_bytes(data: bytes) -> str:
    """The sha256 of ``data``, as hex digits."""
    if len(data) <= _BUILTIN_SHA256_BYTES and _builtin_sha256 is not None:
        return _builtin_sha256(data).hexdigest()
    import hashlib

    return hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> bytes:
    """One byte string per JSON value: sorted keys, no spaces, ASCII only."""
    if type(value) is str and value.isascii() and value.isidentifier():
        return b'"' + value.encode() + b'"'  # what json.dumps writes for a name, without its call: half the sealed fields are names
    return _cjson.dumps(value, sort_keys=True, allow_nan=False).encode("ascii")


def field_checksums(entry: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, str]:
    """sha256 of the canonical JSON of each of ``fields`` present in ``entry``.

    One digest per field rather than one per entry, so that a mismatch names
    the field that was edited.
    """
    return {name: sha256_bytes(canonical_json(entry[name])) for name in fields if name in entry}


def sealed_fields(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields a kernel entry's checksum table covers, its ``backward`` among them where it has one."""
    return (*KERNEL_SEALED, "backward") if "backward" in entry else KERNEL_SEALED


def size_text(terms: tuple[tuple[int, tuple[str, ...]], ...], div: int) -> str:
    """A shape expression as the index records it (its terms, each a
    coefficient and the names it multiplies, and a divisor rounding up),
    written as the manifest writes it and messages show it: ``rows + 1``."""
    parts = []
    for coef, names in terms:
        term = "*".join(((str(abs(coef)),) if abs(coef) != 1 or not names else ()) + names)
        parts.append(("- " if coef < 0 else "+ ") + term)
    text = " ".join(parts).removeprefix("+ ")
    return f"cdiv({text}, {div})" if div != 1 else text
