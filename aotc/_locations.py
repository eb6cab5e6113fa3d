"""Where aotc's installed pieces live: the CMake package and the kernel libraries."""

from __future__ import annotations

from pathlib import Path

__all__ = ["cmake_dir", "libraries_root", "library_dir"]

_PACKAGE_DIR = Path(__file__).resolve().parent


def cmake_dir() -> Path:
    """The folder holding aotcConfig.cmake, for ``-Daotc_DIR=...``."""
    return _PACKAGE_DIR / "build" / "cmake"


def libraries_root() -> Path:
    """The folder that kernel libraries are installed under (``aotc/_lib``)."""
    return _PACKAGE_DIR / "_lib"


def library_dir(name: str) -> Path:
    """The installed folder of one kernel library, holding its index.json."""
    return libraries_root() / name
