"""One cache entry file: its header, and reading it back as a hit or a miss.

An entry is ``<digest>.entry``: a header (magic, schema, the key's digest, the
payload's length and sha256) followed by the payload. The header carries the
key because the file name alone is no proof: an entry copied over another
key's file must not load as that kernel. Anything wrong is a miss, never an
exception, and a bad regular file is removed so the next fill rewrites it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from contextlib import suppress
from pathlib import Path

from aotc.errors import UnreadableFileError
from aotc._cache._key import CacheKey
from aotc._untrusted_files import open_regular, read_capped

__all__ = ["ENTRY_SCHEMA", "HEADER", "MAGIC", "entry_header", "parse_entry", "read_entry"]

# Bump when the file layout changes: old entries become misses.
# 2: the header carries the key's digest.
ENTRY_SCHEMA = 2
MAGIC = b"AOTCJIT\x00"
HEADER = struct.Struct("<8sI32sQ32s")  # magic, schema, key digest, payload length, payload sha256


def entry_header(key: CacheKey, payload: bytes) -> bytes:
    return HEADER.pack(MAGIC, ENTRY_SCHEMA, bytes.fromhex(key.digest), len(payload), hashlib.sha256(payload).digest())


def parse_entry(data: bytes, key: CacheKey) -> bytes | None:
    """The payload of a whole entry file's bytes if it is ``key``'s and intact, else None."""
    if len(data) < HEADER.size:
        return None
    magic, schema, digest, length, checksum = HEADER.unpack_from(data)
    if magic != MAGIC or schema != ENTRY_SCHEMA or digest != bytes.fromhex(key.digest):
        return None
    payload = data[HEADER.size :]
    if len(payload) != length or hashlib.sha256(payload).digest() != checksum:
        return None
    return payload


def read_entry(path: Path, key: CacheKey, max_bytes: int) -> bytes | None:
    """``key``'s payload from ``path``, or None: absent, not a regular file, over
    ``max_bytes``, damaged, or another key's. A hit refreshes the mtime (LRU)."""
    try:
        with open_regular(path, max_bytes) as (fd, st):
            payload = parse_entry(read_capped(fd, path, st.st_size), key)
            if payload is None:
                _discard(path, st)
                return None
            with suppress(OSError):  # a hit is a use, for LRU; read-only media may refuse
                if os.utime in os.supports_fd:
                    os.utime(fd)
                else:
                    os.utime(path)
            return payload
    except UnreadableFileError:
        return None


def _discard(path: Path, st: os.stat_result) -> None:
    """Remove a bad entry, unless a writer has already replaced it with a new file."""
    with suppress(OSError):
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) and stat.S_ISREG(now.st_mode):
            os.unlink(path)
