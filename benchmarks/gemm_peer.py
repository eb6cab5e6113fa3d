"""The peer's tropical GEMM kernels, as ``gemm_side_by_side.py`` compiles and launches them.

The peer is TensorBFS/tropical-gemm (MIT), the library aotc's tropical kernels
replace. Its kernel source is not part of this repository and must never be
committed: a run names a copy of ``crates/tropical-gemm-cuda/kernels/tropical_gemm.cu``
with ``--peer-cu PATH`` or ``AOTC_PEER_CU``.

What this module knows of the peer is its interface, as its own launcher uses it:

- kernels ``tropical_<semiring>_<dtype>_nn[_batched][_with_argmax]``, for
  max-plus, min-plus and max-times over f32, f64, i32 and i64; batched ones for
  f32 argmax only;
- parameters ``(A, B, C[, argmax], M, N, K[, strideA, strideB, strideC])``:
  device pointers, then ints;
- column-major operands; a 1-D grid of 64 x 64 tiles of 16 x 16 threads for
  4-byte types and 32 x 32 tiles of 8 x 8 threads for 8-byte ones, times the
  batch in z;
- its own NVRTC compile passes no options (here: ``nvcc -cubin``, whose
  defaults are the same -O3 and no fast math).

Row-major ``C = A B`` is column-major ``C^T = B^T A^T``: the peer is launched
with the operands swapped and M and N swapped, as its row-major path does.
Its max-times starts from 0 (defined on non-negative values only), and it
neither propagates NaN nor saturates integers: it is checked against NumPy on
small plain inputs (non-negative for max-times), and timed on every input.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PEER_ENV", "launch_shape", "param_format", "param_values", "peer_kernel", "peer_source"]

PEER_ENV = "AOTC_PEER_CU"
SEMIRINGS = ("maxplus", "minplus", "maxmul")
DTYPES = ("f32", "f64", "i32", "i64")
# (block tile, threads per side)
_TILES = {"f32": (64, 16), "i32": (64, 16), "f64": (32, 8), "i64": (32, 8)}


def peer_kernel(semiring: str, dtype: str, argmax: bool, batched: bool) -> str | None:
    """The peer's kernel for an aotc product kernel, or None where it has none."""
    if semiring not in SEMIRINGS or dtype not in DTYPES or (batched and not (argmax and dtype == "f32")):
        return None
    return f"tropical_{semiring}_{dtype}_nn{'_batched' if batched else ''}{'_with_argmax' if argmax else ''}"


def param_format(argmax: bool, batched: bool) -> str:
    """The ``struct`` format of the peer's parameters (native alignment)."""
    return "@" + "QQQ" + ("Q" if argmax else "") + "iii" + ("iii" if batched else "")


def param_values(pointers: dict[str, int], m: int, n: int, k: int, batch: int, argmax: bool) -> tuple[int, ...]:
    """The peer's arguments for row-major ``C = A B`` (M x K times K x N):
    column-major ``C^T = B^T A^T``, so B goes first and M and N swap."""
    values = [pointers["B"], pointers["A"], pointers["C"]]
    if argmax:
        values.append(pointers["Kstar"])
    values += [n, m, k]
    if batch:
        values += [k * n, m * k, m * n]
    return tuple(values)


def launch_shape(dtype: str, m: int, n: int, batch: int) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(grid, block, dynamic shared bytes) of one peer launch on row-major M x N."""
    tile, threads = _TILES[dtype]
    grid = (-(-n // tile) * -(-m // tile), 1, max(batch, 1))
    return grid, (threads, threads, 1), 0


def peer_source(path: str | Path | None) -> Path:
    """The peer's source file: ``path``, else ``$AOTC_PEER_CU``; a one-line error if neither is a file."""
    given = path or os.environ.get(PEER_ENV)
    if not given:
        msg = f"no peer source: pass --peer-cu PATH or set {PEER_ENV} to a copy of the peer's tropical_gemm.cu"
        raise SystemExit(f"gemm_side_by_side: {msg}")
    source = Path(given)
    if not source.is_file():
        raise SystemExit(f"gemm_side_by_side: the peer's source is not a file: {source}")
    return source
