"""Instructions of the pieces a tensor call through aotc.tropical is made of, counted by callgrind.

    python benchmarks/tensor_call_parts.py [--parts shape,stride,empty] [--calls 2000]

Each piece is a statement on two 16x16 CPU float tensors, run in its own
interpreter under ``valgrind --tool=callgrind --instr-atstart=no`` as
``call_instructions.py`` runs its cases: 200 calls uninstrumented, then
``--calls`` calls counted. ``nothing`` is the lambda alone, to take off the
others. Says where a tensor call's instructions go (benchmarks/RESULTS.md,
"Item 7 counted again on a new machine"); needs valgrind, no GPU.
"""

from __future__ import annotations

import argparse
import os
import subprocess

from call_instructions import per_call  # this folder: the script's own

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
}


def _child(part: str, calls: int) -> None:
    import torch

    from aotc.arrays.eager_checks import EAGER_TEXT, functions

    torch.set_num_threads(1)
    a, b = torch.rand(16, 16), torch.rand(16, 16)
    names = {"torch": torch, "a": a, "b": b, "f32": torch.float32, "cpu": torch.device("cpu"), **functions(torch)}
    names["eager"] = eval(compile(f"lambda: {EAGER_TEXT}", "eager", "eval"), names)  # the guards' own text
    call = eval(compile(f"lambda: {PARTS[part]}", part, "eval"), names)  # our own table's text
    for _ in range(200):
        call()
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "--instr=on", pid], check=True, capture_output=True)
    for _ in range(calls):
        call()
    subprocess.run(["callgrind_control", "--instr=off", pid], check=True, capture_output=True)


def count(part: str, calls: int) -> int:
    return per_call(part, [__file__, "--child", part, "--calls", str(calls)], calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated: " + ", ".join(PARTS))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.calls)
        return
    parts = args.parts.split(",")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)} (known: {', '.join(PARTS)})")
    base = count("nothing", args.calls)
    print(f"instructions per call (callgrind), {args.calls} calls a part, less the lambda's own {base:,}")
    for part in parts:
        if part != "nothing":
            print(f"  {part:14s} {PARTS[part]:70.70s} {count(part, args.calls) - base:>8,}")


if __name__ == "__main__":
    main()
