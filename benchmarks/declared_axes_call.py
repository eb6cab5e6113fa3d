"""Per-call host cost of a declared family called with an axis keyword and an inout array, NumPy and tensors.

The family is the test suite's AXPY (``y += alpha * x``: an inout array, a
float argument, and a ``threads`` axis of two values, so every call names
one), built from its manifest with stand-in fatbins (``tests/kernels/
declared_support.py``) and run on the noop backend, which launches nothing:
what is timed is aotc's own work per call. Reported: the median over batches
of the mean time per call in a batch, the cases interleaved batch by batch.

    python -P benchmarks/declared_axes_call.py [--root CHECKOUT] [--batches 30] [--calls 5000]

``--root`` is the checkout whose aotc and tests are imported (default: this
one), so a parent's worktree can be timed by the same file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    sys.path[:0] = [args.root, os.path.join(args.root, "tests", "kernels"), os.path.join(args.root, "tests")]
    import numpy as np

    import aotc
    import aotc.kernels
    from aotc.runtime.backends.noop import NoopBackend
    from declared_support import AXPY, declared_library, write_project

    root = Path(tempfile.mkdtemp())
    library = declared_library(root, write_project(root / "project", AXPY))
    axpy = aotc.kernels.over(aotc.load(library, backend=NoopBackend()))
    x, y = np.ones((64, 64)), np.ones((64, 64))
    cases = {"axpy(x, y, 0.5, threads=64), NumPy 64x64 f64": lambda: axpy.axpy(x, y, 0.5, threads=64)}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t, u = torch.ones(64, 64, dtype=torch.float64), torch.ones(64, 64, dtype=torch.float64)
        ops = axpy.torch_ops()
        cases["axpy(t, u, 0.5, threads=64), tensors"] = lambda: axpy.axpy(t, u, 0.5, threads=64)
        cases["torch.ops.axpylib.axpy(t, u, 0.5, threads=64)"] = lambda: ops.axpy(t, u, 0.5, threads=64)
    for function in cases.values():
        function()  # first use loads the kernel and makes the plan: not part of the per-call cost
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.batches):
        for name, function in cases.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                function()
            samples[name].append((time.perf_counter() - start) / args.calls)
    print(f"per-call host overhead, noop backend, median of {args.batches} interleaved batches of {args.calls} calls, checkout {args.root}")
    for name, values in samples.items():
        print(f"  {name:50} {statistics.median(values) * 1e6:6.2f} us")


if __name__ == "__main__":
    main()
