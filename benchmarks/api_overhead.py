"""Host overhead of one aotc.tropical.matmul call, through the noop backend.

The noop backend launches nothing, so what is timed is aotc's own work per
call. A first call derives everything (operand inspection, checks, the
kernel, its grid) and leaves a call plan; the timed repeats are the plan's
key check, the per-object checks (out writable, no shared memory), three
pointers, one pack and the launch call. ``out=`` is preallocated.
Reported: the median over batches of the mean time per call in a batch, the
cases interleaved batch by batch so that drift in machine load hits all
alike, and each case's ratio to the bare launcher of the same run.

    python benchmarks/api_overhead.py [--library DIR] [--batches 30] [--calls 5000]
"""

from __future__ import annotations

import argparse

import numpy as np
import run  # first: puts this checkout's aotc first on sys.path

import aotc
from aotc import tropical
from aotc.runtime.backends.noop import NoopBackend
from aotc.runtime.library import Library


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=str(aotc.library_dir("tropical")))
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    tropical.set_library(Library(args.library, backend=NoopBackend()))
    a = np.ones((64, 64), np.float32)
    b = np.ones((64, 64), np.float32)
    out = np.empty((64, 64), np.float32)
    a3, out3 = np.ones((4, 64, 64), np.float32), np.empty((4, 64, 64), np.float32)
    k = np.empty((64, 64), np.int32)
    launcher = tropical._library().kernel("gemm_maxplus_f32_forward")  # noqa: SLF001 - calibration
    pointer = a.ctypes.data
    cases = {
        "calibration: an empty Python call": lambda: None,
        "calibration: the held launcher alone (pack + launch)": lambda: launcher(
            pointer, pointer, pointer, 64, 64, 64, 64, 64, 64
        ),
        "matmul(a, b, out=c), 2-D f32": lambda: tropical.matmul(a, b, "maxplus", out=out),
        "matmul(a3, b, out=c3), batched, b broadcast": lambda: tropical.matmul(a3, b, "maxplus", out=out3),
        "matmul_argmax(a, b, out=c, k_out=k)": lambda: tropical.matmul_argmax(a, b, "maxplus", out=out, k_out=k),
        "matmul(a, b), allocating the result": lambda: tropical.matmul(a, b, "maxplus"),
    }
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:  # the path PyTorch users take (CPU tensors here; the checks are the same)
        ta, tout = torch.ones(64, 64), torch.empty(64, 64)
        cases["matmul(ta, tb, out=tc), torch tensors"] = lambda: tropical.matmul(ta, ta, "maxplus", out=tout)
    for function in cases.values():
        function()  # first use loads the kernel: not part of the per-call cost
    medians = run.interleaved_medians(cases, args.batches, args.calls)
    bare = medians["calibration: the held launcher alone (pack + launch)"]
    print(f"per-call host overhead, noop backend, median of {args.batches} interleaved batches of {args.calls} calls")
    for name, value in medians.items():
        print(f"  {name:52} {value / 1000:6.2f} us  {value / bare:5.1f}x the launcher")


if __name__ == "__main__":
    main()
