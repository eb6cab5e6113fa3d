"""Instructions per term in the product kernels' k loops, read from their SASS.

Shared by ``benchmarks/sass_issue.py`` (the report) and
``tests/build/test_sass_budget.py`` (the CI guard). Needs no GPU: NVIDIA's cuobjdump
and nvdisasm (PyPI ``nvidia-cuda-cuobjdump`` and ``nvidia-cuda-nvdisasm``)
disassemble the fatbins.

For each forward and argmax kernel it finds the innermost loops that read
shared memory, which are the k loops, and divides their instruction count by
the terms one iteration folds: a thread's TM x TN tile times the k steps per
iteration, which is the bytes read from shared memory over (TM + TN) elements.
Backward kernels use no shared memory; each term is one global write, so their
figure is instructions per write (``per_write``).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aotc.semiring import DTYPES, Semiring

__all__ = ["Tools", "find_tool", "find_tools", "k_loops", "kernel_details", "kernel_figures", "over_budget", "per_write", "tile_steps"]

# "/*17b0*/  @!P2 LDS.128 R12, [R103+-0x10] ;" -> address, opcode, operands
_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_TARGET = re.compile(r"0x([0-9a-f]+)")
# The same, with the guard kept: "@P0 BRA 0x10" and "BRA P1, 0x10" are conditional.
_GUARDED = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[0-6]\s+)?(?:@!?U?PT\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_PREDICATE = re.compile(r"\s*!?U?P[0-6]\s*,")
_WRITES = ("STG", "RED", "ATOM")
# cuobjdump -elf: a kernel's ".nv.info.<kernel>" section, then one record per parameter.
_INFO_SECTION = re.compile(r"\.nv\.info\.(\w+)")
_KPARAM = re.compile(r"Ordinal\s*:\s*0x([0-9a-f]+)\s+Offset\s*:\s*0x([0-9a-f]+)\s+Size\s*:\s*0x([0-9a-f]+)")
FIGURED_PASSES = ("forward", "argmax", "backward_a", "backward_b")
_WIDTHS = {"128": 16, "64": 8, "U16": 2, "S16": 2, "U8": 1, "S8": 1}


@dataclass(frozen=True)
class Tools:
    cuobjdump: str
    nvdisasm: str

    def sass(self, fatbin: Path, arch: str) -> str:
        """The SASS of ``fatbin`` for sm_``arch``; cuobjdump runs nvdisasm from PATH."""
        path = f"{Path(self.nvdisasm).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        command = [self.cuobjdump, "-sass", "-arch", f"sm_{arch}", str(fatbin)]
        return subprocess.run(command, capture_output=True, text=True, check=True, env={**os.environ, "PATH": path}).stdout

    def params(self, image: Path, arch: str | None = None) -> dict[str, list[tuple[int, int]]]:
        """(offset, size) of each kernel's parameters in order, from the
        EIATTR_KPARAM_INFO records of ``image`` (a cubin, or a fatbin's sm_``arch`` cubin)."""
        command = [self.cuobjdump, "-elf", *(["-arch", f"sm_{arch}"] if arch else []), str(image)]
        found: dict[str, dict[int, tuple[int, int]]] = {}
        kernel = None
        for line in subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines():
            section = _INFO_SECTION.fullmatch(line.strip())
            if section:
                kernel = section[1]
            record = _KPARAM.search(line)
            if record and kernel:
                found.setdefault(kernel, {})[int(record[1], 16)] = (int(record[2], 16), int(record[3], 16))
        return {name: [records[n] for n in sorted(records)] for name, records in found.items()}

    def registers(self, fatbin: Path, arch: str) -> int | None:
        """Registers per thread of the (one) kernel in ``fatbin`` at sm_``arch``."""
        command = [self.cuobjdump, "--dump-resource-usage", "-arch", f"sm_{arch}", str(fatbin)]
        found = re.search(r"REG:(\d+)", subprocess.run(command, capture_output=True, text=True, check=True).stdout)
        return int(found[1]) if found else None


def find_tool(distribution: str, name: str) -> str | None:
    """The executable ``name`` from a PyPI distribution, else from PATH."""
    try:
        files = importlib.metadata.distribution(distribution).files or ()
        return str(next(f.locate() for f in files if f.name == name))
    except (importlib.metadata.PackageNotFoundError, StopIteration):
        return shutil.which(name)


def find_tools() -> Tools | str:
    """The disassemblers, or a sentence saying which one is missing."""
    cuobjdump = find_tool("nvidia-cuda-cuobjdump", "cuobjdump")
    nvdisasm = find_tool("nvidia-cuda-nvdisasm", "nvdisasm")
    for found, distribution in ((cuobjdump, "nvidia-cuda-cuobjdump"), (nvdisasm, "nvidia-cuda-nvdisasm")):
        if found is None:
            return f"{distribution.rsplit('-', 1)[1]} not found: pip install {distribution}"
    return Tools(cuobjdump, nvdisasm)  # type: ignore[arg-type]


def _innermost_loops(code: list[tuple[int, str, str]]) -> list[tuple[int, int]]:
    """(first, last) address of each innermost loop of (address, opcode, operands)."""
    # A loop is a branch back to an earlier address; its body is what lies between.
    loops = []
    for address, opcode, operands in code:
        target = _TARGET.search(operands) if opcode.startswith("BRA") else None
        if target and int(target[1], 16) < address:
            loops.append((int(target[1], 16), address))
    return [(a, b) for a, b in loops if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in loops)]


