"""The race check orders plain accesses by a fence and an atomic
(emulator_kernels/release_acquire.cu; docs/design.md, "Fences and atomics"):
plain data handed over behind an atomic flag, and plain data
guarded by a spin lock, run clean under AOTC_EMULATOR_CHECK=all with the right
result; the same idioms with the writer's fence, the reader's fence, the wait,
the end of the critical section or the lock itself missing are each named,
and so are readers that a release leaves out. A __syncwarp passes what its
lanes acquired and did on: a warp's round trip behind one lane's flags runs
clean, and a lane that writes after the __syncwarp, or a fence before it, is
named. A volatile flag (morally strong, as PTX has it) hands data over as an
atomic one does, and lets the writer run while the reader spins; without the
writer's fence, or set by a plain store, it is named.
One child process with AddressSanitizer first, as the memory check needs, and
one build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import aotc_env, first_fault

from aotc.runtime.emulator.checks import asan_environment

KERNELS = Path(__file__).parent / "emulator_kernels"

# Each launch prints "<label> right", "<label> WRONG" or its fault.
SCRIPT = """
import ctypes
import numpy as np
from aotc.errors import KernelFaultError
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes

symbols = {symbols!r}
library = load_library_bytes(compile_library_bytes({path!r}, symbols, source_name="release_acquire.cu"))
p, I = lambda a: ctypes.c_void_p(a.ctypes.data), ctypes.c_int
rng = np.random.default_rng(0)

def run(label, name, grid, block, args, right=lambda: True, shared=0):
    try:
        library.launch(name, grid, block, shared, args)
        print(label, "right" if right() else "WRONG")
    except KernelFaultError as error:
        print(error)

for how, spin in enumerate(["atomicAdd", "atomicCAS", "atomicOr"]):
    data, flag, seen = np.zeros(64, np.int32), np.zeros(1, np.int32), np.zeros(64, np.int32)
    run(f"handoff {{spin}}", "handoff", 1, 64, [p(data), p(flag), p(seen), I(64), I(how)],
        lambda: (seen == 7 * np.arange(64) + 1).all())
relayed = np.zeros(1, np.int32)
run("relay", "relay", 1, 96, [p(relayed)], lambda: relayed[0] == 5 + 15)
# Each block counts every key: the counts are the blocks' times the keys'.
for label, blocks, block, buckets in [("locked_buckets warps", 3, 128, 5), ("locked_buckets lanes", 1, 32, 1),
                                      ("locked_buckets 1024 threads", 1, 1024, 7)]:
    keys = rng.integers(0, 1000, 300).astype(np.int32)
    locks, counts, sums = np.zeros(buckets, np.int32), np.zeros(buckets, np.int32), np.zeros(buckets, np.int32)
    want = keys % buckets
    run(label, "locked_buckets", blocks, block, [p(keys), I(300), p(locks), p(counts), p(sums), I(buckets)],
        lambda: (counts == blocks * np.bincount(want, minlength=buckets)).all()
        and (sums == blocks * np.bincount(want, weights=np.arange(300), minlength=buckets)).all() and not locks.any())
values, totals = rng.integers(-50, 50, 256).astype(np.int32), np.zeros(2, np.int32)
run("block_mutex", "block_mutex", 2, 128, [p(values), p(totals)], lambda: (totals == values.reshape(2, 128).sum(1)).all(),
    shared=4)
