"""Host time of one tropical product on PyTorch tensors through the aotc::
custom ops, against torch.mm on the same shapes, through the noop backend.

The noop backend launches nothing, so an aotc row is aotc's own call path
(plus the op dispatch, where the call needs the dispatcher: an eager call on
plain tensors that autograd does not record skips it, ``aotc.arrays.torch_direct``); torch.mm on CPU tensors this small is mostly its own
dispatch too (a 16x16 f32 product is ~4k flops). "call path, no op" is the
same product with stream= another stream than torch's current one, which
skips the op: the difference is what the op costs. Cases run interleaved, batch by batch, so drift in machine load
hits them alike. Reported: the median over batches of the mean time per call.
A training step is one product while autograd records plus its backward(), given
the gradient (`.backward(g)`) or from `.sum()` (an expanded gradient, strides (0, 0)).

    python benchmarks/torch_op_overhead.py [--library DIR] [--size 16] [--batches 30] [--calls 2000]
    python benchmarks/torch_op_overhead.py --gpu     # CUDA tensors, the real backend, a GPU

With ``--gpu`` the tensors are on the GPU and the kernels really run: each
batch ends with ``torch.cuda.synchronize()``, inside its time, so a row is
what a caller waits for per call, whichever of host or GPU is the bottleneck.
The calibration rows (CPU-only ops) are left out there.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from run import REPO  # noqa: F401 - puts this checkout's aotc first on sys.path

import aotc
import aotc.kernels
from aotc import tropical
from aotc.runtime.backends.noop import NoopBackend
from aotc.runtime.library import Library


def floor_op() -> Callable[..., object]:
    """A custom op registered with torch.library.custom_op (fake, autograd), as
    aotc's were before they moved to Library.define/impl, whose kernel only
    allocates its result: what custom_op costs by itself."""

    @torch.library.custom_op("aotc_benchmark::allocate", mutates_args=())
    def allocate(a: torch.Tensor, b: torch.Tensor, semiring: str, library: str) -> torch.Tensor:
        return a.new_empty(a.shape[0], b.shape[1])

    allocate.register_fake(lambda a, b, semiring, library: a.new_empty(a.shape[0], b.shape[1]))
    allocate.register_autograd(lambda ctx, grad: (grad, grad, None, None))
    return torch.ops.aotc_benchmark.allocate


def floor_low_level_op() -> Callable[..., object]:
    """The same op through torch.library.Library's define/impl, no autograd
    and no custom_op wrapper: the dispatcher's floor for a Python kernel."""
    library = torch.library.Library("aotc_benchmark", "FRAGMENT")
    library.define("allocate_low(Tensor a, Tensor b, str semiring, str library) -> Tensor")
    library.impl("allocate_low", lambda a, b, semiring, key: a.new_empty(a.shape[0], b.shape[1]), "CPU")
    floor_low_level_op.keep = library  # the registration lasts while the Library object does
    return torch.ops.aotc_benchmark.allocate_low


