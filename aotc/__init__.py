"""aotc: CUDA kernels compiled ahead of time into Python wheels.

Importing this package is cheap on purpose: it imports no backend, NumPy,
Jinja2 or PyYAML. Those load on first use of whatever needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aotc._locations import cmake_dir, library_dir, libraries_root
from aotc._version import __version__

if TYPE_CHECKING:
    from aotc.runtime.library import Library

__all__ = ["__version__", "cmake_dir", "libraries_root", "library_dir", "load"]


def load(library: str = "tropical", **options: Any) -> Library:
    """Open a kernel library (an installed name or a folder); reads only its index.json.

    See ``aotc.runtime.library.load`` for the options. The runtime is
    imported here, on first call, not when ``aotc`` is imported.
    """
    from aotc.runtime.library import load as load_library

    return load_library(library, **options)
