"""The disk cache store that the runtime and the build share.

The runtime keeps JIT products in it (``aotc.runtime.cache``), the build whole
fatbins (``aotc.build.fatbin_cache``). It sits below both, so each uses it
without importing the other. ``_key`` is what an entry is for, ``_entry`` the
file format and how one is read back, ``_store`` the directory (atomic writes,
per-key fill locks, LRU eviction). Anything wrong with an entry is a miss,
never an exception. Standard library only.
"""

from __future__ import annotations

from pathlib import Path

from aotc._cache._entry import ENTRY_SCHEMA
from aotc._cache._key import KEY_SCHEMA, CacheKey
from aotc._folders import user_cache_folder
from aotc._cache._store import (
    DEFAULT_MAX_BYTES,
    STATE_OK,
    STATE_READ_ONLY,
    STATE_REFUSED,
    CacheInfo,
    CacheStats,
    DiskCache,
)
from aotc.errors import CacheError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ENTRY_SCHEMA",
    "KEY_SCHEMA",
    "STATE_OK",
    "STATE_READ_ONLY",
    "STATE_REFUSED",
    "CacheInfo",
    "CacheKey",
    "CacheStats",
    "DiskCache",
    "user_cache_dir",
]


def user_cache_dir(setting: str) -> Path:
    """The platform's user cache directory plus ``aotc``; ``setting`` is named if there is none."""
    folder = user_cache_folder()
    if not folder:
        msg = f"cannot find a user cache directory (no home folder): set {setting}"
        raise CacheError(msg)
    return Path(folder)
