"""Where aotc's installed pieces live: the CMake package and the kernel libraries.

Paths are built with ``os.path``: loading a library must not import
``pathlib`` (with ``fnmatch``, ``urllib.parse`` and ``ipaddress``, some 4 ms);
the public functions return ``Path`` objects and import it when called.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["cmake_dir", "libraries_root", "library_dir", "library_folder"]

_PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))


def cmake_dir() -> Path:
    """The folder holding aotcConfig.cmake, for ``-Daotc_DIR=...``."""
    from pathlib import Path

    return Path(_PACKAGE_DIR, "build", "cmake")


def libraries_root() -> Path:
    """The folder that kernel libraries are installed under (``aotc/_lib``)."""
    from pathlib import Path

    return Path(_PACKAGE_DIR, "_lib")


def library_dir(name: str) -> Path:
    """The installed folder of one kernel library, holding its index.json."""
    from pathlib import Path

    return Path(library_folder(name))


def library_folder(name: str) -> str:
    """``library_dir(name)`` as a string, for the loader."""
    return os.path.join(_PACKAGE_DIR, "_lib", name)
