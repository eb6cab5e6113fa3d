"""Time max-plus forward and argmax at 4096^3 on a GPU, against the issue limit.

For each kernel: a few warm-up launches, then many launches each timed with
CUDA events; the median is reported. The limit assumes one add and one max
per term, each a full-rate instruction: 4 schedulers x 32 lanes issue 128
lane-instructions per SM per clock, so terms/s <= SMs x clock x 128 / 2.

Each kernel runs twice: on values in [-1000, 1000), where every k tile is
plain (docs/design.md, "Plain tiles"), and with one value in every k tile of
every column block that no plain tile may take (+inf, or 2^28 for i32), so
every tile takes the exact, guarded path.

    python benchmarks/gemm_gpu.py [--size 4096] [--repeats 30]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

import aotc
from aotc.runtime.library import Library

CASES = [("f32", "forward"), ("f32", "argmax"), ("f64", "forward"), ("f64", "argmax"), ("i32", "forward"), ("i32", "argmax")]
NUMPY = {"f32": np.float32, "f64": np.float64, "i32": np.int32}
NOT_PLAIN = {"f32": np.inf, "f64": np.inf, "i32": 1 << 28}  # for max-plus


def _check(result: tuple) -> object:
    err, *rest = result
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver call failed: {err}")
    return rest[0] if len(rest) == 1 else rest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    from cuda.bindings import driver as cu

    library = Library(aotc.library_dir("tropical"), backend="cuda-python")
    backend = library.backend
    device = backend.device()
    limit = device.sm_count * device.clock_khz * 1e3 * 128 / 2
    print(device.describe())
    print(f"issue limit for one add + one max per term: {limit / 1e12:.2f} Tterm/s")
    n = args.size
    terms = float(n) ** 3
    rng = np.random.default_rng(0)
    # The backend's first memory call makes the device's primary context
    # current in this thread; streams and events are created in it.
    backend.free(backend.alloc(1))
    stream = _check(cu.cuStreamCreate(0))
    start, stop = _check(cu.cuEventCreate(0)), _check(cu.cuEventCreate(0))
    print(f"{'kernel':28} {'tiles':>6} {'median ms':>10} {'Tterm/s':>9} {'of limit':>9}")
    for (dtype, pass_name), tiles in ((case, tiles) for case in CASES for tiles in ("plain", "exact")):
        launcher = library.find("maxplus", dtype, pass_name)
        host = rng.integers(-1000, 1000, size=(n, n)).astype(NUMPY[dtype])
        buffers = {name: backend.alloc(host.nbytes) for name in ("A", "B", "C")}
        buffers["Kstar"] = backend.alloc(n * n * 4)
        backend.copy_to_device(buffers["A"], host)
        if tiles == "exact":  # k tiles are at most 16 deep, column blocks at least 64 wide
            host[::8, ::64] = NOT_PLAIN[dtype]
        backend.copy_to_device(buffers["B"], host)
        values = {"M": n, "N": n, "K": n, "lda": n, "ldb": n, "ldc": n, "ldk": n, **buffers}
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
        rate = terms / (median / 1e3)
        print(f"{launcher.name:28} {tiles:>6} {median:10.3f} {rate / 1e12:9.2f} {rate / limit:9.1%}")
        for pointer in buffers.values():
            backend.free(pointer)


if __name__ == "__main__":
    main()
