"""Idioms that are right on every GPU since sm_75, written as a newcomer to
the emulator would write them, run clean under AOTC_EMULATOR_CHECK=all and
give the right result; a real bug of each kind is still named
(emulator_kernels/idioms.cu). They run in one child process with
AddressSanitizer first, as the memory check needs, and one build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import aotc_env, first_fault

from aotc.runtime.emulator.checks import asan_environment

KERNELS = Path(__file__).parent / "emulator_kernels"

# Each launch prints "<kernel> right", "<kernel> WRONG" or its fault.
SCRIPT = """
import ctypes
import numpy as np
from aotc.errors import KernelFaultError
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes

symbols = {symbols!r}
library = load_library_bytes(compile_library_bytes({path!r}, symbols, source_name="idioms.cu"))
p, I = lambda a: ctypes.c_void_p(a.ctypes.data), ctypes.c_int
rng = np.random.default_rng(0)

def run(name, grid, block, shared, args, right=lambda: True):
    try:
        library.launch(name, grid, block, shared, args)
        print(name, "right" if right() else "WRONG")
    except KernelFaultError as error:
        print(error)

x = rng.standard_normal(5000).astype(np.float32); out = np.zeros(1, np.float32)
run("tree_sum", 7, 256, 0, [p(x), p(out), I(5000)], lambda: np.isclose(out[0], x.sum(), atol=1e-3))
xi = rng.integers(-9, 9, 1024).astype(np.int32); sums = np.zeros(4, np.int32)
run("xor_block_sum", 4, 256, 0, [p(xi), p(sums)], lambda: (sums == xi.reshape(4, 256).sum(1)).all())

