"""The cache the environment configures: ``AOTC_CACHE_DIR`` and ``AOTC_CACHE_MAX_BYTES``."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from aotc._cache import DEFAULT_MAX_BYTES, DiskCache, user_cache_dir
from aotc._folders import cache_folder
from aotc.errors import CacheError, echo

__all__ = ["ANSWERS_FOLDER", "DefaultCaches", "answers_cache", "default_cache", "default_cache_dir", "defaults"]

# NVRTC's answers (version, targets) get a folder of their own inside the
# default cache's, so that the default cache's entries stay the compiled
# kernels (doctor counts them). An answer is a few hundred bytes; one per
# libnvrtc file a machine has had.
ANSWERS_FOLDER = "nvrtc-answers"
_ANSWERS_MAX_BYTES = 1 << 20


def default_cache_dir() -> Path:
    """``AOTC_CACHE_DIR``, or else the platform's user cache directory plus ``aotc``."""
    folder = cache_folder()
    return Path(folder) if folder else user_cache_dir("AOTC_CACHE_DIR")


def _max_bytes_from_env() -> int:
    raw = os.environ.get("AOTC_CACHE_MAX_BYTES", "")
    if not raw.strip():
        return DEFAULT_MAX_BYTES
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        value = -1
    if value < 0:
        msg = f"AOTC_CACHE_MAX_BYTES={echo(raw)} is not a whole number of bytes (for example {DEFAULT_MAX_BYTES})"
        raise CacheError(msg)
    return value


class DefaultCaches:
    """One ``DiskCache`` per configuration the environment has named, kept, so
    that a refused directory warns once and per-key fill locks are shared."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caches: dict[tuple[Path, int], DiskCache] = {}

    def get(self) -> DiskCache:
        config = (default_cache_dir(), _max_bytes_from_env())
        with self._lock:
            cache = self._caches.get(config)
            if cache is None:
                cache = self._caches[config] = DiskCache(config[0], max_bytes=config[1])
            return cache


defaults = DefaultCaches()


def default_cache() -> DiskCache:
    """The cache the environment configures (``defaults``, the process's ``DefaultCaches``)."""
    return defaults.get()


def answers_cache() -> DiskCache:
    """The cache of NVRTC's answers (``aotc.runtime.jit``), beside the default cache's entries."""
    return DiskCache(default_cache_dir() / ANSWERS_FOLDER, max_bytes=_ANSWERS_MAX_BYTES)
