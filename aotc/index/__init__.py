"""The library index, ``index.json``: its schema and its one reader.

``LibraryIndex`` is the only reader, validator and verifier of an index; the
build writes one with ``aotc.build.index_writer``. Both take the schema
constants and the checksum rule from ``aotc.index.schema``. Standard library
only: the runtime imports this at ``aotc.load()``.
"""

from __future__ import annotations

from aotc.index._validate import toolkit_entry as parse_toolkit
from aotc.index.library_index import LibraryIndex
from aotc.index.schema import INDEX_NAME, MAX_INDEX_BYTES, SCHEMA, SOURCE_DIR, sha256_bytes
from aotc.index.views import FileEntry, IndexKernel, KernelKey, Launch, Param, ToolkitEntry

__all__ = [
    "INDEX_NAME",
    "MAX_INDEX_BYTES",
    "SCHEMA",
    "SOURCE_DIR",
    "FileEntry",
    "IndexKernel",
    "KernelKey",
    "Launch",
    "LibraryIndex",
    "Param",
    "ToolkitEntry",
    "parse_toolkit",
    "sha256_bytes",
]
