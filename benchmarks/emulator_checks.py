"""What AOTC_EMULATOR_CHECK costs: building a kernel, and one 512^3 launch,
plain against checked, interleaved in one process.

    python benchmarks/emulator_checks.py --library build/dev/aotc/tropical/lib [--size 512] [--repeat 5]

The memory check needs libasan first in the process; run the script under
``LD_PRELOAD=$(g++ -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0
PYTHONMALLOC=malloc`` to include ``all`` (otherwise it measures race,init,sync).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from aotc.runtime.emulator.checks import asan_loaded
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes

KERNEL = "gemm_maxplus_f32_forward"


def _build(source: bytes, checks: str) -> tuple[float, object]:
    os.environ["AOTC_EMULATOR_CHECK"] = checks
    start = time.perf_counter()
    payload = compile_library_bytes(source, [KERNEL], source_name=f"{KERNEL}.cu")
    took = time.perf_counter() - start
    return took, load_library_bytes(payload)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", type=Path, required=True)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    entry = json.loads((args.library / "index.json").read_text())["kernels"][KERNEL]
    source = (args.library / entry["source"]["file"]).read_bytes()
    tile_m, tile_n = (g["tile"] for g in entry["launch"]["grid"][:2])
    block = tuple(entry["launch"]["block"])
    settings = ["", "race,init,sync"] + (["all"] if asan_loaded() else [])
    builds: dict[str, list[float]] = {s: [] for s in settings}
    libraries = {}
    for _ in range(2):
        for setting in settings:
            took, libraries[setting] = _build(source, setting)
            builds[setting].append(took)
    n = args.size
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    c = np.empty((n, n), np.float32)
    def pointer(x: np.ndarray) -> ctypes.c_void_p:
        return ctypes.c_void_p(x.ctypes.data)

    # A, B, C, M, N, K, lda, ldb, ldc, then each offset of a grid launched in
    # parts (block_y0), 0: launched whole; read from the index, so a parameter
    # added to the family is not left out.
    offsets = [ctypes.c_int(0)] * (len(entry["signature"]) - 9)
    params = [pointer(a), pointer(b), pointer(c), *(ctypes.c_int(n),) * 3, *(ctypes.c_longlong(n),) * 3, *offsets]
    grid = (-(-n // tile_n), -(-n // tile_m))
    launches: dict[str, list[float]] = {s: [] for s in settings}
    for _ in range(args.repeat):
        for setting in settings:
            start = time.perf_counter()
            libraries[setting].launch(KERNEL, grid, block, 0, params)
            launches[setting].append(time.perf_counter() - start)
    print(f"load average {os.getloadavg()[0]:.2f}; {KERNEL}, {n}^3, medians")
    for setting in settings:
        label = setting or "plain"
        print(f"{label:16} build {statistics.median(builds[setting]):6.2f} s   launch {statistics.median(launches[setting]):7.3f} s")


if __name__ == "__main__":
    main()
