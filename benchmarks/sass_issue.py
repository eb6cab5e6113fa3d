"""Instructions per term in the product kernels' k loops, read from their SASS.

    python benchmarks/sass_issue.py [--library tropical|PATH] [--arch 90] [--kernel TEXT]

Needs no GPU: NVIDIA's cuobjdump and nvdisasm (PyPI ``nvidia-cuda-cuobjdump``
and ``nvidia-cuda-nvdisasm``) disassemble the shipped fatbins.

For each forward and argmax kernel it finds the innermost loops that read
shared memory, which are the k loops, and divides their instruction count by
the terms one iteration folds: a thread's TM x TN tile times the k steps per
iteration, which is the bytes read from shared memory over (TM + TN) elements.

Issue 3's limit is one add and one max per term, two instructions: SMs x clock
x 128 / 2 terms per second. ``ceiling`` is 2 / (instructions per term), the
share of that limit a k loop could reach if it issued an instruction every
cycle on every lane. It is an upper bound read off the code, not a timing:
latency, occupancy and memory decide how close a GPU gets (ci/gpu-suite.sh).
Sm_90 can beat 100%: its DPX instruction VIADDMNMX adds and takes the max in
one.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aotc.semiring import DTYPES, Semiring  # noqa: E402  (the checkout's, not an installed one)

__all__ = ["k_loops", "main"]

# "/*17b0*/  @!P2 LDS.128 R12, [R103+-0x10] ;" -> address, opcode, operands
_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_TARGET = re.compile(r"0x([0-9a-f]+)")
_LDS_BYTES = {"LDS.128": 16, "LDS.64": 8, "LDS.U8": 1, "LDS.S8": 1, "LDS.U16": 2, "LDS.S16": 2}


def _tool(distribution: str, name: str) -> str:
    """The executable ``name`` from a PyPI distribution, else from PATH."""
    try:
        files = importlib.metadata.distribution(distribution).files or ()
        return str(next(f.locate() for f in files if f.name == name))
    except (importlib.metadata.PackageNotFoundError, StopIteration):
        found = shutil.which(name)
        if found is None:
            sys.exit(f"sass_issue: {name} not found: pip install {distribution}")
        return found


def k_loops(sass: str) -> list[tuple[int, int]]:
    """(instructions, shared-memory bytes read) per innermost loop that reads shared memory."""
    code = [(int(m[1], 16), m[2], m[3]) for m in _INSTRUCTION.finditer(sass)]
    # A loop is a branch back to an earlier address; its body is what lies between.
    loops = []
    for address, opcode, operands in code:
        target = _TARGET.search(operands) if opcode.startswith("BRA") else None
        if target and int(target[1], 16) < address:
            loops.append((int(target[1], 16), address))
    innermost = [(a, b) for a, b in loops if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in loops)]
    found = []
    for start, end in innermost:
        body = [opcode for address, opcode, _ in code if start <= address <= end]
        shared = sum(_LDS_BYTES.get(op, 4) for op in body if op.startswith("LDS"))
        if shared:
            found.append((len(body), shared))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", default="tropical", help="an installed library's name, or its folder")
    parser.add_argument("--arch", default="90", help="SASS architecture, e.g. 90 (default) or 80")
    parser.add_argument("--kernel", default="", help="only kernels whose name contains this")
    args = parser.parse_args(argv)

    folder = Path(args.library)
    if not (folder / "index.json").is_file():
        import aotc

        folder = aotc.load(args.library).directory
    index = json.loads((folder / "index.json").read_text())
    cuobjdump = _tool("nvidia-cuda-cuobjdump", "cuobjdump")
    nvdisasm = _tool("nvidia-cuda-nvdisasm", "nvdisasm")
    environment = {**os.environ, "PATH": f"{Path(nvdisasm).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # cuobjdump runs it

    print(f"SASS sm_{args.arch}, {index['library']} {index['aotc_version']}, nvcc {index['nvcc_version']}\n")
    print("| kernel | thread tile | plain tiles: instr/term (ceiling) | exact tiles: instr/term (ceiling) |")
    print("| --- | --- | --- | --- |")
    for name, kernel in sorted(index["kernels"].items()):
        if kernel["pass"] not in ("forward", "argmax") or args.kernel not in name:
            continue
        launch = kernel["launch"]
        tm = launch["grid"][1]["tile"] // launch["block"][1]
        tn = launch["grid"][0]["tile"] // launch["block"][0]
        spec = index["semirings"][kernel["semiring"]]
        semiring = Semiring(kernel["semiring"], spec["add"], spec["mul"], spec["zero"], spec["one"], spec.get("counting", False))
        dtype = DTYPES[kernel["dtype"]]
        command = [cuobjdump, "-sass", "-arch", f"sm_{args.arch}", str(folder / kernel["fatbin"]["file"])]
        sass = subprocess.run(command, capture_output=True, text=True, check=True, env=environment).stdout
        per_term = sorted(
            count / (shared / ((tm + tn) * semiring.element_size(dtype)) * tm * tn) for count, shared in k_loops(sass)
        )
        cells = [f"{x:.2f} ({2 / x:.0%})" for x in per_term]
        if len(cells) == 1:  # one k loop: no plain tiles (counting, bool, or a library built before them)
            cells = ["none", *cells]
        print(f"| {name} | {tm}x{tn} | {' | '.join(cells or ['no k loop found'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
