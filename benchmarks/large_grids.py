"""Products whose grid is past CUDA's 65535 blocks on y or z, on the CPU emulator.

A tall matrix (8,400,000 x 1 by 1 x 1: 65,625 blocks of 128 rows on y) and a
batch of 70,000 small products (70,000 blocks on z) are launched in two
parts each; a batch of 65,535 is one launch, for comparison. Each shape is
timed ``--repeats`` times in one process and checked against
``aotc.reference``; the median is reported. The emulator runs a block at a
time, so this is what a CPU user waits for, not a GPU's figure.

    python benchmarks/large_grids.py [--library DIR] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import run  # noqa: F401 - first: puts this checkout's aotc first on sys.path

import aotc
from aotc import reference, tropical


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=str(aotc.library_dir("tropical")))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tropical.set_library(aotc.load(args.library, backend="emulator"))
    rng = np.random.default_rng(1)
    cases = {
        "8,400,000 x 1 by 1 x 1 (2 launches)": ((8_400_000, 1), (1, 1)),
        "a batch of 70,000 2x3 by 3x2 (2 launches)": ((70_000, 2, 3), (70_000, 3, 2)),
        "a batch of 65,535 2x3 by 3x2 (1 launch)": ((65_535, 2, 3), (65_535, 3, 2)),
    }
    for label, (shape_a, shape_b) in cases.items():
        a, b = rng.normal(size=shape_a).astype(np.float32), rng.normal(size=shape_b).astype(np.float32)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            c = tropical.matmul(a, b)
            times.append(time.perf_counter() - start)
        assert np.array_equal(c, reference.matmul(a, b, "maxplus")), label
        print(f"tropical.matmul, f32 max-plus, {label}: {statistics.median(times):.2f} s (median of {args.repeats})")


if __name__ == "__main__":
    main()
