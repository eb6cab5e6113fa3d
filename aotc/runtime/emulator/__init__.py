"""The CPU emulator backend: a kernel's ``.cu`` compiled as host C++ with OpenMP.

``compile`` turns a source into a shared library, ``launch`` loads and runs it.
The supported subset of CUDA is listed in README.md in this folder.
"""

from __future__ import annotations

__all__: list[str] = []
