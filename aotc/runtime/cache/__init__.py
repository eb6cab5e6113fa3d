"""The disk cache for JIT products: NVRTC cubins and emulator shared libraries.

The contract is DESIGN.md's "The disk cache". ``_key`` is what an entry is
for, ``_entry`` the file format and how one is read back, ``_store`` the
directory (atomic writes, per-key fill locks, LRU eviction), ``_defaults``
the cache the environment configures. Anything wrong with an entry is a
miss, never an exception. Standard library only.
"""

from __future__ import annotations

from aotc.errors import CacheWarning
from aotc.runtime.cache._defaults import ANSWERS_FOLDER, answers_cache, default_cache, default_cache_dir
from aotc.runtime.cache._entry import ENTRY_SCHEMA
from aotc.runtime.cache._key import KEY_SCHEMA, CacheKey
from aotc.runtime.cache._store import DEFAULT_MAX_BYTES, CacheInfo, CacheStats, DiskCache

__all__ = [
    "ANSWERS_FOLDER",
    "DEFAULT_MAX_BYTES",
    "ENTRY_SCHEMA",
    "KEY_SCHEMA",
    "CacheInfo",
    "CacheKey",
    "CacheStats",
    "CacheWarning",
    "DiskCache",
    "answers_cache",
    "default_cache",
    "default_cache_dir",
]
