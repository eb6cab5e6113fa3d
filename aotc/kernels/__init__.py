"""Generated bindings for declared kernel families: no host code per kernel.

A family whose manifest entry declares its ``signature:`` and ``launch:``
(README.md, "Any kernel") is callable from Python with nothing written by
hand::

    import aotc.kernels
    rowops = aotc.kernels.load("path/to/rowops/_kernels")   # or over(aotc.load(...))
    y = rowops.softmax(x)                                   # NumPy, PyTorch, CuPy, DLPack, JAX
    torch.ops.rowops.softmax(t)                             # the custom op, for torch.compile

A family's kernels that a call binds alike form a layout (``_binding``): its
generated entry (``_entry``) chooses the kernel from the arrays' dtypes and
ranks and the axes given, checks shapes against the declaration, allocates
the out arrays and launches (``_launch``) on the arrays' device and stream.
PyTorch tensors go through the layout's custom op (``_torch_ops``), JAX
arrays through XLA (``_jax``); gradients come from the ``backward:``
declaration (``_gradients``). ``aotc.tropical`` is such a library.

Importing this package imports neither NumPy nor PyTorch.
"""

from __future__ import annotations

from aotc.kernels._traced import constant_when_traced, keep, made

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.index import IndexKernel
    from aotc.kernels._family import Family
    from aotc.kernels._binding import Layout

__all__ = ["Kernels", "load", "over"]


class Kernels:
    """The declared families of one library, as attributes: ``over(lib).softmax``
    (a family of one layout: its entry), ``over(lib).gemm`` (a family of
    several: the ``Family``, which picks one by the axes named) and
    ``over(lib).gemm_forward`` (one layout's entry)."""

    def __init__(self, library: Any) -> None:
        self.library = library
        # The index's families: each bound from its catalog at its first use, and each
        # kernel checked when a call first chooses it, so a library of many kernels
        # loads, and a family of many is first called, at one cost (aotc.index.families).
        self._family_names = dict.fromkeys(library.index.family_names())  # the families, in index order
        self._families: dict[str, Family] = {}
        self._layouts: dict[str, Layout] = {}  # every layout made so far, by op name
        self._layout_of: dict[str, Layout] = {}  # kernel name -> its layout, of the kernels reached so far
        self._making = _lock()  # taken by _make_family
        self.serial = next(_serials)  # names it in _traced.MADE's keys, where an id could be reused

    @property
    def names(self) -> tuple[str, ...]:
        """The library's declared families."""
        return tuple(self._family_names)

    def family(self, name: str) -> Family:
        """The binding of family ``name``."""
        found = self._families.get(name)
        if found is None:
            if name not in self._family_names:
                known = ", ".join(self._family_names) or "none"
                msg = f"{self.library.name} has no declared family {name!r} (families: {known})"
                raise AttributeError(msg)
            found = made(_make_family(self, name))
        return found

    def layout(self, name: str) -> Layout:
        """The layout whose op is ``name`` (``gemm_forward``; a family of one layout: the family's name)."""
        found = self._layouts.get(name)
        if found is None:
            family = next((f for f in self._family_names if name == f or name.startswith(f"{f}_")), None)
            if family is not None:
                self.family(family)
                found = self._layouts.get(name)
            if found is None:
                known = ", ".join(self._layouts) or "none made yet"
                msg = f"{self.library.name} has no kernel binding {name!r} (families: {', '.join(self._family_names) or 'none'}; bindings: {known})"
                raise AttributeError(msg)
        return found

    def kernel(self, name: str) -> IndexKernel:
        """The index's (checked) entry of kernel ``name``."""
        return self.library.index.kernel(name)

    def layout_of(self, kernel: str) -> Layout:
        """The layout that binds kernel ``kernel``."""
        found = self._layout_of.get(kernel)
        if found is None:
            family = self.family(self.library.index.kernel(kernel).family)
            found = self._layout_of[kernel] = family.layout_of(kernel)
        return found

    def __getattr__(self, name: str) -> Any:
        """A family's callable: its one layout's entry, or the ``Family``; or a
        layout's entry by its op name. Made on first use and kept as an
        attribute, so later reads do not come here."""
        if name.startswith("_"):
            raise AttributeError(name)
        return made(_prepare(self, name))

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self._family_names, *self._layouts]

    def __repr__(self) -> str:
        return f"<aotc.kernels over {self.library.name!r}: {', '.join(self._family_names) or 'no declared families'}>"

    def torch_ops(self) -> Any:
        """Register this library's layouts as ``torch.ops.<library>.<op>`` (once) and return that namespace."""
        import torch

        return getattr(torch.ops, _register_ops(self))


_serials = iter(range(1, 1 << 62))


def _lock() -> Any:
    """A new reentrant lock; threading is imported with the first library's
    bindings, not with ``import aotc.tropical`` (tests/test_import_time.py)."""
    import threading

    return threading.RLock()


@constant_when_traced  # registered eagerly under torch.compile too (_traced), where a lock is not traced
def _register_ops(kernels: Kernels) -> str:
    """Register the ops of ``kernels``' library (once, under the lock that
    ``_torch_ops.register`` takes); returns their namespace, ``torch.ops.<library>``'s name."""
    from aotc.kernels._torch_ops import register

    register(kernels)
    return kernels.library.name


@constant_when_traced  # made eagerly under torch.compile too (_traced), where a lock is not traced
def _make_family(kernels: Kernels, name: str) -> str:
    """Make family ``name``'s binding, once: threads whose first calls meet
    here take turns, so every thread holds the same layouts, whose plans and
    ops the first registers. Returns its key in ``_traced.MADE``."""
    from aotc.kernels._family import Family
    from aotc.kernels._keys import made_key

    with kernels._making:  # noqa: SLF001 - the Kernels' own lock
        found = kernels._families.get(name)  # noqa: SLF001 - and its own table
        if found is None:  # not made by another thread meanwhile
            # Its catalog, checked whole; each kernel is checked when a call first chooses it.
            found = Family(kernels, name, kernels.library.index.family(name))
            kernels._layouts.update(found.layouts)  # noqa: SLF001
            kernels._families[name] = found  # noqa: SLF001 - last: read without the lock once here
    return keep(made_key("family", kernels.serial, name), found)


@constant_when_traced  # a first use under torch.compile makes the binding eagerly (_traced)
def _prepare(kernels: Kernels, name: str) -> str:
    """Make ``kernels.<name>`` (a family's one layout's entry, or the ``Family``;
    or a layout's entry by its op name), keep it as an attribute and in
    ``_traced.MADE``; returns its key there."""
    from aotc.kernels._keys import made_key

    if name in kernels._family_names:  # noqa: SLF001 - the Kernels' own table
        family = kernels.family(name)
        only = family.only
        found = family if only is None else only.entry or only
    else:
        layout = kernels.layout(name)
        found = layout.entry or layout
    kernels.__dict__[name] = found
    return keep(made_key("bindings", kernels.serial, name), found)


def over(library: Any) -> Kernels:
    """The declared families of ``library`` (an ``aotc.Library``), kept with it."""
    found = library.extensions.get(__name__)
    if found is None:
        found = library.extensions.setdefault(__name__, Kernels(library))  # one, even under a race
    return found


def load(library: Any, **options: Any) -> Kernels:
    """``over(aotc.load(library, **options))``."""
    from aotc.runtime.library import load as load_library

    return over(load_library(library, **options))
