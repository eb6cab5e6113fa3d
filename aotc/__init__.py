"""aotc: CUDA kernels compiled ahead of time into Python wheels.

Importing this package is cheap on purpose: it imports nothing beyond its
version string, not even ``typing`` or ``pathlib``. The runtime, NumPy,
Jinja2 and PyYAML load on first use of whatever needs them.
"""

from __future__ import annotations

from aotc._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from aotc.runtime.library import Library

__all__ = ["__version__", "cmake_dir", "libraries_root", "library_dir", "load"]


def load(library: str = "tropical", **options: Any) -> Library:
    """Open a kernel library (an installed name or a folder); reads only its index.json.

    See ``aotc.runtime.library.load`` for the options. The runtime is
    imported here, on first call, not when ``aotc`` is imported.
    """
    from aotc.runtime.library import load as load_library

    return load_library(library, **options)


def cmake_dir() -> Path:
    """The folder holding aotcConfig.cmake, for ``-Daotc_DIR=...``."""
    from aotc._locations import cmake_dir as find

    return find()


def libraries_root() -> Path:
    """The folder that kernel libraries are installed under (``aotc/_lib``)."""
    from aotc._locations import libraries_root as find

    return find()


def library_dir(name: str) -> Path:
    """The installed folder of one kernel library, holding its index.json."""
    from aotc._locations import library_dir as find

    return find(name)
