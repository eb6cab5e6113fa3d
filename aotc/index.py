"""The library index: what ``index.json`` holds, and how it is written and read.

The index is the only file the runtime reads at ``aotc.load()``. It is written
once per build from the manifest (names, signatures, launch geometry), the
compiled fatbins (checksums, sizes) and the architecture lists actually used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aotc._version import __version__
from aotc.errors import IndexFormatError

if TYPE_CHECKING:  # the runtime reads indexes and must not import the manifest's YAML parser
    from aotc.build.manifest import KernelSpec, Manifest

__all__ = [
    "INDEX_NAME",
    "SCHEMA",
    "SOURCE_DIR",
    "build_index",
    "dumps",
    "kernel_entry",
    "load_index_file",
    "read_index",
    "sha256_bytes",
    "toolkit_label",
]

SCHEMA = 1
INDEX_NAME = "index.json"
SOURCE_DIR = "src"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_entry(name: str, data: bytes) -> dict[str, Any]:
    return {"file": name, "sha256": sha256_bytes(data), "size": len(data)}


def kernel_entry(
    kernel: KernelSpec, manifest: Manifest, fatbin: bytes, source: bytes, resources: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """The index entry of one compiled kernel; ``resources`` is ptxas' report per SASS arch."""
    return {
        "symbol": kernel.symbol,
        "family": kernel.family,
        "semiring": kernel.semiring.name,
        "dtype": kernel.dtype.name,
        "pass": kernel.pass_name,
        "variant": kernel.variant,
        "params": [p.to_json() for p in kernel.params],
        "launch": kernel.launch.to_json(),
        "fatbin": _file_entry(f"{kernel.name}.fatbin", fatbin),
        "sass": list(manifest.archs.sass),
        "ptx": list(manifest.archs.ptx),
        "source": _file_entry(f"{SOURCE_DIR}/{kernel.name}.cu", source),
        "resources": resources,
    }


def build_index(manifest: Manifest, entries: Mapping[str, dict[str, Any]], toolkit: Mapping[str, Any]) -> dict[str, Any]:
    """The whole index document, kernels in manifest order.

    ``toolkit`` says what compiled the images and the oldest driver that loads
    them (``min_driver``, in cuDriverGetVersion units), so the runtime can refuse
    an older driver in one line instead of failing at the first launch.
    """
    return {
        "schema": SCHEMA,
        "aotc_version": __version__,
        "toolkit": dict(toolkit),
        "library": manifest.library,
        "semirings": {
            s.name: {"add": s.add, "mul": s.mul, "zero": s.zero, "one": s.one, "counting": s.counting}
            for s in manifest.semirings
        },
        "kernels": {k.name: entries[k.name] for k in manifest.kernels},
    }


def toolkit_label(index: Mapping[str, Any]) -> str:
    """What compiled an index's images, for one line of a report: ``nvcc 13.0.88, CUDA 13``."""
    toolkit = index.get("toolkit")
    if isinstance(toolkit, Mapping):
        return f"{toolkit.get('compiler', '?')} {toolkit.get('version', '?')}, driver >= {toolkit.get('min_driver', '?')}"
    return f"nvcc {index.get('nvcc_version', '?')}"


def dumps(index: Mapping[str, Any]) -> bytes:
    return (json.dumps(index, indent=1) + "\n").encode("utf-8")




def read_index(data: bytes, where: str) -> dict[str, Any]:
    """Parse and sanity-check index bytes; ``where`` names the file in errors."""
    try:
        index = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        msg = f"{where}: not a valid index ({exc})"
        raise IndexFormatError(msg) from None
    if not isinstance(index, dict) or not isinstance(index.get("kernels"), dict):
        msg = f"{where}: not an aotc index (no 'kernels' table)"
        raise IndexFormatError(msg)
    if index.get("schema") != SCHEMA:
        msg = f"{where}: index schema {index.get('schema')!r}, this aotc reads schema {SCHEMA}"
        raise IndexFormatError(msg)
    return index


def load_index_file(path: Path) -> dict[str, Any]:
    return read_index(path.read_bytes(), str(path))
