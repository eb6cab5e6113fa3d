"""Instructions per term in the product kernels' k loops, read from their SASS.

    python benchmarks/sass_issue.py [--library tropical|PATH] [--arch 90] [--kernel TEXT] [--update-budget]

Needs no GPU: NVIDIA's cuobjdump and nvdisasm (PyPI ``nvidia-cuda-cuobjdump``
and ``nvidia-cuda-nvdisasm``) disassemble the shipped fatbins. The counting
lives in ``aotc/build/sass.py``, shared with the CI guard ``tests/build/test_sass_budget.py``;
``--update-budget`` writes this arch's figures (single variants only) into
``benchmarks/sass_budget.json``, the table that guard holds the kernels to.

A loop is counted on its hot path: the path that stages the next tile (its
16-byte loads, not their per-element fallback). Float kernels unroll a full
tile's k steps, so their figure is all in: the fold, and the next tile's
loads, stores, vote and barrier. Integer and counting kernels keep a rolled
k loop, counted per k step. ``regs`` is registers per thread
(``cuobjdump --dump-resource-usage``): at most 128 lets two 256-thread blocks
share an SM.

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
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aotc.build import sass as _sass  # noqa: E402  (the checkout's, not an installed one)
from aotc.index import LibraryIndex  # noqa: E402

__all__ = ["BUDGET", "main"]

BUDGET = REPO / "benchmarks" / "sass_budget.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", default="tropical", help="an installed library's name, or its folder")
    parser.add_argument("--arch", default="90", help="SASS architecture, e.g. 90 (default) or 80")
    parser.add_argument("--kernel", default="", help="only kernels whose name contains this")
    parser.add_argument("--update-budget", action="store_true", help=f"record these figures in {BUDGET.name}")
    args = parser.parse_args(argv)

    folder = Path(args.library)
    if not (folder / "index.json").is_file():
        import aotc

        folder = aotc.load(args.library).directory
    tools = _sass.find_tools()
    if isinstance(tools, str):
        sys.exit(f"sass_issue: {tools}")
    index = json.loads((folder / "index.json").read_text())
    names = [name for name in index["kernels"] if args.kernel in name]
    details = _sass.kernel_details(folder, args.arch, tools, names)
    figures = {name: figures for name, (figures, _, _) in details.items()}

    print(f"SASS sm_{args.arch}, {index['library']} {index['aotc_version']}, {LibraryIndex.open(folder).toolkit_label()}\n")
    # "loop": what one counted iteration folds. "8 k steps": the loop is unrolled
    # over a tile's 8 k steps and counted all in (the next tile's loads, stores
    # and barrier too); "k step": a rolled k loop, its tile's staging outside it.
    print("| kernel | thread tile | regs | loop | plain tiles: instr/term (ceiling) | exact tiles: instr/term (ceiling) |")
    print("| --- | --- | --- | --- | --- | --- |")
    products = {name: f for name, f in figures.items() if not index["kernels"][name]["axes"]["pass"].startswith("backward")}
    for name, per_term in products.items():
        tm, tn = _sass.thread_tile(index["kernels"][name])
        cells = [f"{x:.2f} ({2 / x:.0%})" for x in per_term]
        if len(cells) == 1 and index["kernels"][name]["axes"]["dtype"] == "bool":
            cells = [*cells, "none (every tile plain)"]
        elif len(cells) == 1:  # one k loop: no plain tiles (or a library built before them)
            cells = ["none", *cells]
        _, steps, regs = details[name]
        loop = "k step" if steps == 1 else f"{steps} k steps"
        print(f"| {name} | {tm}x{tn} | {regs if regs is not None else '?'} | {loop} | {' | '.join(cells or ['no k loop found'])} |")

    backward = {name: f for name, f in figures.items() if name not in products}
    if backward:
        # One thread owns a row of grad_A or a column of grad_B and walks it; a term is one global write.
        print("\n| backward kernel | regs | instr/term (per global write) |\n| --- | --- | --- |")
        for name, (per_write,) in backward.items():
            print(f"| {name} | {details[name][2]} | {per_write:.2f} |")

    if args.update_budget:
        budget = json.loads(BUDGET.read_text()) if BUDGET.is_file() else {}
        budget.setdefault("tolerance", 0.10)
        # Batched kernels share their k loops' code with the single ones: CI time
        # is better spent on another arch.
        chosen = {name: f for name, f in figures.items() if not name.endswith("_batched")}
        # An arch already budgeted keeps its kernels (each one more is CI time); a new arch gets them all.
        kept = budget.get("archs", {}).get(args.arch)
        chosen = {name: f for name, f in chosen.items() if kept is None or name in kept}
        budget.setdefault("archs", {})[args.arch] = {name: [round(x, 3) for x in f] for name, f in chosen.items()}
        budget["nvcc"] = index["toolkit"]["version"]
        text = json.dumps(budget, indent=1, sort_keys=True)
        BUDGET.write_text(re.sub(r"\[\s+([^\]]*?)\s+\]", lambda m: "[" + " ".join(m[1].split()) + "]", text) + "\n")
        print(f"\nrecorded sm_{args.arch} in {BUDGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