data32, flag, total = np.zeros(32, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
run("warp_round_trip", "warp_round_trip", 1, 64, [p(data32), p(flag), p(total)], lambda: total[0] == 2 * (3 * 496 + 32))
data, flag, seen = np.zeros(64, np.int32), np.zeros(1, np.int32), np.zeros(64, np.int32)
run("volatile_handoff", "volatile_handoff", 1, 64, [p(data), p(flag), p(seen), I(64)], lambda: (seen == 5 * np.arange(64) + 2).all())
seen4 = np.zeros(4, np.int32)
run("volatile_shared_handoff", "volatile_shared_handoff", 1, 96, [p(seen4)], lambda: (seen4 == 11 * np.arange(4)).all())

data, flag, seen = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
for name in ["bug_no_release", "bug_no_acquire", "bug_no_wait"]:
    data[0] = flag[0] = 0
    run(name, name, 1, 64, [p(data), p(flag), p(seen)])
lock, counts, last = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
run("bug_unlock_early", "bug_unlock_early", 1, 64, [p(lock), p(counts), p(last)])
lock[0] = 0
run("bug_lock_bypass", "bug_lock_bypass", 1, 64, [p(lock), p(counts)])
data[0] = flag[0] = 0
seen96 = np.zeros(96, np.int32)
run("bug_other_reader", "bug_other_reader", 1, 96, [p(data), p(flag), p(seen96)])
data[0] = flag[0] = 0
run("bug_lane_left_out", "bug_lane_left_out", 1, 64, [p(data), p(flag), p(seen96)])
flag[0] = 0
run("bug_warp_round_trip", "bug_warp_round_trip", 1, 64, [p(data32), p(flag), p(total)])
flag[0] = 0
run("bug_fence_before_syncwarp", "bug_fence_before_syncwarp", 1, 64, [p(data32), p(flag), p(total)])
for name in ["bug_volatile_no_release", "bug_plain_flag"]:
    data[0] = flag[0] = 0
    run(name, name, 1, 64, [p(data), p(flag), p(seen)])
"""

IDIOMS = ["handoff atomicAdd", "handoff atomicCAS", "handoff atomicOr", "relay", "locked_buckets warps",
          "locked_buckets lanes", "locked_buckets 1024 threads", "block_mutex", "warp_round_trip",
          "volatile_handoff", "volatile_shared_handoff"]
BUGS = {
    "bug_no_release": "race check: read after write: block (0, 0, 0) thread (0, 0, 0) reads argument data + 0 bytes, which thread (32, 0, 0) wrote since the last __syncthreads (release_acquire.cu:107)",
    "bug_no_acquire": "race check: read after write: block (0, 0, 0) thread (0, 0, 0) reads argument data + 0 bytes, which thread (32, 0, 0) wrote since the last __syncthreads (release_acquire.cu:119)",
    "bug_no_wait": "race check: read after write: block (0, 0, 0) thread (32, 0, 0) reads argument data + 0 bytes, which thread (0, 0, 0) wrote since the last __syncthreads (release_acquire.cu:131)",
    "bug_unlock_early": "race check: write after write: block (0, 0, 0) thread (1, 0, 0) writes argument last + 0 bytes, which thread (0, 0, 0) wrote since the last __syncthreads (warp 0, lanes 1 and 0: lanes of a warp are not in lockstep, and no __syncwarp orders them) (release_acquire.cu:143)",
    "bug_lock_bypass": "race check: read after write: block (0, 0, 0) thread (32, 0, 0) reads argument counts + 0 bytes, which thread (0, 0, 0) wrote since the last __syncthreads (release_acquire.cu:153)",
    "bug_other_reader": "race check: write after read: block (0, 0, 0) thread (32, 0, 0) writes argument data + 0 bytes, which thread (0, 0, 0) read since the last __syncthreads (release_acquire.cu:168)",
    "bug_lane_left_out": "race check: write after read: block (0, 0, 0) thread (32, 0, 0) writes argument data + 0 bytes, which thread (0, 0, 0) read since the last __syncthreads (release_acquire.cu:187)",
    "bug_warp_round_trip": "race check: read after write: block (0, 0, 0) thread (32, 0, 0) reads argument data + 20 bytes, which thread (5, 0, 0) wrote since the last __syncthreads (release_acquire.cu:206)",
    "bug_fence_before_syncwarp": "race check: read after write: block (0, 0, 0) thread (32, 0, 0) reads argument data + 4 bytes, which thread (1, 0, 0) wrote since the last __syncthreads (release_acquire.cu:241)",
    "bug_volatile_no_release": "race check: read after write: block (0, 0, 0) thread (0, 0, 0) reads argument data + 0 bytes, which thread (32, 0, 0) wrote since the last __syncthreads (release_acquire.cu:292)",
    "bug_plain_flag": "race check: write after read: block (0, 0, 0) thread (32, 0, 0) writes argument flag + 0 bytes, which thread (0, 0, 0) read since the last __syncthreads (release_acquire.cu:303)",
}


@pytest.fixture(scope="module")
def lines() -> list[str]:
    """What each launch printed, in order."""
    script = SCRIPT.format(path=str(KERNELS / "release_acquire.cu"),
                           symbols=["handoff", "relay", "locked_buckets", "block_mutex", "warp_round_trip",
                                    "volatile_handoff", "volatile_shared_handoff", *BUGS])
    env = aotc_env({**asan_environment(), "AOTC_EMULATOR_CHECK": "all"})
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


def test_fences_and_atomics_order_plain_data(lines: list[str]) -> None:
    """A handoff behind a flag (spun on with atomicAdd, atomicCAS and
    atomicOr), a relay through shared memory over three warps, per-bucket
    locks in global memory taken by the threads of four warps (three blocks),
    by the lanes of one warp and by 1,024 threads, and a static shared mutex
    guarding a total in the dynamic buffer, and a warp that reads and writes
    between two __syncwarps what lane 0 acquired and then releases, and the
    handoff on a volatile flag in global and in shared memory (it hung a
    checked launch before): clean under every check, with the right result."""
    assert lines[: len(IDIOMS)] == [f"{label} right" for label in IDIOMS]


def test_what_a_fence_and_atomic_leave_unordered_is_named(lines: list[str]) -> None:
    """The handoff without the writer's fence, without the reader's, or
    without the wait; a plain write after the unlock; a thread that writes
    the guarded data without the lock; readers a release leaves out; a lane
    that writes after the __syncwarp before the release; a release whose
    fence came before that __syncwarp; a volatile flag set without a fence;
    and one set by a plain store while another thread spins on it with
    volatile loads: each a race, and each named."""
    assert [first_fault(line) for line in lines[len(IDIOMS) :]] == [f"{name}: {fault}" for name, fault in BUGS.items()]
