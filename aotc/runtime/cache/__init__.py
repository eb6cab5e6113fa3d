"""The disk cache for JIT products: NVRTC cubins and emulator shared libraries.

The contract is DESIGN.md's "The disk cache". The store itself (keys, entry
files, the directory) is ``aotc._cache``, shared with the build's fatbin
cache; ``_defaults`` is the cache the environment configures. Anything wrong
with an entry is a miss, never an exception. Standard library only.
"""

from __future__ import annotations

from aotc._cache import DEFAULT_MAX_BYTES, ENTRY_SCHEMA, KEY_SCHEMA, CacheInfo, CacheKey, CacheStats, DiskCache
from aotc.errors import CacheWarning
from aotc.runtime.cache._defaults import ANSWERS_FOLDER, answers_cache, default_cache, default_cache_dir

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
