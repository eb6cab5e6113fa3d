"""Hand-written index.json kernel entries for the tests of the index's readers
(``tests/test_index.py``, ``tests/faults/test_index_faults.py``,
``tests/test_cli.py``): one builder, with each test's own values passed in.
Not a conftest.py, so it is imported by name, like ``runtime_support``."""

from __future__ import annotations

from typing import Any

from aotc.index import sha256_bytes

__all__ = ["TOOLKIT", "kernel_entry", "param", "signature"]

# A toolkit entry as an nvcc 13 build writes it.
TOOLKIT = {"compiler": "nvcc", "version": "13.0.88", "cuda_major": 13, "min_driver": 13000, "wheel": "aotc"}

_PACKS = {"ptr": "Q", "i32": "i", "i64": "q"}
_CTYPES = {"ptr": "float*", "i32": "int", "i64": "long long"}


def param(name: str, kind: str, ctype: str | None = None) -> dict[str, str]:
    """A parameter of ``kind`` (ptr, i32, i64) with its pack code."""
    return {"name": name, "ctype": ctype or _CTYPES[kind], "kind": kind, "pack": _PACKS[kind]}


def signature(params: list[dict[str, str]]) -> list[dict[str, Any]]:
    """A signature the validator takes for ``params``: each pointer an f32 array
    (the last of several an out array, the others in arrays) shaped by every
    integer parameter, so each of those is a dimension; other scalars are arguments."""
    sizes = [p["name"] for p in params if p["kind"] in ("i32", "i64")]
    pointers = [p["name"] for p in params if p["kind"] == "ptr"]
    result: list[dict[str, Any]] = []
    for p in params:
        if p["kind"] == "ptr":
            role = "out" if len(pointers) > 1 and p["name"] == pointers[-1] else "in"
            result.append({"name": p["name"], "array": {"dtype": "f32", "role": role, "shape": sizes or [1]}})
        else:
            result.append({"name": p["name"], "scalar": p["kind"], "dim": p["name"] in sizes})
    return result


def kernel_entry(
    name: str,
    *,
    fatbin: bytes,
    source: bytes,
    params: list[dict[str, str]],
    block: tuple[int, int, int],
    grid: tuple[tuple[str, int], ...],
    shared: tuple[int, int] = (0, 0),
    semiring: str = "maxplus",
    pass_: str = "forward",
    variant: str = "single",
    sass: tuple[str, ...] = ("80",),
    ptx: tuple[str, ...] = ("80",),
    spill_stores: int = 0,
) -> dict[str, Any]:
    """One kernel's entry of a family ``gemm`` over tropical's axes, its files named
    ``<name>.fatbin`` and ``src/<name>.cu`` with the checksums and sizes of ``fatbin`` and ``source``."""
    static, dynamic = shared
    return {
        "symbol": name, "family": "gemm",
        "axes": {"semiring": semiring, "dtype": "f32", "pass": pass_, "variant": variant},
        "signature": signature(params),
        "params": params,
        "launch": {
            "block": list(block),
            "grid": [{"extent": extent, "tile": tile} for extent, tile in grid],
            "shared_bytes_static": static,
            "shared_bytes_dynamic": dynamic,
        },
        "fatbin": {"file": f"{name}.fatbin", "sha256": sha256_bytes(fatbin), "size": len(fatbin)},
        "source": {"file": f"src/{name}.cu", "sha256": sha256_bytes(source), "size": len(source)},
        "sass": list(sass),
        "ptx": list(ptx),
        "resources": {"80": {"registers": 40, "spill_stores": spill_stores}},
    }  # fmt: skip
