"""Time every forward and argmax kernel on a GPU, against the issue limit.

    python benchmarks/gemm_gpu.py                       # 1024^3, 4096^3 and batched 64 x 512^3
    python benchmarks/gemm_gpu.py --shape 4096 --kernel maxplus_f32
    python benchmarks/gemm_gpu.py --plan                # what would run; needs no GPU

For each kernel of the installed library (pass forward or argmax; the
single variant on square shapes, the batched one on the batched shape): a few
warm-up launches, then many launches each timed with CUDA events; the median
is reported as tera-terms/s and as a fraction of the issue limit. The limit
assumes one add and one max per term, each a full-rate instruction: 4
schedulers x 32 lanes issue 128 lane-instructions per SM per clock, so
terms/s <= SMs x clock x 128 / 2. A kernel's own floor, from its SASS, is in
``benchmarks/sass_budget.json`` (instructions per term).

Each kernel runs twice where its dtype has plain tiles: on values in
[-1000, 1000), where every k tile is plain (docs/design.md, "Plain tiles"),
and with one value in every k tile of every column block that no plain tile
takes (NaN for floats, 2^28 for i32, 2^60 for i64), so every tile is exact.
Bool kernels have one case (their tiles are always plain). The packed and/or
kernels take packed operands and are not timed here.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator

import numpy as np

import aotc
from aotc.runtime.library import Library

NUMPY = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_}
NOT_PLAIN = {"f32": np.nan, "f64": np.nan, "i32": 1 << 28, "i64": 1 << 60}
DEFAULT_SHAPES = ("1024", "4096", "64x512")


def _check(result: tuple) -> object:
    err, *rest = result
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver call failed: {err}")
    return rest[0] if len(rest) == 1 else rest


def _shape(text: str) -> tuple[int, int]:
    """``"4096"`` -> (0, 4096): no batch; ``"64x512"`` -> (64, 512)."""
    batch, _, n = text.rpartition("x")
    return (int(batch) if batch else 0), int(n)


def plan(index: dict, shapes: list[str], kernel_filter: str) -> Iterator[tuple[str, int, int, str]]:
    """(kernel name, batch, n, tiles) for every timing to take."""
    for name, entry in index["kernels"].items():
        if entry["axes"]["pass"] not in ("forward", "argmax") or kernel_filter not in name:
            continue
        for batch, n in map(_shape, shapes):
            if entry["axes"]["variant"] != ("batched" if batch else "single"):
                continue
            for tiles in ("plain", "exact") if entry["axes"]["dtype"] in NOT_PLAIN else ("plain",):
                yield name, batch, n, tiles


def _inputs(rng: np.random.Generator, entry: dict, batch: int, n: int, tiles: str, counting: bool) -> tuple:
    shape = ((batch,) if batch else ()) + (n, n) + ((2,) if counting else ())
    dtype = NUMPY[entry["axes"]["dtype"]]
    if dtype is np.bool_:
        a, b = rng.random(shape) < 0.05, rng.random(shape) < 0.05
    else:
        a = rng.integers(-1000, 1000, size=shape).astype(dtype)
        b = rng.integers(-1000, 1000, size=shape).astype(dtype)
        if counting:
            a[..., 1], b[..., 1] = 1, 1
    if tiles == "exact":  # k tiles are at least 8 deep, column blocks at least 32 wide: every tile
        values = b[..., 0] if counting else b
        values[..., ::8, ::32] = NOT_PLAIN[entry["axes"]["dtype"]]
    return a, b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="N for N^3, or BxN for a batch of N^3 (repeatable)")
    parser.add_argument("--kernel", default="", help="only kernels whose name contains this, e.g. maxplus_f32")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--plan", action="store_true", help="list what would be timed, and stop (no GPU needed)")
    args = parser.parse_args()
    shapes = args.shape or list(DEFAULT_SHAPES)
    if args.plan:
        library = Library(aotc.library_dir("tropical"), backend="noop")
        for name, batch, n, tiles in plan(library.index, shapes, args.kernel):
            print(f"{name:36} {f'{batch} x ' if batch else ''}{n}^3 {tiles}")
        return
    from cuda.bindings import driver as cu

    library = Library(aotc.library_dir("tropical"), backend="cuda-python")
    backend = library.backend
    device = backend.device()
    limit = device.sm_count * device.clock_khz * 1e3 * 128 / 2
    print(device.describe())
    print(f"issue limit for one add + one max per term: {limit / 1e12:.2f} Tterm/s")
    rng = np.random.default_rng(0)
    # The backend's first memory call makes the device's primary context
    # current in this thread; streams and events are created in it.
    backend.free(backend.alloc(1))
    stream = _check(cu.cuStreamCreate(0))
    start, stop = _check(cu.cuEventCreate(0)), _check(cu.cuEventCreate(0))
    print(f"{'kernel':36} {'shape':>12} {'tiles':>6} {'median ms':>10} {'Tterm/s':>9} {'of limit':>9}")
    for name, batch, n, tiles in plan(library.index, shapes, args.kernel):
        entry = library.index["kernels"][name]
        counting = bool(library.index["semirings"][entry["axes"]["semiring"]].get("counting"))
        launcher = library.kernel(name)
        a, b = _inputs(rng, entry, batch, n, tiles, counting)
        buffers = {"A": backend.alloc(a.nbytes), "B": backend.alloc(b.nbytes), "C": backend.alloc(a.nbytes)}
        buffers["Kstar"] = backend.alloc(max(batch, 1) * n * n * 4)
        backend.copy_to_device(buffers["A"], a)
        backend.copy_to_device(buffers["B"], b)
        values = {
            "M": n, "N": n, "K": n, "lda": n, "ldb": n, "ldc": n, "ldk": n, "batch": batch, "block_y0": 0, "block_z0": 0,
            "batch_stride_A": n * n, "batch_stride_B": n * n, "batch_stride_C": n * n, "batch_stride_Kstar": n * n,
            **buffers,
        }  # fmt: skip
        call = [values[p] for p in launcher.params]
        for _ in range(3):
            launcher(*call, stream=stream)
        _check(cu.cuStreamSynchronize(stream))
        times = []
        for _ in range(args.repeats):
            _check(cu.cuEventRecord(start, stream))
            launcher(*call, stream=stream)
            _check(cu.cuEventRecord(stop, stream))
            _check(cu.cuEventSynchronize(stop))
            times.append(_check(cu.cuEventElapsedTime(start, stop)))
        median = statistics.median(times)
        rate = max(batch, 1) * float(n) ** 3 / (median / 1e3)
        shape = f"{batch}x{n}^3" if batch else f"{n}^3"
        print(f"{name:36} {shape:>12} {tiles:>6} {median:10.3f} {rate / 1e12:9.2f} {rate / limit:9.1%}")
        for pointer in buffers.values():
            backend.free(pointer)


if __name__ == "__main__":
    main()