pred = (rng.random(64) < 0.4) * rng.integers(1, 9, 64).astype(np.int32)
ballots, anys, alls = np.zeros(2, np.uint32), np.zeros(2, np.int32), np.zeros(2, np.int32)
active, groups, compact, count = np.zeros(64, np.uint32), np.zeros(64, np.uint32), np.full(64, -1, np.int32), np.zeros(1, np.int32)
def votes_right():
    bits = [sum(1 << lane for lane in range(32) if pred[32 * w + lane]) for w in range(2)]
    same_key = [sum(1 << m for m in range(32) if pred[32 * (t // 32) + m] % 4 == pred[t] % 4) for t in range(64)]
    return (list(ballots) == bits and list(anys) == [b != 0 for b in bits] and list(alls) == [b == 2**32 - 1 for b in bits]
            and all(active[t] == (bits[t // 32] if pred[t] else 0) for t in range(64)) and list(groups) == same_key
            and sorted(compact[: count[0]]) == list(np.flatnonzero(pred)))
run("votes", 1, 64, 0, [p(pred), p(ballots), p(anys), p(alls), p(active), p(groups), p(compact), p(count)], votes_right)

n = 10000; data = rng.integers(0, 256, n).astype(np.uint8); f = rng.standard_normal(n).astype(np.float32)
bins, fmax, isum, fsum = np.zeros(256, np.uint32), np.array([-np.inf], np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32)
run("histo", 8, 128, 0, [p(data), I(n), p(bins), p(fmax), p(f), p(isum), p(fsum)],
    lambda: (bins == np.bincount(data, minlength=256)).all() and fmax[0] == f.max() and isum[0] == n and fsum[0] == n / 2)

xf = rng.standard_normal(400).astype(np.float32); k = rng.integers(0, 9, 400).astype(np.int32)
y, z, h = np.zeros_like(xf), np.zeros_like(k), rng.standard_normal(200).astype(np.float16); hout = np.zeros_like(h)
want_z = k.copy(); want_z[0::4] += k[0::4]
want_h = (h.astype(np.float32) * 2 + (h * h).astype(np.float32)).astype(np.float16)
run("vec", 2, 64, 0, [p(xf), p(k), p(y), p(z), p(h), p(hout), I(100)],
    lambda: (y == 2 * xf).all() and (z == want_z).all() and np.allclose(hout, want_h, rtol=2e-3, atol=2e-3))

tile, tiles, threads = 64, 5, 96; xt = rng.standard_normal(tile * tiles).astype(np.float32)
keys, acc = rng.integers(0, 50, tile).astype(np.int32), np.zeros(threads, np.float32)
want_acc = [sum(xt[s * tile + (t + keys[t % tile]) % tile] for s in range(tiles)) for t in range(threads)]
run("dyn_views", 1, threads, 2 * tile * 4 + tile * 4 + threads * 8, [p(xt), p(keys), p(acc), I(tile), I(tiles)],
    lambda: np.allclose(acc, want_acc, atol=1e-4))

xr, partial, total = rng.standard_normal(1000).astype(np.float32), np.zeros(8, np.float32), np.zeros(1, np.float32)
for _ in range(2):  # the last block resets the ticket for the next launch
    run("fence_reduce", 8, 128, 0, [p(xr), p(partial), p(total), I(1000)], lambda: np.isclose(total[0], xr.sum(), atol=1e-3))
xe, shifted = rng.standard_normal(300).astype(np.float32), np.zeros(300, np.float32)
run("early_exit", 3, 128, 0, [p(xe), p(shifted), I(300)],
    lambda: (shifted == np.concatenate([np.roll(xe[i : i + 128], -1) for i in range(0, 300, 128)])).all())
cell, flag, seen = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
run("flag_handoff", 1, 64, 0, [p(cell), p(flag), p(seen)], lambda: seen[0] == 42)
bits, misc = rng.integers(0, 2, 64).astype(np.int32), np.zeros(64, np.int32)
run("misc", 1, 64, 0, [p(bits), p(misc)], lambda: list(misc) == [bits.sum() + bits[:32].sum()] * 32 + [bits.sum() + bits[32:].sum()] * 32)

ins, outs, floats = np.arange(64, dtype=np.int32), np.zeros(64, np.int32), np.zeros(16, np.float32)
run("bug_missing_barrier", 1, 64, 0, [p(ins), p(outs)])
run("bug_one_past", 1, 32, 0, [p(floats), I(16)])
run("bug_unwritten_shared", 1, 64, 0, [p(outs)])
run("bug_divergent_barrier", 1, 64, 0, [p(ins), p(outs)])
run("bug_lockstep_reduction", 1, 64, 0, [p(ins), p(outs)])
"""

IDIOMS = ["tree_sum", "xor_block_sum", "votes", "histo", "vec", "dyn_views", "fence_reduce", "fence_reduce", "early_exit", "flag_handoff", "misc"]
BUGS = {
    "bug_missing_barrier": "race check: write after read: block (0, 0, 0) thread (32, 0, 0) writes shared bug_missing_barrier::s + 128 bytes (of 256), which thread (31, 0, 0) read since the last __syncthreads (idioms.cu:197)",
    "bug_one_past": "memory check: out of bounds: block (0, 0, 0) thread (16, 0, 0) writes 4 bytes at argument out + 64 bytes (its allocation ends at out + 64) (idioms.cu:204)",
    "bug_unwritten_shared": "init check: uninitialized read: block (0, 0, 0) thread (1, 0, 0) reads shared bug_unwritten_shared::s + 0 bytes (of 256), which no thread of the block has written (idioms.cu:212)",
    "bug_divergent_barrier": "sync check: divergent barrier: in block (0, 0, 0), thread (40, 0, 0) waits at the __syncthreads of idioms.cu:221 while thread (0, 0, 0) waits at idioms.cu:219",
    "bug_lockstep_reduction": "race check: write after read: block (0, 0, 0) thread (1, 0, 0) writes shared bug_lockstep_reduction::s + 4 bytes (of 256), which thread (0, 0, 0) read since the last __syncthreads (warp 0, lanes 1 and 0: lanes of a warp are not in lockstep, and no __syncwarp orders them) (idioms.cu:231)",
}


def test_right_idioms_run_clean_and_real_bugs_are_named() -> None:
    """Under every check: shared and warp reductions, votes, atomics (a float
    atomicMax by CAS, a histogram through shared memory), vector loads, half2,
    typed views of dynamic shared memory, a double-buffered tile, the CUDA
    samples' last-block reduction, an early exit before a barrier, and a
    thread spinning on a flag another warp sets (it hung the checked launch:
    fibers switched only at barriers). Then the bugs, each named."""
    script = SCRIPT.format(path=str(KERNELS / "idioms.cu"), symbols=[*dict.fromkeys(IDIOMS), *BUGS])
    env = aotc_env({**asan_environment(), "AOTC_EMULATOR_CHECK": "all"})
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[: len(IDIOMS)] == [f"{name} right" for name in IDIOMS]
    assert [first_fault(line) for line in lines[len(IDIOMS) :]] == [f"{name}: {fault}" for name, fault in BUGS.items()]
