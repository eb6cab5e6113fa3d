"""The build's fatbin cache: one kernel's whole compile step, consulted before any compiler runs.

A compiler cache (sccache) under nvcc still runs nvcc's preprocessor, its
dryrun and fatbinary for every kernel, so a warm build of the full matrix takes
minutes. aotc knows everything that decides a fatbin's bytes, so it keys the
whole step:

- the source's bytes (a generated ``.cu`` holds the whole kernel);
- the SASS and PTX lists, the compression mode, ``-Werror``, and whether the
  step runs as one nvcc call or per architecture (their ptxas reports differ);
- the compiler's fingerprint (``aotc.build.compiler_fingerprint``): versions and
  digests of every program and library that compiles, the host compiler, and
  nvcc's environment flags, read again here since they reach nvcc from here;
- per architecture, the digest of what the implicit headers preprocess to;
- the aotc version and ``KEY_SCHEMA``.

A source that names anything outside itself (``#include``, ``__has_include``)
or the moment or place of its compile (``__FILE__``, ``__DATE__``, ``__TIME__``,
``__TIMESTAMP__``) is compiled uncached: the key could not see what it depends
on. Entries live in the store the runtime's JIT cache uses (``aotc._cache``):
checksummed, written by temp file and rename, filled once under a per-key lock
when parallel jobs or builds race, refused in an unsafe directory, capped.

``AOTC_BUILD_CACHE_DIR`` names the directory (default ``<user cache>/aotc/build``,
shared by every clone and pip build environment), ``AOTC_BUILD_CACHE_MAX_BYTES``
its cap, and ``AOTC_BUILD_CACHE=0`` turns it off. A read-only directory serves
hits and stores nothing.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from aotc._cache import DEFAULT_MAX_BYTES, CacheKey, DiskCache, user_cache_dir
from aotc.errors import BuildError, echo

__all__ = [
    "ENV_DIR",
    "ENV_MAX_BYTES",
    "ENV_SWITCH",
    "KEY_SCHEMA",
    "UNCACHEABLE_TOKENS",
    "build_cache",
    "build_cache_dir",
    "digest_text",
    "fatbin_key",
    "pack",
    "uncacheable_reason",
    "unpack",
]

ENV_DIR = "AOTC_BUILD_CACHE_DIR"
ENV_MAX_BYTES = "AOTC_BUILD_CACHE_MAX_BYTES"
ENV_SWITCH = "AOTC_BUILD_CACHE"
# Bump when what goes into a key, or a payload's layout, changes meaning.
KEY_SCHEMA = 1
UNCACHEABLE_TOKENS = (b"#include", b"__has_include", b"__FILE__", b"__DATE__", b"__TIME__", b"__TIMESTAMP__")
_PAYLOAD_MAGIC = b"AOTCFAT\x00"
_PAYLOAD_HEADER = struct.Struct("<8sQ")  # magic, fatbin length; the ptxas report follows the fatbin


def uncacheable_reason(source: bytes) -> str | None:
    """Why ``source`` must be compiled uncached, or None. Text in a comment counts too: never guess."""
    for token in UNCACHEABLE_TOKENS:
        if token in source:
            return f"it uses {token.decode()}"
    return None


def build_cache_dir() -> Path:
    """``AOTC_BUILD_CACHE_DIR``, or else the platform's user cache directory plus ``aotc/build``."""
    configured = os.environ.get(ENV_DIR, "")
    if configured:
        return Path(os.path.abspath(os.path.expanduser(configured)))
    return user_cache_dir(ENV_DIR) / "build"


def build_cache() -> DiskCache | None:
    """The cache the environment configures, or None where ``AOTC_BUILD_CACHE=0`` turns it off."""
    if os.environ.get(ENV_SWITCH, "").strip().lower() in ("0", "off", "no", "false"):
        return None
    raw = os.environ.get(ENV_MAX_BYTES, "").strip()
    try:
        max_bytes = int(raw, 10) if raw else DEFAULT_MAX_BYTES
    except ValueError:
        max_bytes = -1
    if max_bytes < 0:
        msg = f"{ENV_MAX_BYTES}={echo(raw)} is not a whole number of bytes (for example {DEFAULT_MAX_BYTES})"
        raise BuildError(msg)
    return DiskCache(build_cache_dir(), max_bytes=max_bytes, setting=ENV_DIR)


def fatbin_key(source: bytes, *, fingerprint: str, options: list[str]) -> CacheKey:
    """The key of one compile step: ``options`` are the step's own (architectures, flags, header digests)."""
    return CacheKey.for_source(
        source, options=("aotc-fatbin", *options), target="fatbin", compiler=fingerprint, key_schema=KEY_SCHEMA
    )


def pack(fatbin: bytes, report: bytes) -> bytes:
    """One payload: the fatbin and ptxas' report, which the index records."""
    return _PAYLOAD_HEADER.pack(_PAYLOAD_MAGIC, len(fatbin)) + fatbin + report


def unpack(payload: bytes) -> tuple[bytes, bytes] | None:
    """(fatbin, report) from a payload, or None if it is not one (the store has checked its sha256)."""
    if len(payload) < _PAYLOAD_HEADER.size:
        return None
    magic, length = _PAYLOAD_HEADER.unpack_from(payload)
    body = payload[_PAYLOAD_HEADER.size :]
    if magic != _PAYLOAD_MAGIC or length > len(body):
        return None
    return body[:length], body[length:]


def digest_text(text: str) -> str:
    """sha256 hex of ``text``: names a folder of remembered header digests."""
    return hashlib.sha256(text.encode()).hexdigest()
