"""One checked emulator launch of a kernel without fences, for counting its
instructions: run it under callgrind at two sizes and take the difference, so
that the interpreter's start, the imports and the build (a g++ child, which
callgrind does not follow) cancel out.

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \\
        python benchmarks/checked_launch.py --library build/dev/aotc/tropical/lib --size 128

`--case gemm` (default) launches the shipped `gemm_maxplus_f32_forward` at
size^3 (shared tiles, global loads and stores); `--case atomics` a histogram
of size^2 values through shared and global atomics with a compare-and-swap
float maximum (every kind of atomic hook); with `--fence`, thread 0 of block
0 fences first, so the launch stamps its accesses and its atomics carry rows
(what a kernel with fences pays). The emulator's headers are those
of the aotc this Python imports (PYTHONPATH picks a tree), so the same
command counts a parent commit against a branch.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
from pathlib import Path

import numpy as np

from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes

ATOMICS = b"""
__device__ void float_max(float* address, float value) {
  int* bits = reinterpret_cast<int*>(address);
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= value) return;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
}
extern "C" __global__ void histogram(const int* values, const float* weights, int n, unsigned* bins, float* top, float* total,
                                     int fence) {
  __shared__ unsigned local[64];
  if (fence && blockIdx.x == 0 && threadIdx.x == 0) __threadfence();  // the rest of the launch is ordered
  for (int i = threadIdx.x; i < 64; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&local[values[i] & 63], 1u);
    float_max(top, weights[i]);
    atomicAdd(total, weights[i]);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 64; i += blockDim.x) atomicAdd(&bins[i], local[i]);
}
"""


def pointer(x: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(x.ctypes.data)


def launch_gemm(library_dir: Path, n: int) -> None:
    kernel = "gemm_maxplus_f32_forward"
    entry = json.loads((library_dir / "index.json").read_text())["kernels"][kernel]
    source = (library_dir / entry["source"]["file"]).read_bytes()
    library = load_library_bytes(compile_library_bytes(source, [kernel], source_name=f"{kernel}.cu"))
    tile_m, tile_n = (g["tile"] for g in entry["launch"]["grid"][:2])
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    c = np.empty((n, n), np.float32)
    # A, B, C, M, N, K, lda, ldb, ldc, and block_y0 (the grid's first row: launched whole)
    params = [pointer(a), pointer(b), pointer(c), *[ctypes.c_int(n)] * 3, *[ctypes.c_longlong(n)] * 3, ctypes.c_int(0)]
    library.launch(kernel, (-(-n // tile_n), -(-n // tile_m)), tuple(entry["launch"]["block"]), 0, params)


def launch_atomics(n: int, fence: bool) -> None:
    library = load_library_bytes(compile_library_bytes(ATOMICS, ["histogram"], source_name="histogram.cu"))
    rng = np.random.default_rng(0)
    values, weights = rng.integers(0, 1 << 20, n * n).astype(np.int32), rng.standard_normal(n * n).astype(np.float32)
    bins, top, total = np.zeros(64, np.uint32), np.full(1, -np.inf, np.float32), np.zeros(1, np.float32)
    params = [pointer(values), pointer(weights), ctypes.c_int(n * n), pointer(bins), pointer(top), pointer(total),
              ctypes.c_int(fence)]
    library.launch("histogram", (8, 1, 1), (128, 1, 1), 0, params)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", type=Path, required=True)
    parser.add_argument("--case", choices=["gemm", "atomics"], default="gemm")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--checks", default="race,init,sync")
    parser.add_argument("--fence", action="store_true", help="atomics: one __threadfence first (what ordering costs)")
    args = parser.parse_args()
    os.environ["AOTC_EMULATOR_CHECK"] = args.checks
    if args.case == "gemm":
        launch_gemm(args.library, args.size)
    else:
        launch_atomics(args.size, args.fence)


if __name__ == "__main__":
    main()
