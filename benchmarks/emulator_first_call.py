"""First call of one kernel on the CPU emulator: compiling it, then a cache hit.

Each round uses a fresh cache folder and two fresh processes. The first
process compiles the kernel's .cu as host C++ (a miss) and runs it; the second
finds the library in the disk cache and only loads and runs it. Reported:
medians of the wall time, inside each process, from aotc.load() to the end of
the first launch.

    python benchmarks/emulator_first_call.py [--library DIR] [--rounds 5]

(with aotc installed, or PYTHONPATH=. from a checkout and --library pointing at
a built library folder such as <build>/aotc/tropical/lib)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
import numpy as np
start = time.perf_counter()
from aotc.runtime.emulator.backend import EmulatorBackend
from aotc.runtime.library import Library
backend = EmulatorBackend()
library = Library(sys.argv[1], backend=backend)
launcher = library.kernel("gemm_maxplus_f32_forward")
n = 64
a = np.ones((n, n), np.float32); c = np.empty((n, n), np.float32)
launcher(a.ctypes.data, a.ctypes.data, c.ctypes.data, n, n, n, n, n, n)
backend.synchronize()  # launches are queued on a stream and run when the host waits
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "compiled": backend.compiles, "ok": bool((c == 2).all())}))
"""


def _child(library: str, cache: str) -> dict:
    env = dict(os.environ, AOTC_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD, library], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    import aotc

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=str(aotc.library_dir("tropical")))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    first, second = [], []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as cache:
            miss, hit = _child(args.library, cache), _child(args.library, cache)
        assert miss["ok"] and hit["ok"], "wrong result"
        assert miss["compiled"] == 1 and hit["compiled"] == 0, (miss, hit)
        first.append(miss["seconds"])
        second.append(hit["seconds"])
    print(f"kernel gemm_maxplus_f32_forward, 64x64x64, {args.rounds} rounds, library {Path(args.library)}")
    print(f"first process (compile + run): median {statistics.median(first) * 1e3:.0f} ms  (all: {', '.join(f'{t * 1e3:.0f}' for t in first)})")
    print(f"second process (cache hit + run): median {statistics.median(second) * 1e3:.0f} ms  (all: {', '.join(f'{t * 1e3:.0f}' for t in second)})")


if __name__ == "__main__":
    main()
