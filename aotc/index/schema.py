"""The index's schema constants and its checksums: the one place the writer and the reader agree.

The build (``aotc.build.index_writer``) writes ``index.json``; the runtime,
``aotc inspect``, ``aotc warm`` and ``aotc doctor`` read it through
``aotc.index.LibraryIndex``. Both import what follows, so a field the build
seals is a field the reader checks.
"""

from __future__ import annotations

import hashlib
import json
import re

from aotc.dtypes import SCALAR_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "ARCH_TEXT",
    "CHECKSUM_KEY",
    "DIRECTORY_KEY",
    "INDEX_NAME",
    "KERNEL_SEALED",
    "LAYOUT_CLOSE",
    "LAYOUT_DIRECTORY",
    "LAYOUT_TABLE",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INDEX_BYTES",
    "PACK_CODES",
    "SCHEMA",
    "SOURCE_DIR",
    "TOP_SEALED",
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

# A real index is about 2.3 KB per kernel; 8 MiB is some 3,500 kernels, and
# refusing a larger file before parsing keeps /dev/zero or a runaway file out of memory.
MAX_INDEX_BYTES = 8 * 1024 * 1024
# The deepest real path is kernels.k.launch.grid[i].tile: six levels below the top.
MAX_DEPTH = 16
# The largest fatbin or source the reader will load (a fatbin of one kernel for
# every architecture is a few MB); the index's own "size" must also match.
MAX_FILE_BYTES = 256 * 1024 * 1024

# Architecture text as the index writes it: "80", "90a", "100f".
ARCH_TEXT = re.compile(r"([1-9][0-9]{0,2})([0-9])([af]?)")
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

# The layout the build writes (aotc.build.index_writer) and aotc.load reads
# (aotc.index._lines): the top level indented, then a directory of the kernels
# on one line, then the kernels table, one kernel a line, each opening with
# the family it is found by.
DIRECTORY_KEY = "kernel_lines"
LAYOUT_DIRECTORY = ',\n "kernel_lines": '
LAYOUT_TABLE = ',\n "kernels": {'
LAYOUT_CLOSE = "\n }\n}\n"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> bytes:
    """One byte string per JSON value: sorted keys, no spaces, ASCII only."""
    if type(value) is str and value.isascii() and value.isidentifier():
        return b'"' + value.encode() + b'"'  # what json.dumps writes for a name, without its call: half the sealed fields are names
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


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
