"""aotc: CUDA kernels compiled ahead of time into Python wheels.

Importing this package is cheap on purpose: it imports no backend, NumPy,
Jinja2 or PyYAML. Those load on first use of whatever needs them.
"""

from __future__ import annotations

from aotc._locations import cmake_dir, library_dir, libraries_root
from aotc._version import __version__

__all__ = ["__version__", "cmake_dir", "libraries_root", "library_dir"]
