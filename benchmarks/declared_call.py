"""Host overhead of one call of a declared family's generated binding, through the noop backend.

The noop backend launches nothing, so what is timed is aotc's own work per
call: the binding's argument binding, the call plan's lookup (kernel, dimensions,
out shapes), the arrays read, the out array checked or allocated, the
pointers, one pack and the launch call. Beside it, in the same run: the bare
launcher, and tropical's ``matmul(a, b, out=c)`` of the same size, the
call path the binding is measured against (now bound by the same binder),
and, with torch installed, tensor calls of both.
Reported: the median over batches of the mean time per call in a batch, the
cases interleaved batch by batch.

    python benchmarks/declared_call.py --library ROWOPS_LIB --tropical TROPICAL_LIB [--batches 30] [--calls 5000]

ROWOPS_LIB is a built examples/rowops library (its index.json's folder; the
noop backend takes any fatbin bytes).
"""

from __future__ import annotations

import argparse

import numpy as np
import run  # first: puts this checkout's aotc first on sys.path

import aotc
import aotc.kernels
from aotc import tropical
from aotc.runtime.backends.noop import NoopBackend
from aotc.runtime.library import Library


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="a built rowops library folder")
    parser.add_argument("--tropical", default=str(aotc.library_dir("tropical")))
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    rowops = aotc.kernels.over(Library(args.library, backend=NoopBackend()))
    tropical.set_library(Library(args.tropical, backend=NoopBackend()))
    x = np.ones((64, 64), np.float32)
    out = np.empty((64, 64), np.float32)
    launcher = rowops.library.kernel("softmax_f32")
    pointer = x.ctypes.data
    cases = {
        "calibration: the held launcher alone (pack + launch)": lambda: launcher(pointer, pointer, 1, 64, 64),
        "rowops.softmax(x, y=out), 64x64 f32": lambda: rowops.softmax(x, y=out),
        "rowops.softmax(x), allocating y": lambda: rowops.softmax(x),
        "tropical.matmul(a, b, out=c), 64x64 f32": lambda: tropical.matmul(x, x, "maxplus", out=out),
    }
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t = torch.ones(64, 64)
        leaf = torch.ones(64, 64, requires_grad=True)
        rowops.torch_ops()
        # Autograd records nothing here: the entry runs the op's kernel without the dispatcher.
        cases["rowops.softmax(t), torch tensor"] = lambda: rowops.softmax(t)
        t_out = torch.empty(64, 64)
        cases["rowops.softmax(t, y=t_out), tensors (.out)"] = lambda: rowops.softmax(t, y=t_out)
        cases["rowops.softmax(t), t.requires_grad (the op, recorded)"] = lambda: rowops.softmax(leaf)
        cases["torch.ops.rowops.softmax(t)"] = lambda: torch.ops.rowops.softmax(t)
        cases["rowops.scan(t), torch tensor"] = lambda: rowops.scan(t)
        # Tropical's own tensor call, the same size: a declared family's is to cost no more.
        cases["tropical.matmul(t, t), torch tensor"] = lambda: tropical.matmul(t, t)
        cases["tropical.matmul(t, t, out=t_out), tensors"] = lambda: tropical.matmul(t, t, out=t_out)
    for function in cases.values():
        function()  # first use loads the kernel and makes the plan: not part of the per-call cost
    medians = run.interleaved_medians(cases, args.batches, args.calls)
    bare = medians["calibration: the held launcher alone (pack + launch)"]
    print(f"per-call host overhead, noop backend, median of {args.batches} interleaved batches of {args.calls} calls")
    for name, value in medians.items():
        print(f"  {name:52} {value / 1000:6.2f} us  {value / bare:5.1f}x the launcher")


if __name__ == "__main__":
    main()
