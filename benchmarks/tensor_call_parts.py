"""Instructions of the pieces a tensor or NumPy call through aotc.tropical is made of, counted by callgrind.

    python benchmarks/tensor_call_parts.py [--parts shape,stride,empty] [--calls 2000] [--library build/dev/aotc/tropical/lib]

Each piece is a statement on two 16x16 CPU float tensors, run in its own
interpreter under ``valgrind --tool=callgrind --instr-atstart=no`` as
``call_instructions.py`` runs its cases: 200 calls uninstrumented, then
``--calls`` calls counted. ``nothing`` is the lambda alone, to take off the
others. Says where a tensor call's instructions go (benchmarks/RESULTS.md,
"Item 7 counted again on a new machine"), and a NumPy ``out=`` call's: the
``numpy_*`` parts run ``tropical.matmul(na, nb, out=nc)`` on 64x64 f32
arrays with the noop backend, entered at each of its layers (the public
function, the layout's entry, the guard its plan key is built in, the plan
the guard runs), beside the bare launcher of its kernel and the key's own
pieces. Needs valgrind, no GPU.
"""

from __future__ import annotations

import argparse
from typing import Any

from call_instructions import count_calls, per_call  # this folder: the script's own

# Each piece: a statement over the names _child sets up.
PARTS = {
    "nothing": "None",
    "shape": "a.shape",
    "stride": "a.stride()",
    "dtype": "a.dtype",
    "device": "a.device",
    "is_neg": "a.is_neg()",
    "requires_grad": "a.requires_grad",
    "data_ptr": "a.data_ptr()",
    "tensor_facts": "(a.shape, a.stride(), a.dtype, a.device, a.is_neg(), b.shape, b.stride(), b.dtype, b.device, b.is_neg())",
    "empty": "torch.empty(16, 16, dtype=f32, device=cpu)",
    "empty_bare": "torch.empty(16, 16)",
    "new_empty": "a.new_empty(16, 16)",
    "eager_checks": "eager()",
    "is_compiling": "torch.compiler.is_compiling()",
    "mm": "torch.mm(a, b)",
    "launcher": "launcher(pa, pb, pc, 64, 64, 64, 64, 64, 64, *offsets)",
    "numpy_matmul": "tropical.matmul(na, nb, out=nc)",
    "numpy_entry": "entry(na, nb, out=nc, semiring='maxplus')",
    "numpy_guard": "guard(na, nb, nc, 'maxplus')",
    "numpy_plan": "plan(na, nb, nc)",
    "numpy_key_reads": "(na.shape, na.strides, na.dtype, nb.shape, nb.strides, nb.dtype, nc.shape, nc.strides, nc.dtype)",
    "numpy_key_hash": "hash(key)",
    "numpy_writeable": "nc.flags.writeable",
}


def _numpy_call(library: str) -> dict[str, Any]:
    """``tropical.matmul(na, nb, out=nc)``'s layers after its first calls, and its kernel's bare launcher."""
    import numpy as np

    from aotc import tropical
    from aotc.runtime.backends.noop import NoopBackend
    from aotc.runtime.library import Library

    tropical.set_library(Library(library, backend=NoopBackend()))
    na, nb = (np.random.default_rng(seed).random((64, 64), np.float32) for seed in (0, 1))
    nc = np.empty((64, 64), np.float32)
    for _ in range(3):
        tropical.matmul(na, nb, out=nc)
    api = tropical.over(tropical._library())  # noqa: SLF001 - the module's library
    layout = api._forward  # noqa: SLF001 - its forward layout
    plans = layout.plans.plans
    plan = next(value for key, value in plans.items() if key[0] == "numpy")  # the one plan the calls made
    launcher = api.library.kernel("gemm_maxplus_f32_forward")
    offsets = (0,) * (len(launcher.signature.params) - 9)  # its split offsets, each 0: one launch
    key = next(key for key in plans if key[0] == "numpy")
    names = {"tropical": tropical, "na": na, "nb": nb, "nc": nc, "entry": layout.entry, "guard": layout.entry.guards[id(np.ndarray)]}
    names.update(plan=plan, launcher=launcher, offsets=offsets, key=key, pa=na.ctypes.data, pb=nb.ctypes.data, pc=nc.ctypes.data)
    return names


def _child(part: str, calls: int, library: str) -> None:
    import torch

    from aotc.arrays.eager_checks import EAGER_TEXT, functions

    torch.set_num_threads(1)
    a, b = torch.rand(16, 16), torch.rand(16, 16)
    names = {"torch": torch, "a": a, "b": b, "f32": torch.float32, "cpu": torch.device("cpu"), **functions(torch)}
    names["eager"] = eval(compile(f"lambda: {EAGER_TEXT}", "eager", "eval"), names)  # the guards' own text
    if part == "launcher" or part.startswith("numpy_"):
        names.update(_numpy_call(library))
    count_calls(PARTS[part], names, part, calls)


def count(part: str, calls: int, library: str) -> int:
    return per_call(part, [__file__, "--child", part, "--calls", str(calls), "--library", library], calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated: " + ", ".join(PARTS))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--library", default="build/dev/aotc/tropical/lib", help="the tropical library the numpy_* parts load")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.calls, args.library)
        return
    parts = args.parts.split(",")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)} (known: {', '.join(PARTS)})")
    base = count("nothing", args.calls, args.library)
    print(f"instructions per call (callgrind), {args.calls} calls a part, less the lambda's own {base:,}")
    for part in parts:
        if part != "nothing":
            print(f"  {part:14s} {PARTS[part]:70.70s} {count(part, args.calls, args.library) - base:>8,}")


if __name__ == "__main__":
    main()
