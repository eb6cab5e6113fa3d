"""Writing ``index.json``: one build's kernels, images and checksums.

The index is written once per build from the manifest (names, signatures,
launch geometry), the compiled fatbins (checksums, sizes) and the
architecture lists actually used. Reading it is ``aotc.index.LibraryIndex``;
the schema constants and the checksum rule both sides use are in
``aotc.index.schema``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from aotc._version import __version__
from aotc.index._layout import render
from aotc.index.schema import (
    CHECKSUM_KEY,
    SCHEMA,
    SOURCE_DIR,
    TOP_SEALED,
    field_checksums,
    sealed_fields,
    sha256_bytes,
)

if TYPE_CHECKING:
    from aotc.build.manifest import DeclaredKernelSpec, Manifest

__all__ = ["build_index", "dumps", "entry_of", "file_digest", "kernel_entry", "seal"]


def file_digest(data: bytes) -> dict[str, Any]:
    """What an entry records of a file's bytes: ``{"sha256", "size"}``."""
    return {"sha256": sha256_bytes(data), "size": len(data)}


def kernel_entry(
    kernel: DeclaredKernelSpec, manifest: Manifest, fatbin: bytes, source: bytes, resources: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """The index entry of one compiled kernel; ``resources`` is ptxas' report per SASS arch."""
    return entry_of(kernel, manifest, file_digest(fatbin), file_digest(source), resources)


def entry_of(
    kernel: DeclaredKernelSpec, manifest: Manifest, fatbin: Mapping[str, Any], source: Mapping[str, Any], resources: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """The index entry of one compiled kernel, from its fatbin's and source's ``file_digest``.

    A kernel is found by its family and its axes, and records its signature
    for the bindings, and its backward (gradient kernels or route) where it has one.
    """
    backward = {"backward": kernel.backward.to_json()} if kernel.backward is not None else {}
    return {
        "symbol": kernel.symbol,
        "family": kernel.family,
        "axes": dict(kernel.axes),
        "signature": kernel.signature.to_json(),
        **backward,
        "params": [p.to_json() for p in kernel.params],
        "launch": kernel.launch.to_json(),
        "fatbin": {"file": f"{kernel.name}.fatbin", **fatbin},
        "sass": list(manifest.archs.sass),
        "ptx": list(manifest.archs.ptx),
        "source": {"file": f"{SOURCE_DIR}/{kernel.name}.cu", **source},
        "resources": resources,
    }


def seal(index: dict[str, Any], current: Collection[str] = ()) -> dict[str, Any]:
    """Write (or rewrite) the checksum tables of ``index`` in place; returns it.

    Each kernel's table covers what a launch reads (``sealed_fields``), the
    top level's the semirings; the reader recomputes them on load. The kernels
    named in ``current`` already hold the table of their fields as they are
    (an entry the build's memo found unchanged, ``aotc.build._index_memo``).
    """
    for name, entry in index.get("kernels", {}).items():
        if name in current:
            continue
        entry.pop(CHECKSUM_KEY, None)
        entry[CHECKSUM_KEY] = field_checksums(entry, sealed_fields(entry))
    index.pop(CHECKSUM_KEY, None)
    index[CHECKSUM_KEY] = field_checksums(index, TOP_SEALED)
    return index


def build_index(
    manifest: Manifest, entries: Mapping[str, dict[str, Any]], toolkit: Mapping[str, Any], current: Collection[str] = ()
) -> dict[str, Any]:
    """The whole index document, kernels in manifest order, sealed.

    ``toolkit`` says what compiled the images and the oldest driver that loads
    them (``min_driver``, in cuDriverGetVersion units), so the runtime can refuse
    an older driver in one line instead of failing at the first launch.
    """
    index = {
        "schema": SCHEMA,
        "aotc_version": __version__,
        "toolkit": dict(toolkit),
        "library": manifest.library,
        "semirings": {
            s.name: {"add": s.add, "mul": s.mul, "zero": s.zero, "one": s.one, "counting": s.counting}
            for s in manifest.semirings
        },
        "kernels": {k.name: dict(entries[k.name]) for k in manifest.kernels},
    }
    return seal(index, current)


def dumps(index: Mapping[str, Any]) -> bytes:
    """The index's bytes in the build's layout (``aotc.index._layout``, which documents
    it): the top level, then each family's catalog, a directory of the kernels and
    the kernels one a line, so that ``aotc.load`` reads only what it uses."""
    return render(index)
