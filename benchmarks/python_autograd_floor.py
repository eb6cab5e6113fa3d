"""What any differentiable op written in Python costs PyTorch, beside ``torch.mm``, counted by callgrind.

    python benchmarks/python_autograd_floor.py [--cases mm_step,function_step,custom_op_step] [--calls 2000]

Issue 38's item 7 asks a ``tropical.matmul(a, b).backward(g)`` step for at
most 1.5x the instructions of ``torch.mm(a, b).backward(g)``. This measures
the floor under that ratio for an op whose autograd is Python's, whatever it
launches: ``torch.mm`` itself wrapped the two ways PyTorch offers, an
``autograd.Function`` with ``setup_context`` and a ``torch.library.custom_op``
with ``register_autograd`` (aotc's ops are the second kind), each doing
exactly ``torch.mm``'s math and nothing of its own. Each case runs in its own
interpreter as ``call_instructions.py`` runs its cases (200 calls
uninstrumented, then ``--calls`` counted); 16x16 CPU float tensors. Needs
valgrind, no GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from call_instructions import count_calls, per_call  # this folder: the script's own

CASES = {
    "mm": "torch.mm(a, b)",
    "function": "Mm.apply(a, b)",
    "custom_op": "mm_op(a, b)",
    "mm_step": "torch.mm(ga, gb).backward(grad)",
    "function_step": "Mm.apply(ga, gb).backward(grad)",
    "custom_op_step": "mm_op(ga, gb).backward(grad)",
}


def _wrapped_mm(torch: Any) -> dict[str, Any]:
    """``torch.mm`` as an ``autograd.Function`` and as a custom op, each with mm's own gradient."""

    class Mm(torch.autograd.Function):
        @staticmethod
        def forward(x: Any, y: Any) -> Any:
            return torch.mm(x, y)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx: Any, g: Any) -> tuple[Any, Any]:
            x, y = ctx.saved_tensors
            return torch.mm(g, y.t()), torch.mm(x.t(), g)

    @torch.library.custom_op("autograd_floor::mm", mutates_args=(), schema="(Tensor x, Tensor y) -> Tensor")
    def mm_op(x: Any, y: Any) -> Any:
        return torch.mm(x, y)

    @mm_op.register_fake
    def _(x: Any, y: Any) -> Any:
        return x.new_empty(x.shape[0], y.shape[1])

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(*inputs)

    mm_op.register_autograd(Mm.backward, setup_context=setup_context)
    return {"Mm": Mm, "mm_op": mm_op}


def _child(case: str, calls: int) -> None:
    import torch

    torch.set_num_threads(1)
    a, b = torch.rand(16, 16), torch.rand(16, 16)
    names = {"torch": torch, "a": a, "b": b, "grad": torch.ones(16, 16), **_wrapped_mm(torch)}
    names.update(ga=a.clone().requires_grad_(), gb=b.clone().requires_grad_())
    count_calls(CASES[case], names, case, calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = args.cases.split(",")
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        parser.error(f"--cases: unknown {unknown[0]!r}; one of {', '.join(CASES)}")
    if args.child:
        _child(cases[0], args.calls)
        return
    print(f"instructions per call (callgrind), {args.calls} calls a case")
    for case in cases:
        child = [__file__, "--child", "--cases", case, "--calls", str(args.calls)]
        print(f"  {case:15} {CASES[case]:34} {per_call(case, child, args.calls, env={**os.environ}):>9,}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