def _bytes(opcode: str, prefix: str) -> int:
    """Bytes one load or store (LDS, STS, LDG) moves: its width's suffix
    (LDS.128, LDG.E.64.CONSTANT, sm_75's LDS.U.128), else 4."""
    if not opcode.startswith(prefix):
        return 0
    parts = opcode.split(".")[1:]
    return next((size for suffix, size in _WIDTHS.items() if suffix in parts), 4)


def _hot_path(code: list[tuple[int, str, str, bool]], start: int, end: int) -> tuple[int, int]:
    """(instructions, shared-memory bytes read) on one iteration's hot path.
    Of the paths from the loop's head to its back edge: those that store the
    most to shared memory (a tile loop's path that stages the next tile); of
    these, those that load the most from global memory (in range, not the
    pad's); of these, those with the fewest global loads (16 bytes at a time,
    not per element); of these, the longest, so a fold that branches counts
    its dearer side. A loop with no branch inside has one path: its body."""
    body = [(address, opcode, operands, conditional) for address, opcode, operands, conditional in code if start <= address <= end]
    at = {address: n for n, (address, *_) in enumerate(body)}
    # Per instruction, the best path reaching it: (stored, loaded, -loads, instructions, shared read).
    best: list[tuple[int, ...] | None] = [None] * len(body)
    best[0] = _step((0, 0, 0, 0, 0), body[0][1])
    for n, (address, opcode, operands, conditional) in enumerate(body[:-1]):
        if best[n] is None:
            continue
        target = _TARGET.search(operands) if opcode.startswith("BRA") else None
        successors = [] if target and not conditional else [n + 1]
        if target and address < int(target[1], 16) <= end and int(target[1], 16) in at:
            successors.append(at[int(target[1], 16)])
        for m in successors:
            candidate = _step(best[n], body[m][1])  # type: ignore[arg-type]
            if best[m] is None or candidate[:4] > best[m][:4]:  # type: ignore[index]
                best[m] = candidate
    *_, count, shared = best[-1] or (0, 0, 0, len(body), 0)
    return count, shared


def _step(path: tuple[int, ...], opcode: str) -> tuple[int, ...]:
    stored, loaded, loads, count, shared = path
    ldg = _bytes(opcode, "LDG")
    return stored + _bytes(opcode, "STS"), loaded + ldg, loads - (ldg > 0), count + 1, shared + _bytes(opcode, "LDS")


def k_loops(sass: str) -> list[tuple[int, int]]:
    """(instructions, shared-memory bytes read) per innermost loop that reads
    shared memory, both counted on the loop's hot path (``_hot_path``)."""
    code = [(int(m[1], 16), m[3], m[4], bool(m[2]) or bool(_PREDICATE.match(m[4]))) for m in _GUARDED.finditer(sass)]
    found = []
    for start, end in _innermost_loops([(a, op, operands) for a, op, operands, _ in code]):
        if any(op.startswith("LDS") for a, op, _, _ in code if start <= a <= end):
            found.append(_hot_path(code, start, end))
    return found


def per_write(sass: str) -> float:
    """Instructions per global write (STG, RED or ATOM) of a kernel with no
    shared memory, such as the backward passes, where a write is a term: those
    of its innermost loops that write, or of the whole kernel if none does."""
    code = [(int(m[1], 16), m[2], m[3]) for m in _INSTRUCTION.finditer(sass) if m[2] != "NOP"]
    innermost = _innermost_loops(code)
    bodies = [[op for address, op, _ in code if a <= address <= b] for a, b in innermost]
    bodies = [body for body in bodies if any(op.startswith(_WRITES) for op in body)] or [[op for _, op, _ in code]]
    # The unrolled loop, not its remainder: the body with the most writes.
    body = max(bodies, key=lambda body: sum(op.startswith(_WRITES) for op in body))
    return len(body) / sum(op.startswith(_WRITES) for op in body)


