"""Typed, immutable views of a validated index: what the rest of aotc reads instead of JSON.

Every value here was checked by ``aotc.index._validate`` before it was built,
so users of these views never re-check types or catch ``KeyError``.
"""

from __future__ import annotations

from aotc._record import Record
from aotc.index.schema import size_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, ClassVar

__all__ = ["Backward", "DeclaredParam", "FileEntry", "IndexKernel", "Launch", "Param", "SizeExpression", "ToolkitEntry"]


class FileEntry(Record):
    """One file of a kernel, as the index records it: ``file`` a plain name, or
    "src/<plain name>" for sources; ``sha256`` 64 lowercase hex digits; ``size``."""

    _fields = ("file", "sha256", "size")
    __slots__ = _fields
    file: str
    sha256: str
    size: int


class Param(Record):
    """One kernel parameter: name, C type, kind ("ptr", "i32", "i64") and struct code."""

    _fields = ("name", "ctype", "kind", "pack")
    __slots__ = _fields
    name: str
    ctype: str
    kind: str
    pack: str


class Launch(Record):
    """Launch geometry: the grid is ceil(extent / tile) per axis; an extent is a
    size parameter's name or a decimal number."""

    _fields = ("block", "grid", "shared_bytes_static", "shared_bytes_dynamic")
    __slots__ = _fields
    block: tuple[int, int, int]
    grid: tuple[tuple[str, int], tuple[str, int], tuple[str, int]]
    shared_bytes_static: int
    shared_bytes_dynamic: int


class SizeExpression(Record):
    """An array extent written as an expression of the signature's integer
    scalars (``indptr``'s ``rows + 1``): the sum of ``terms`` (a coefficient
    and the names it multiplies), divided by ``div`` rounding up. A call
    checks an in array's extent against it and sizes an out array by it."""

    _fields = ("terms", "div")
    __slots__ = _fields
    terms: tuple[tuple[int, tuple[str, ...]], ...]
    div: int

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for _, names in self.terms for n in names))

    def value(self, sizes: Mapping[str, Any]) -> Any:
        """Its value for ``sizes`` by name (ints, or a tracer's symbolic sizes)."""
        total: Any = 0
        for coef, names in self.terms:
            term: Any = coef
            for name in names:
                term = term * sizes[name]
            total = total + term
        return total if self.div == 1 else -(-total // self.div)

    def __str__(self) -> str:
        return size_text(self.terms, self.div)


class DeclaredParam(Record):
    """One parameter of a declared signature: an array (``role`` "in", "out" or
    "inout", ``dtype``, ``shape`` of dimension names and fixed extents, the
    first ``optional`` of which a call may leave out, and its ``strides`` where
    declared) or a scalar (``scalar`` its type, ``dim`` whether the binder
    sets it: a dimension an in or inout array's shape names bare, a stride, or
    a ``split`` offset).

    ``arg`` is the name the bindings give it (keywords, messages, op schemas):
    the manifest's ``arg:``, else ``name``, which the kernel's C code, shapes,
    strides and launch expressions use. A shape entry may be a
    ``SizeExpression`` of the integer scalars. An out array may be ``fill``-ed
    before the launch (a number of its dtype's kind; ``float("inf")`` for
    "+inf"). A scalar that is an ``extent`` is an integer the caller passes
    that sizes the call (shapes name it, no in or inout array binds it bare)
    or is tied to a dimension: bounded by ``max`` (a dimension the in and
    inout arrays bind, or a number; None: its type's range, and at least 0),
    or equal to ``equals`` (such a dimension). A scalar with a ``split`` axis
    ("x", "y" or "z") is set by the binder to each launch's first block index
    there, where a grid past CUDA's limits is launched in parts."""

    _fields = (
        "name", "role", "dtype", "shape", "scalar", "dim", "optional", "strides", "lanes", "pack", "arg", "fill", "extent", "max", "equals", "split",
    )  # fmt: skip
    _defaults: ClassVar[dict[str, Any]] = {
        "optional": 0, "strides": (), "lanes": 1, "pack": 0, "fill": None, "extent": False, "max": None, "equals": None, "split": "",
    }  # fmt: skip
    __slots__ = _fields
    name: str
    role: str  # "" for a scalar
    dtype: str  # an array's dtype; a scalar's type
    shape: tuple[str | int | SizeExpression, ...]  # a name, a number, or an expression of names
    scalar: bool
    dim: bool
    optional: int
    strides: tuple[str | int, ...]  # per dimension, where declared: a stride parameter's name, or 1
    lanes: int  # values of dtype an element (tropical counting's pairs: 2)
    pack: int  # one-bit values a word along the last dimension; 0: not packed
    arg: str  # the bindings' name of it: always set (``name`` where the manifest gives none)
    fill: int | float | bool | None  # an out array's value before the launch; None: not filled
    extent: bool  # a scalar the caller passes that sizes out arrays
    max: str | int | None  # an extent's bound: a dimension's name or a number; None: its type's range
    equals: str | None  # the dimension an extent must equal; None: not tied so
    split: str  # the grid axis whose launches this scalar starts ("": none)


class Backward(Record):
    """How a declared kernel is differentiated, resolved to kernel names by the
    build: the gradient kernels, each with the forward arrays it keeps
    (``kernels``: (kernel, saves) pairs), or a route (``through``: the kernel
    of the same family that computes this one's outs and more, run forward in
    its place when a gradient is wanted, whose gradient kernels are used).
    Exactly one of the two is set: ``kernels`` is empty for a route, and
    ``through`` is "" for gradient kernels."""

    _fields = ("kernels", "through")
    __slots__ = _fields
    kernels: tuple[tuple[str, tuple[str, ...]], ...]
    through: str


class IndexKernel(Record):
    """One kernel of the index: found by its ``family`` and ``axes`` (its axis
    values), with its ``signature`` for the bindings and its ``backward``
    (gradient kernels or route; None: no gradient), beside the ``params`` and
    ``launch`` every launch reads."""

    _fields = (
        "name", "symbol", "family", "params", "launch", "fatbin", "source", "sass", "ptx", "resources", "axes", "signature", "backward",
    )  # fmt: skip
    _defaults: ClassVar[dict[str, Any]] = {"backward": None}
    __slots__ = _fields
    name: str
    symbol: str
    family: str
    params: tuple[Param, ...]
    launch: Launch
    fatbin: FileEntry
    source: FileEntry
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    # ptxas' report per SASS arch (registers, spill_stores, ...); informational, not sealed.
    resources: Mapping[str, Mapping[str, int]]
    axes: Mapping[str, str | int]  # the kernel's axis values
    signature: tuple[DeclaredParam, ...]
    backward: Backward | None  # None: the kernel has no gradient

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(p.kind for p in self.params)

    @property
    def pack_format(self) -> str:
        """The struct format of the parameter block, native alignment: the C layout."""
        return "@" + "".join(p.pack for p in self.params)

    def file(self, part: str) -> FileEntry:
        """``part`` is "fatbin" or "source"."""
        return self.fatbin if part == "fatbin" else self.source


class ToolkitEntry(Record):
    """The index's ``toolkit`` table: what compiled the images, and the oldest driver they load on."""

    _fields = ("version", "cuda_major", "min_driver", "wheel", "compiler", "compression")
    __slots__ = _fields
    _defaults: ClassVar[dict[str, Any]] = {"compiler": "", "compression": ""}
    version: str  # e.g. "13.0.88"
    cuda_major: int
    min_driver: int  # cuDriverGetVersion units
    wheel: str
    compiler: str
    compression: str
