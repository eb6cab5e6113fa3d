"""Python aotc writes, compiled where a reader can see it.

The binder's entries, their guards, the plans and the key functions are
Python source written from a layout's declaration and a call's decision
(``aotc.kernels._entry``, ``_replay``, ``_keys``), and the eager checks of
PyTorch calls one expression (``aotc.arrays.torch_direct``). As attrs does for the methods it
generates, each source is registered with ``linecache`` under a file name of
its own before it is compiled, so a traceback, ``pdb``, ``inspect.getsource``
and profilers show the generated lines, not ``<string>``. Names are unique
per process (a counter), so two sources never share a file name.

Every source holds only our own text and identifiers from a validated index
(no Python keyword, none starting ``_aotc``): nothing a caller passes is
ever part of it. A shared module (no side of aotc's imported here).
"""

from __future__ import annotations

import linecache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["compiled"]

_serials = iter(range(1, 1 << 62))


def compiled(source: str, function: str, what: str, namespace: dict[str, Any]) -> Any:
    """Compile ``source`` into ``namespace`` as ``<aotc what #n>`` (kept in
    ``linecache``) and return its ``function``."""
    filename = f"<aotc {what} #{next(_serials)}>"
    lines = source.splitlines(keepends=True)
    # (size, mtime None: never checked against a file, so checkcache keeps it, lines, name)
    linecache.cache[filename] = (len(source), None, lines, filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[function]