def thread_tile(kernel: dict[str, Any]) -> tuple[int, int]:
    """(TM, TN) of an index entry: block tile over threads per axis."""
    launch = kernel["launch"]
    return launch["grid"][1]["tile"] // launch["block"][1], launch["grid"][0]["tile"] // launch["block"][0]


def per_term(sass: str, kernel: dict[str, Any], semirings: dict[str, Any]) -> list[float]:
    """Instructions per term of each tile loop in ``sass``, smallest first:
    with plain tiles, the plain loop then the exact one. A loop unrolled over a
    tile's k steps is counted all in: its k steps, and the loads, stores and
    barrier that stage the next tile, on its hot path (``k_loops``). A rolled
    k loop is one k step (its tile's staging lies outside it)."""
    return _tile_loops(sass, kernel, semirings)[0]


def tile_steps(sass: str, kernel: dict[str, Any], semirings: dict[str, Any]) -> int:
    """The k steps one iteration of ``per_term``'s loops folds: BK where they
    are unrolled over a tile, 1 for a rolled k loop."""
    return round(_tile_loops(sass, kernel, semirings)[1])


def _tile_loops(sass: str, kernel: dict[str, Any], semirings: dict[str, Any]) -> tuple[list[float], float]:
    tm, tn = thread_tile(kernel)
    axes = kernel["axes"]
    spec = semirings[axes["semiring"]]
    semiring = Semiring(axes["semiring"], spec["add"], spec["mul"], spec["zero"], spec["one"], spec.get("counting", False))
    element = semiring.element_size(DTYPES[axes["dtype"]])
    per_step = 1  # terms per element and output
    if axes["variant"] == "packed":  # uint32 words of 32 k values
        element, per_step = 4, 32
    loops = [(count, shared / ((tm + tn) * element)) for count, shared in k_loops(sass)]
    # Loops unrolled over a tile's k steps (a plain and an exact one) fold
    # whole tiles; then the one-step loops of a last, partial tile (BK not
    # dividing K) run once per block and are left out. Otherwise every loop
    # counts (ptxas may unroll one k loop by 2 and not another).
    most = max((steps for _, steps in loops), default=0)
    tile_loops = [(count, steps) for count, steps in loops if steps == most]
    if len(tile_loops) < 2 or most == 1:
        tile_loops, most = loops, 1
    return sorted(count / (steps * tm * tn * per_step) for count, steps in tile_loops), most


def kernel_figures(folder: Path, arch: str, tools: Tools, names: list[str] | None = None) -> dict[str, list[float]]:
    """Per-term figures of the library's kernels (or ``names``) at sm_``arch``:
    the k loops of forward and argmax kernels, one ``per_write`` figure for a
    backward kernel."""
    return {name: figures for name, (figures, _, _) in kernel_details(folder, arch, tools, names, registers=False).items()}


def kernel_details(
    folder: Path, arch: str, tools: Tools, names: list[str] | None = None, *, registers: bool = True
) -> dict[str, tuple[list[float], int, int | None]]:
    """(``kernel_figures``' figures, k steps per loop iteration (``tile_steps``;
    1 for backward kernels), registers per thread or None) per kernel."""
    index = json.loads((folder / "index.json").read_text())
    chosen = {
        name: kernel
        for name, kernel in sorted(index["kernels"].items())
        if kernel["axes"]["pass"] in FIGURED_PASSES and (names is None or name in names)
    }

    def details(kernel: dict[str, Any]) -> tuple[list[float], int, int | None]:
        fatbin = folder / kernel["fatbin"]["file"]
        sass = tools.sass(fatbin, arch)
        regs = tools.registers(fatbin, arch) if registers else None
        if kernel["axes"]["pass"].startswith("backward"):
            return [per_write(sass)], 1, regs
        figures, steps = _tile_loops(sass, kernel, index["semirings"])
        return figures, round(steps), regs

    # Mostly waiting on cuobjdump: a few at a time.
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(chosen, pool.map(details, chosen.values())))


def over_budget(measured: dict[str, list[float]], budget: dict[str, list[float]], tolerance: float) -> list[str]:
    """One line per kernel whose k loops differ in number from ``budget`` or
    cost more than (1 + tolerance) times its figure; a budgeted kernel that was
    not measured is a line too."""
    problems = []
    for name, want in sorted(budget.items()):
        got = measured.get(name)
        if got is None:
            problems.append(f"{name}: not measured")
        elif len(got) != len(want):
            problems.append(f"{name}: {len(got)} k loops, budget has {len(want)} ({got} against {want})")
        else:
            worse = [f"{g:.2f} > {w:.2f}" for g, w in zip(got, want) if g > w * (1 + tolerance)]
            if worse:
                problems.append(f"{name}: instructions per term {', '.join(worse)} (+{tolerance:.0%} allowed)")
    return problems