class _Identity(torch.autograd.Function):
    """A Python autograd.Function that computes nothing: any Python backward
    (aotc's, or any custom op's registered autograd) pays at least this."""

    @staticmethod
    def forward(ctx: object, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a.new_empty(a.shape[0], b.shape[1])

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad, grad


def interleaved_medians(
    cases: dict[str, Callable[[], object]], batches: int, calls: int, settle: Callable[[], object] = lambda: None
) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(batches):
        for name, function in cases.items():
            settle()
            start = time.perf_counter_ns()
            for _ in range(calls):
                function()
            settle()
            samples[name].append((time.perf_counter_ns() - start) / calls)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=str(aotc.library_dir("tropical")))
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--gpu", action="store_true", help="CUDA tensors through the real backend (needs a GPU)")
    args = parser.parse_args()
    device = "cuda" if args.gpu else "cpu"
    tropical.set_library(Library(args.library) if args.gpu else Library(args.library, backend=NoopBackend()))
    torch.set_num_threads(1)
    n = args.size
    a, b, out = torch.rand(n, n, device=device), torch.rand(n, n, device=device), torch.empty(n, n, device=device)
    ga, gb = a.clone().requires_grad_(), b.clone().requires_grad_()
    grad = torch.ones(n, n, device=device)  # the gradient a step's backward() starts from (grads accumulate into ga, gb)
    key = "tropical"  # the calibration ops' str argument, as an op's library name
    # A stream other than torch's current one takes the call path, not the op: on
    # CPU tensors any handle does; on a GPU, a side stream (settle syncs it too).
    foreign = torch.cuda.Stream().cuda_stream if args.gpu else 0
    tropical.matmul(a, b)  # loads the kernel: not part of a call
    aotc.kernels.over(tropical._library()).torch_ops()  # noqa: SLF001 - the ops, for the direct op row
    cases: dict[str, Callable[[], object]] = {}
    if not args.gpu:
        allocate, allocate_low = floor_op(), floor_low_level_op()
        cases["calibration: a custom op that only allocates"] = lambda: allocate(a, b, "maxplus", key)
        cases["calibration: the same through Library.define/impl"] = lambda: allocate_low(a, b, "maxplus", key)
        cases["calibration: torch.empty(n, n)"] = lambda: torch.empty(n, n)
        cases["calibration: training step, an empty autograd.Function"] = lambda: _Identity.apply(ga, gb).backward(grad)
    cases |= {
        "torch.mm(a, b)": lambda: torch.mm(a, b),
        "torch.mm(a, b, out=c)": lambda: torch.mm(a, b, out=out),
        "tropical.matmul(a, b): eager, past the dispatcher": lambda: tropical.matmul(a, b),
        "tropical.matmul(a, b, out=c): eager, past the dispatcher": lambda: tropical.matmul(a, b, out=out),
        "torch.ops.tropical.gemm_forward, called directly": lambda: torch.ops.tropical.gemm_forward(a, b, semiring="maxplus"),
        "call path, no op: matmul(a, b, stream=s)": lambda: tropical.matmul(a, b, stream=foreign),
        "call path, no op, out=c": lambda: tropical.matmul(a, b, out=out, stream=foreign),
        "torch.mm(ga, gb), recording autograd": lambda: torch.mm(ga, gb),
        "tropical.matmul(ga, gb): argmax op + autograd": lambda: tropical.matmul(ga, gb),
        "training step: torch.mm(ga, gb).backward(g)": lambda: torch.mm(ga, gb).backward(grad),
        "training step: tropical.matmul(ga, gb).backward(g)": lambda: tropical.matmul(ga, gb).backward(grad),
        # The step most training code takes: the loss's backward hands an expanded gradient (strides (0, 0)).
        "training step: torch.mm(ga, gb).sum().backward()": lambda: torch.mm(ga, gb).sum().backward(),
        "training step: tropical.matmul(ga, gb).sum().backward()": lambda: tropical.matmul(ga, gb).sum().backward(),
    }
    for function in cases.values():
        function()
    settle = torch.cuda.synchronize if args.gpu else lambda: None
    medians = interleaved_medians(cases, args.batches, args.calls, settle)
    if args.gpu:
        where = f"CUDA tensors on {torch.cuda.get_device_name()}, backend {tropical._api().library.backend.name}"  # noqa: SLF001
    else:
        where = "CPU tensors, noop backend"
    print(f"per-call time, {n}x{n} f32 {where}, torch {torch.__version__}, one thread,")
    print(f"median of {args.batches} interleaved batches of {args.calls} calls")
    for name, value in medians.items():
        print(f"  {name:56} {value / 1000:7.2f} us")
    matmul = medians["tropical.matmul(a, b): eager, past the dispatcher"] / medians["torch.mm(a, b)"]
    step = medians["training step: tropical.matmul(ga, gb).backward(g)"] / medians["training step: torch.mm(ga, gb).backward(g)"]
    summed = medians["training step: tropical.matmul(ga, gb).sum().backward()"] / medians["training step: torch.mm(ga, gb).sum().backward()"]
    streamed = medians["call path, no op: matmul(a, b, stream=s)"] / medians["tropical.matmul(a, b): eager, past the dispatcher"]
    print(f"  ratio tropical.matmul / torch.mm: {matmul:.2f}x (target <= 2.0x); training step: {step:.2f}x (target <= 1.5x)")
    print(f"  .sum().backward() step: {summed:.2f}x (target <= 2.0x); stream= / the current stream's call: {streamed:.2f}x (target <= 1.5x)")
    if not args.gpu:
        empty = medians["calibration: training step, an empty autograd.Function"] / medians["training step: torch.mm(ga, gb).backward(g)"]
        print(f"  floor: a training step through an empty Python autograd.Function is {empty:.2f}x torch.mm's")


if __name__ == "__main__":
    main()
