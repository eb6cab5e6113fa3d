"""The library index, ``index.json``: its schema and its one reader.

``LibraryIndex`` is the only reader, validator and verifier of an index; the
build writes one with ``aotc.build.index_writer``. Both take the schema
constants and the checksum rule from ``aotc.index.schema``. Standard library
only.

The reader's modules are imported on first use of their names: the build's
index step imports ``aotc.index.schema``, which runs this file, and CMake
reruns that step when any file it imports changes, so editing the reader
must not count as one.
"""

from __future__ import annotations

import sys

from aotc.index.schema import INDEX_NAME, MAX_INDEX_BYTES, SCHEMA, SOURCE_DIR, sha256_bytes

TYPE_CHECKING = False  # no typing at run time: a kernel's first use must not pay for it
if TYPE_CHECKING:
    from typing import Any

    from aotc.index._validate import toolkit_entry as parse_toolkit
    from aotc.index.library_index import LibraryIndex
    from aotc.index.views import FileEntry, IndexKernel, Launch, Param, ToolkitEntry

__all__ = [
    "INDEX_NAME",
    "MAX_INDEX_BYTES",
    "SCHEMA",
    "SOURCE_DIR",
    "FileEntry",
    "IndexKernel",
    "Launch",
    "LibraryIndex",
    "Param",
    "ToolkitEntry",
    "parse_toolkit",
    "sha256_bytes",
]

# name -> (module, attribute)
_LAZY = {
    "LibraryIndex": ("aotc.index.library_index", "LibraryIndex"),
    "parse_toolkit": ("aotc.index._validate", "toolkit_entry"),
    **{name: ("aotc.index.views", name) for name in ("FileEntry", "IndexKernel", "Launch", "Param", "ToolkitEntry")},
}


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        msg = f"module 'aotc.index' has no attribute {name!r}"
        raise AttributeError(msg) from None
    __import__(module)  # importlib.import_module's work, without importing importlib (and warnings)
    value = getattr(sys.modules[module], attribute)
    globals()[name] = value  # once: later lookups find it without this function
    return value
