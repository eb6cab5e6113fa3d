"""Instructions per call of aotc.tropical's host path, counted by callgrind.

    python benchmarks/call_instructions.py --library build/dev/aotc/tropical/lib [--tree PATH] [--cases step,eager] [--calls 1000]

Wall-clock medians on a shared machine move with its load; an instruction
count does not (valgrind counts the same total for the same binary, inputs
and environment). Each case runs in its own interpreter under
``valgrind --tool=callgrind --instr-atstart=no``: the import, the library's
load and 200 warm-up calls run uninstrumented, then ``callgrind_control``
turns counting on around ``--calls`` calls, and off again before the
interpreter exits. The figure is that count over the calls: PyTorch's and
NumPy's own work included, the interpreter's start and end not.

``--tree`` runs another checkout's aotc (the parent commit, say) with this
script, so both sides count the same cases. CPU tensors and the noop
backend, as ``torch_op_overhead.py`` times them; needs valgrind, no GPU.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# Each case: the statement whose calls are counted, over the names _child sets up.
CASES = {
    "launcher": "launcher(pa, pb, pc, 64, 64, 64, 64, 64, 64, *offsets)",
    "mm": "torch.mm(a, b)",
    "eager": "tropical.matmul(a, b)",
    "out": "tropical.matmul(a, b, out=c)",
    "stream": "tropical.matmul(a, b, stream=0)",
    "mm_step": "torch.mm(ga, gb).backward(grad)",
    "step": "tropical.matmul(ga, gb).backward(grad)",
    "mm_sum_step": "torch.mm(ga, gb).sum().backward()",
    "sum_step": "tropical.matmul(ga, gb).sum().backward()",
    "numpy_out": "tropical.matmul(na, nb, out=nc)",
    "backward": "tropical.matmul_backward(grad, k, a, b)",
    "numpy_backward": "tropical.matmul_backward(ngrad, nk, na, nb)",
    "numpy_stream": "tropical.matmul(na, nb, out=nc, stream=0)",
    "cupy": "tropical.matmul(ca, cb)",
    "cupy_stream": "tropical.matmul(ca, cb, stream=side)",
}


def _child(library: str, case: str, calls: int) -> None:
    import numpy as np
    import torch

    from aotc import tropical
    from aotc.runtime.backends.noop import NoopBackend
    from aotc.runtime.library import Library

    torch.set_num_threads(1)
    backend = NoopBackend()
    if case.startswith("cupy"):  # device arrays: a noop backend that says it runs on device memory, as a GPU's does
        backend = type("DeviceNoopBackend", (NoopBackend,), {"memory": "device"})()
    tropical.set_library(Library(library, backend=backend))
    a, b, c = torch.rand(16, 16), torch.rand(16, 16), torch.empty(16, 16)
    ga, gb, grad = a.clone().requires_grad_(), b.clone().requires_grad_(), torch.ones(16, 16)
    na, nb = np.random.rand(64, 64).astype(np.float32), np.random.rand(64, 64).astype(np.float32)
    nc = np.empty((64, 64), np.float32)
    # The bare launcher of the kernel matmul(na, nb, out=nc) launches, with those arrays' pointers.
    launcher = tropical.over(tropical._library()).library.kernel("gemm_maxplus_f32_forward")  # noqa: SLF001 - the module's library
    pa, pb, pc = (x.ctypes.data for x in (na, nb, nc))
    names = {"torch": torch, "tropical": tropical, "a": a, "b": b, "c": c, "ga": ga, "gb": gb, "grad": grad, "na": na, "nb": nb, "nc": nc}
    # The explicit backward's inputs: the argmax of each product, and a gradient of ones.
    names.update(k=tropical.matmul_argmax(a, b)[1], nk=tropical.matmul_argmax(na, nb)[1], ngrad=np.ones((64, 64), np.float32))
    # Its split offsets (a library with grids launched in parts declares one), each 0: one launch.
    offsets = (0,) * (len(launcher.signature.params) - 9)
    names.update(launcher=launcher, pa=pa, pb=pb, pc=pc, offsets=offsets)
    if case.startswith("cupy"):  # CUDA arrays: the emulator's CuPy stand-in (tests/tropical/emulated_cupy.py), 16x16 as the tensors
        names.update(_emulated_cupy())
    count_calls(CASES[case], names, case, calls)


def count_calls(statement: str, names: dict[str, Any], what: str, calls: int) -> None:
    """The child's side of ``per_call``: ``statement`` over ``names`` (a
    benchmark's own table's text) called 200 times uncounted, then ``calls``
    times with callgrind counting."""
    call = eval(compile(f"lambda: {statement}", what, "eval"), names)
    for _ in range(200):
        call()
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "--instr=on", pid], check=True, capture_output=True)
    for _ in range(calls):
        call()
    subprocess.run(["callgrind_control", "--instr=off", pid], check=True, capture_output=True)


def _emulated_cupy() -> dict[str, object]:
    """CuPy arrays and a stream of the emulator's stand-in, installed as ``cupy`` for the process."""
    import numpy as np

    sys.path.insert(0, str(REPO / "tests" / "tropical"))
    import emulated_cupy

    class Install:  # what install() asks of pytest's monkeypatch: for a process that ends here
        setitem = staticmethod(lambda mapping, key, value: mapping.__setitem__(key, value))

    cupy = emulated_cupy.install(Install())
    rng = np.random.default_rng(0)
    ca, cb = (cupy.asarray(rng.random((16, 16), np.float32)) for _ in range(2))
    return {"ca": ca, "cb": cb, "side": cupy.cuda.Stream(non_blocking=True).ptr}


def per_call(what: str, child: list[str], calls: int, env: dict[str, str] | None = None, cwd: Path | None = None) -> int:
    """Instructions per call of ``child`` (a Python command line that turns
    counting on around its ``calls`` calls), under callgrind; ``what`` names it
    in a failure."""
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null", sys.executable, *child]
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        msg = f"{what}: callgrind run failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}"
        raise SystemExit(msg)
    return int(found.group(1)) // calls


def count(library: str, case: str, calls: int, tree: Path) -> int:
    """Instructions per call of ``case``, run with ``tree``'s aotc."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    child = [__file__, "--child", "--library", library, "--cases", case, "--calls", str(calls)]
    return per_call(case, child, calls, env=env, cwd=tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="the tropical library folder (relative to --tree, or absolute)")
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout whose aotc runs (default: this one)")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = args.cases.split(",")
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        parser.error(f"--cases: unknown {unknown[0]!r}; one of {', '.join(CASES)}")
    if args.child:
        _child(args.library, cases[0], args.calls)
        return
    print(f"instructions per call (callgrind), {args.tree.resolve()}, {args.calls} calls a case")
    for case in cases:
        print(f"  {case:10} {CASES[case]:42} {count(args.library, case, args.calls, args.tree.resolve()):>9,}")


if __name__ == "__main__":
    main()
