"""The shipped kernels stay within their recorded instructions per term: the
k loops of the products, the per-write cost of the backward kernels.

Reads the SASS of the library under test (the installed one, or
AOTC_TEST_LIBRARY) and holds every kernel of ``benchmarks/sass_budget.json`` to
its figure plus the tolerance there. A template change that makes a k loop
dearer fails here, with no GPU; re-record on purpose with
``python benchmarks/sass_issue.py --arch NN --update-budget``.
"""

from __future__ import annotations

import json
import os

import pytest
from sass_support import sass_tools

from aotc.build import sass as _sass
from aotc.index import LibraryIndex
from conftest import REPO, installed_library

BUDGET = json.loads((REPO / "benchmarks" / "sass_budget.json").read_text())


@pytest.mark.parametrize("arch", sorted(BUDGET["archs"]))
def test_k_loops_stay_within_budget(arch: str) -> None:
    library = installed_library()
    tools = sass_tools()
    index = json.loads((library / "index.json").read_text())
    budget = BUDGET["archs"][arch]
    missing = [name for name in budget if arch not in index["kernels"].get(name, {}).get("sass", ())]
    if missing:
        reason = f"{library} has no sm_{arch} SASS for {len(missing)} budgeted kernels, e.g. {missing[0]}"
        if os.environ.get("AOTC_REQUIRE_INSTALLED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    measured = _sass.kernel_figures(library, arch, tools, list(budget))
    problems = _sass.over_budget(measured, budget, BUDGET["tolerance"])
    assert not problems, f"sm_{arch}, {LibraryIndex.open(library).toolkit_label()} (budget from {BUDGET['nvcc']}):\n" + "\n".join(problems)


def test_every_product_kernel_has_a_budget_at_sm_90() -> None:
    kernels = json.loads((installed_library() / "index.json").read_text())["kernels"]
    # Batched kernels' k loops are the single ones' code.
    products = {n for n, k in kernels.items() if k["axes"]["pass"] in ("forward", "argmax") and k["axes"]["variant"] == "single"}
    assert products <= set(BUDGET["archs"]["90"]), sorted(products - set(BUDGET["archs"]["90"]))


def test_every_backward_kernel_has_a_budget_at_sm_80() -> None:
    # Deterministic backward kernels own a row or column each: a change that made
    # them dearer per term (or brought back a scatter) shows up here.
    kernels = json.loads((installed_library() / "index.json").read_text())["kernels"]
    backward = {n for n, k in kernels.items() if k["axes"]["pass"].startswith("backward") and k["axes"]["variant"] == "single"}
    assert backward and backward <= set(BUDGET["archs"]["80"]), sorted(backward - set(BUDGET["archs"]["80"]))


# The guard itself: it must be able to fail.
def test_a_worse_figure_fails() -> None:
    budget = {"gemm_x_forward": [2.0, 4.0]}
    assert _sass.over_budget({"gemm_x_forward": [2.2, 4.0]}, budget, 0.10) == []
    (line,) = _sass.over_budget({"gemm_x_forward": [2.0, 4.41]}, budget, 0.10)
    assert line.startswith("gemm_x_forward: instructions per term 4.41 > 4.00")


def test_a_changed_or_missing_loop_fails() -> None:
    budget = {"gemm_x_forward": [2.0, 4.0], "gemm_y_argmax": [5.0]}
    problems = _sass.over_budget({"gemm_x_forward": [2.0]}, budget, 0.10)
    assert problems == ["gemm_x_forward: 1 k loops, budget has 2 ([2.0] against [2.0, 4.0])", "gemm_y_argmax: not measured"]


# Two loops, one nested: only the innermost that reads shared memory counts.
SASS = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDS.128 R4, [R2] ;
        /*0020*/                   FADD R8, R4, R5 ;
        /*0030*/               @P0 BRA 0x10 ;
        /*0040*/                   LDS R4, [R2] ;
        /*0050*/                   FMNMX R9, R4, R8, !PT ;
        /*0060*/              @!P1 BRA 0x40 ;
        /*0070*/                   IADD3 R3, R3, 0x1, RZ ;
        /*0080*/                   BRA 0x0 ;
"""


def test_k_loops_reads_innermost_shared_memory_loops() -> None:
    assert _sass.k_loops(SASS) == [(3, 16), (3, 4)]


# A backward kernel: instructions per global write, in its unrolled loop (not
# the remainder), or over the whole kernel when it has no loop that writes.
BACKWARD_LOOP = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E R4, [R2] ;
        /*0020*/                   FADD R5, R4, R5 ;
        /*0030*/                   STG.E [R6], R5 ;
        /*0040*/                   STG.E [R8], R5 ;
        /*0050*/               @P0 BRA 0x10 ;
        /*0060*/                   LDG.E R4, [R2] ;
        /*0070*/                   STG.E [R6], R4 ;
        /*0080*/               @P1 BRA 0x60 ;
        /*0090*/                   EXIT ;
"""
BACKWARD_STRAIGHT = """
        /*0000*/                   LDG.E R4, [R2] ;
        /*0010*/                   RED.E.ADD.F32.FTZ.RN.STRONG.GPU [R6], R4 ;
        /*0020*/                   LDG.E R4, [R8] ;
        /*0030*/                   RED.E.ADD.F32.FTZ.RN.STRONG.GPU [R10], R4 ;
        /*0040*/                   EXIT ;
        /*0050*/                   BRA 0x50 ;
        /*0060*/                   NOP ;
"""


def test_per_write_counts_the_unrolled_loop_or_the_whole_kernel() -> None:
    assert _sass.per_write(BACKWARD_LOOP) == 5 / 2
    assert _sass.per_write(BACKWARD_STRAIGHT) == 6 / 2


# A tile loop: it may skip staging the next tile (the last one); it loads
# either 16 bytes at once or per element, or (a row past the matrix) sets the
# pad and loads nothing; and its fold branches (a dearer side of two IMADs).
# Its hot path stages the tile with the vector load and takes the fold's
# dearer side: 13 instructions, reading 16 bytes of shared memory.
TILE_LOOP = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDS.128 R4, [R2] ;
        /*0020*/                   FADD R8, R4, R5 ;
        /*0022*/               @P3 BRA 0x28 ;
        /*0024*/                   IMAD R8, R8, R8, RZ ;
        /*0026*/                   IMAD R8, R8, R8, RZ ;
        /*0028*/                   BSYNC B0 ;
        /*0030*/               @P0 BRA 0xb0 ;
        /*0040*/              @!P1 BRA 0x70 ;
        /*0050*/                   LDG.E.128 R12, [R10.64] ;
        /*0060*/                   BRA 0xa0 ;
        /*0070*/               @P4 BRA 0x98 ;
        /*0078*/                   LDG.E R12, [R10.64] ;
        /*0080*/                   LDG.E R13, [R10.64+0x4] ;
        /*0090*/                   LDG.E R14, [R10.64+0x8] ;
        /*0094*/                   BRA 0xa0 ;
        /*0098*/                   MOV R12, 0x7f7fffff ;
        /*009a*/                   MOV R13, 0x7f7fffff ;
        /*009c*/                   MOV R14, 0x7f7fffff ;
        /*009e*/                   MOV R15, 0x7f7fffff ;
        /*00a0*/                   STS.128 [R3], R12 ;
        /*00b0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*00c0*/                   BRA P2, 0x10 ;
        /*00d0*/                   EXIT ;
"""


def test_k_loops_counts_the_path_that_stages_the_next_tile() -> None:
    # Not the shortest path (no load, no store, no IMAD: 7), the per-element
    # one (16), the pad's (16, loading nothing), the cheap side of the fold
    # (11), nor the whole body (23).
    assert _sass.k_loops(TILE_LOOP) == [(13, 16)]


# Four loops: a plain and an exact tile loop unrolled over two k steps (64
# bytes at 4 x 4 f32 per thread), and the one-step loops of a last, partial tile.
UNROLLED = """
        /*0000*/                   LDS.128 R4, [R2] ;
        /*0010*/                   LDS.128 R8, [R2+0x10] ;
        /*0020*/                   LDS.128 R12, [R2+0x20] ;
        /*0030*/                   LDS.128 R16, [R2+0x30] ;
        /*0040*/                   FADD R20, R4, R8 ;
        /*0050*/               @P0 BRA 0x0 ;
        /*0060*/                   LDS.128 R4, [R2] ;
        /*0070*/                   LDS.128 R8, [R2+0x10] ;
        /*0080*/                   LDS.128 R12, [R2+0x20] ;
        /*0090*/                   LDS.128 R16, [R2+0x30] ;
        /*00a0*/                   FADD R20, R4, R8 ;
        /*00b0*/                   FMNMX R20, R4, R20, !PT ;
        /*00c0*/               @P0 BRA 0x60 ;
        /*00d0*/                   LDS.128 R4, [R2] ;
        /*00e0*/                   LDS.128 R8, [R2+0x10] ;
        /*00f0*/               @P1 BRA 0xd0 ;
        /*0100*/                   LDS.128 R4, [R2] ;
        /*0110*/                   LDS.128 R8, [R2+0x10] ;
        /*0120*/               @P1 BRA 0x100 ;
"""
KERNEL = {"launch": {"grid": [{"tile": 16}, {"tile": 16}], "block": [4, 4]}, "axes": {"semiring": "maxplus", "dtype": "f32", "variant": "single"}}
SEMIRINGS = {"maxplus": {"add": "max", "mul": "add", "zero": "-inf", "one": "0"}}


def test_per_term_reports_the_tile_loops() -> None:
    assert _sass.per_term(UNROLLED, KERNEL, SEMIRINGS) == [6 / (2 * 16), 7 / (2 * 16)]
    assert _sass.tile_steps(UNROLLED, KERNEL, SEMIRINGS) == 2


def test_per_term_keeps_every_loop_where_only_one_is_unrolled() -> None:
    # ptxas unrolled one k loop by 2 and not the other: both are k loops.
    one_unrolled = UNROLLED.split("        /*0060*/")[0] + "        /*00d0*/" + UNROLLED.split("        /*00d0*/")[1].split("        /*0100*/")[0]
    assert _sass.per_term(one_unrolled, KERNEL, SEMIRINGS) == [3 / 16, 6 / (2 * 16)]
    assert _sass.tile_steps(one_unrolled, KERNEL, SEMIRINGS) == 1


def test_shared_widths_read_at_every_arch() -> None:
    # sm_75 spells a 16-byte shared load LDS.U.128.
    assert _sass.k_loops(TILE_LOOP.replace("LDS.128", "LDS.U.128")) == [(13, 16)]
