"""The cache folder: ``AOTC_CACHE_DIR``, else the platform's user cache folder plus ``aotc``.

Standard library only, and no ``pathlib``: the kept entry points
(``aotc._entry_points``) and the record of kernel files verified
(``aotc.index._verified``) are read on the way to a library's first launch.
They and the disk cache (``aotc._cache``, ``aotc.runtime.cache``) find the
folder here.
"""

from __future__ import annotations

import os
import sys

__all__ = ["SETTLED_NS", "cache_folder", "user_cache_folder"]

# What aotc keeps in the cache folder to spare a later process work (the
# kept entry points, the verified files) is keyed by file stamps (mtime,
# ctime). Stamps tick coarsely (a few ms on Linux), so a change in the same
# tick as the last could leave them alone: nothing is kept for a file or
# folder changed less than this long ago.
SETTLED_NS = 2_000_000_000


def user_cache_folder() -> str:
    """The platform's user cache folder plus ``aotc``; "" where there is none (no home)."""
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches")
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        # The XDG spec says a relative value is invalid and must be ignored.
        base = xdg if os.path.isabs(xdg) else os.path.join(home, ".cache")
    return os.path.join(base, "aotc") if os.path.isabs(base) else ""


def cache_folder() -> str:
    """``AOTC_CACHE_DIR`` (absolute), else ``user_cache_folder()``."""
    configured = os.environ.get("AOTC_CACHE_DIR", "")
    return os.path.abspath(os.path.expanduser(configured)) if configured else user_cache_folder()


def clear_kept_files(subfolder: str, suffix: str = "") -> int:
    """Remove the files (those ending in ``suffix``) that aotc keeps in
    ``subfolder`` of its cache folder (``aotc cache clear``); returns how many.
    A folder others could have written in is left alone, as it is never read."""
    from aotc._untrusted_files import foreign_directory  # only when clearing: start-ups never do

    root = cache_folder()
    folder = os.path.join(root, subfolder) if root else ""
    removed = 0
    if folder and not foreign_directory(folder):
        for name in os.listdir(folder):
            if name.endswith(suffix):
                try:
                    os.unlink(os.path.join(folder, name))
                    removed += 1
                except OSError:
                    pass
    return removed
