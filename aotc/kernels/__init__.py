"""Generated bindings for declared kernel families: no host code per kernel.

A family whose manifest entry declares its ``signature:`` and ``launch:``
(README.md, "Any kernel") is callable from Python with nothing written by
hand::

    import aotc.kernels
    rowops = aotc.kernels.load("path/to/rowops/_kernels")   # or over(aotc.load(...))
    y = rowops.softmax(x)                                   # NumPy, PyTorch, CuPy, DLPack
    torch.ops.rowops.softmax(t)                             # the custom op, for torch.compile

Each family is a ``Family`` (``_family``): it picks the kernel from the
arrays' dtypes and the axes given, checks shapes against the declaration,
allocates the out arrays and launches on the operands' device and stream.
PyTorch tensors go through the family's custom op (``_torch_ops``), so that
autograd, ``torch.compile`` and ``opcheck`` see an operator.

Importing this package imports neither NumPy nor PyTorch.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._family import Family

__all__ = ["Kernels", "load", "over"]


class Kernels:
    """The declared families of one library, as attributes: ``over(lib).softmax``."""

    def __init__(self, library: Any) -> None:
        self.library = library
        # Grouped by what the index's directory says: a family's kernels are each
        # checked when the family is first used, so a library of many kernels
        # loads at one cost (aotc.index._lines).
        by_family: dict[str, list[str]] = {}
        for name, family in library.index.kernels.families().items():
            by_family.setdefault(family, []).append(name)
        self._kernels = by_family
        self._families: dict[str, Family] = {}

    @property
    def names(self) -> tuple[str, ...]:
        """The library's declared families."""
        return tuple(self._kernels)

    def family(self, name: str) -> Family:
        """The binding of family ``name``."""
        found = self._families.get(name)
        if found is None:
            kernels = self._kernels.get(name)
            if kernels is None:
                known = ", ".join(self._kernels) or "none"
                msg = f"{self.library.name} has no declared family {name!r} (families: {known})"
                raise AttributeError(msg)
            from aotc.kernels._family import Family

            # Each checked now; the index holds its line to the family its directory gave.
            checked = [self.library.index.kernel(kernel) for kernel in kernels]
            found = self._families[name] = Family(self.library, name, checked)
        return found

    def __getattr__(self, name: str) -> Any:
        """The family's callable: its generated entry (``_entry``), else the ``Family``."""
        if name.startswith("_"):
            raise AttributeError(name)
        family = self.family(name)
        return family.entry or family

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self._kernels]

    def __repr__(self) -> str:
        return f"<aotc.kernels over {self.library.name!r}: {', '.join(self._kernels) or 'no declared families'}>"

    def torch_ops(self) -> Any:
        """Register this library's families as ``torch.ops.<library>.<family>`` (once) and return that namespace."""
        from aotc.kernels._torch_ops import register

        return register(self)


def over(library: Any) -> Kernels:
    """The declared families of ``library`` (an ``aotc.Library``), kept with it."""
    found = library.extensions.get(__name__)
    if found is None:
        found = library.extensions[__name__] = Kernels(library)
    return found


def load(library: Any, **options: Any) -> Kernels:
    """``over(aotc.load(library, **options))``."""
    from aotc.runtime.library import load as load_library

    return over(load_library(library, **options))
