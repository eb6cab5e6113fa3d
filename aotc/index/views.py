"""Typed, immutable views of a validated index: what the rest of aotc reads instead of JSON.

Every value here was checked by ``aotc.index._validate`` before it was built,
so users of these views never re-check types or catch ``KeyError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["FileEntry", "IndexKernel", "KernelKey", "Launch", "Param", "ToolkitEntry"]

# (semiring, dtype, pass, variant): how the tropical API finds a kernel.
KernelKey = tuple[str, str, str, str]


@dataclass(frozen=True)
class FileEntry:
    """One file of a kernel, as the index records it."""

    file: str  # a plain name, or "src/<plain name>" for sources
    sha256: str  # 64 lowercase hex digits
    size: int


@dataclass(frozen=True)
class Param:
    """One kernel parameter: name, C type, kind ("ptr", "i32", "i64") and struct code."""

    name: str
    ctype: str
    kind: str
    pack: str


@dataclass(frozen=True)
class Launch:
    """Launch geometry: the grid is ceil(extent / tile) per axis; an extent is a
    size parameter's name or a decimal number."""

    block: tuple[int, int, int]
    grid: tuple[tuple[str, int], tuple[str, int], tuple[str, int]]
    shared_bytes_static: int
    shared_bytes_dynamic: int


@dataclass(frozen=True)
class IndexKernel:
    """One kernel of the index."""

    name: str
    symbol: str
    family: str
    semiring: str
    dtype: str
    pass_: str
    variant: str
    params: tuple[Param, ...]
    launch: Launch
    fatbin: FileEntry
    source: FileEntry
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    # ptxas' report per SASS arch (registers, spill_stores, ...); informational, not sealed.
    resources: Mapping[str, Mapping[str, int]]

    @property
    def key(self) -> KernelKey:
        return (self.semiring, self.dtype, self.pass_, self.variant)

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


@dataclass(frozen=True)
class ToolkitEntry:
    """The index's ``toolkit`` table: what compiled the images, and the oldest driver they load on."""

    version: str  # e.g. "13.0.88"
    cuda_major: int
    min_driver: int  # cuDriverGetVersion units
    wheel: str
    compiler: str = ""
    compression: str = ""
