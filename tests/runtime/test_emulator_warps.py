"""Warps on the emulator: shuffles, votes, matches, reductions and __syncwarp
against a NumPy model of CUDA's rules, with fibers and with OS threads; and
the sync and race checks naming each class of warp-level bug."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from conftest import first_fault

from aotc.errors import KernelFaultError
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import EmulatorLibrary, load_library_bytes

KERNELS = Path(__file__).parent / "emulator_kernels"
THREADINGS = ["fibers", "os-threads"]
WARP_KERNELS = (
    "row_sum_max", "shuffle_modes", "votes", "half_warp_sums", "warp_tree_sum", "half_warp_shuffle_down", "ballot_mask_sum"
)
BUG_KERNELS = ("shuffle_in_branch", "vote_outside_mask", "syncwarp_in_branch", "lockstep_reduction", "shuffle_from_returned_lane")


@pytest.fixture(scope="module")
def built() -> dict[tuple[str, str], bytes]:
    """Compiled libraries by (file, checks), so each compiles once."""
    return {}


def load(built: dict, name: str, symbols: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, checks: str = "",
         threading: str = "fibers") -> EmulatorLibrary:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", checks)
    key = (name, checks)
    if key not in built:
        built[key] = compile_library_bytes(KERNELS / name, symbols, source_name=name)
    return load_library_bytes(built[key], threading=threading)


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def shuffle_source(mode: str, lane: int, operand: int, width: int) -> int:
    """The lane PTX's shfl.sync reads, from CUDA's operands (its own when out of range)."""
    segment, clamp, b = (32 - width) & 31, 0 if mode == "up" else 31, operand & 31
    low = lane & segment
    high = low | (clamp & ~segment)
    source = {"idx": low | (b & ~segment), "up": lane - b, "down": lane + b, "xor": lane ^ b}[mode]
    inside = source >= high if mode == "up" else source <= high
    return source if inside else lane


# ---- what the collectives compute -------------------------------------------------------------


@pytest.mark.parametrize("threading", THREADINGS)
def test_row_reductions_by_shuffles(built: dict, monkeypatch: pytest.MonkeyPatch, threading: str) -> None:
    library = load(built, "warps.cu", WARP_KERNELS, monkeypatch, threading=threading)
    rows, cols = 8, 100
    x = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32)
    sums, maxima = np.full((rows, 32), np.nan, np.float32), np.full(rows, np.nan, np.float32)
    library.launch("row_sum_max", rows // 4, 128, 0, [ptr(x), ptr(sums), ptr(maxima), ctypes.c_int(cols)])
    np.testing.assert_allclose(sums, np.repeat(x.sum(axis=1, keepdims=True), 32, axis=1), rtol=1e-5, atol=1e-5)
    assert (sums == sums[:, :1]).all()  # a butterfly gives every lane the same bits
    np.testing.assert_array_equal(maxima, x.max(axis=1))


@pytest.mark.parametrize("threading", THREADINGS)
def test_shuffle_modes_follow_ptx(built: dict, monkeypatch: pytest.MonkeyPatch, threading: str) -> None:
    library = load(built, "warps.cu", WARP_KERNELS, monkeypatch, threading=threading)
    threads = 64
    operands = np.random.default_rng(7).integers(0, 64, threads).astype(np.int32)
    out = np.zeros((3, 8, threads), np.int64)
    library.launch("shuffle_modes", 1, threads, 0, [ptr(operands), ptr(out)])
    for w, width in enumerate((8, 16, 32)):
        for m, mode in enumerate(("idx", "up", "down", "xor")):
            for t in range(threads):
                operand = int(operands[t]) & (7 if mode in ("up", "down") else ~0)
                source = t - t % 32 + shuffle_source(mode, t % 32, operand, width)
                assert out[w, m, t] == source, (width, mode, t)
                assert out[w, m + 4, t] == (source << 32) + 7, (width, mode, t)


@pytest.mark.parametrize("threading", THREADINGS)
@pytest.mark.parametrize("live", [32, 20])
def test_votes_matches_and_reductions(built: dict, monkeypatch: pytest.MonkeyPatch, threading: str, live: int) -> None:
    library = load(built, "warps.cu", WARP_KERNELS, monkeypatch, threading=threading)
    rng = np.random.default_rng(live)
    threads = 64
    predicates = (rng.random(threads) < 0.5).astype(np.int32)
    predicates[32:] = 1  # warp 1: a unanimous vote
    keys = rng.integers(-3, 4, threads).astype(np.int32) + 100 * np.repeat([1, 2], 32).astype(np.int32)
    keys[40] = 350  # warp 1 does not all share keys / 100
    out, reduced = np.full((8, threads), 0xDEAD, np.uint32), np.full((8, threads), -7, np.int32)
    library.launch("votes", 1, threads, 0, [ptr(predicates), ptr(keys), ctypes.c_int(live), ptr(out), ptr(reduced)])
    for warp in range(2):
        lanes = np.arange(32 * warp, 32 * warp + live)
        p, k = predicates[lanes], keys[lanes]
        ballot = sum(1 << int(t % 32) for t, v in zip(lanes, p) if v)
        group = (1 << live) - 1
        same_hundreds = bool((k // 100 == k[0] // 100).all())
        for t, v, key in zip(lanes, p, k):
            expected = [ballot, int(p.any()), int(p.all()), int(p.all() or not p.any()),
                        sum(1 << int(u % 32) for u, other in zip(lanes, k) if other == key),
                        group if same_hundreds else 0, int(same_hundreds), ballot if v else 0]
            assert out[:, t].tolist() == expected, (warp, t)
            unsigned = k.astype(np.uint32)
            assert reduced[:, t].tolist() == [
                int(k.sum()), int(k.min()), int(k.max()),
                int(unsigned.min().astype(np.int32)), int(unsigned.max().astype(np.int32)),
                int(np.bitwise_and.reduce(unsigned).astype(np.int32)),
                int(np.bitwise_or.reduce(unsigned).astype(np.int32)),
                int(np.bitwise_xor.reduce(unsigned).astype(np.int32)),
            ], (warp, t)
    exited = [t for t in range(threads) if t % 32 >= live]
    assert (out[:, exited] == 0xDEAD).all() and (reduced[:, exited] == -7).all()


@pytest.mark.parametrize("threading", THREADINGS)
def test_groups_with_their_own_masks(built: dict, monkeypatch: pytest.MonkeyPatch, threading: str) -> None:
    library = load(built, "warps.cu", WARP_KERNELS, monkeypatch, threading=threading)
    values = np.arange(96, dtype=np.int32) ** 2
    halves, sums = np.zeros(96, np.int32), np.zeros(3, np.int32)
    library.launch("half_warp_sums", 1, 96, 0, [ptr(values), ptr(halves)])
    np.testing.assert_array_equal(halves, np.repeat(values.reshape(6, 16).sum(axis=1), 16))
    first = values[:64].copy()
    library.launch("warp_tree_sum", 3, 64, 0, [ptr(first), ptr(sums)])
    assert sums.tolist() == [int(values[:64].sum())] * 3


@pytest.mark.parametrize(("checks", "threading"), [("", "fibers"), ("", "os-threads"), ("race,init,sync", "fibers")])
def test_a_shuffle_may_read_a_lane_outside_its_mask(
    built: dict, monkeypatch: pytest.MonkeyPatch, checks: str, threading: str
) -> None:
    """Reading a lane the mask leaves out, or one past a partial last warp, is
    undefined in CUDA, not an error: the half-warp reductions that do so keep
    only sums that never use it. It reads the caller's own value, as an
    out-of-range source lane does, and the sync check lets it pass."""
    library = load(built, "warps.cu", WARP_KERNELS, monkeypatch, checks=checks, threading=threading)
    values = np.arange(1, 65, dtype=np.int32) * 3
    sums, first = np.zeros(2, np.int32), np.zeros(64, np.int32)
    library.launch("half_warp_shuffle_down", 1, 64, 0, [ptr(values), ptr(sums), ptr(first)])
    assert sums.tolist() == [int(values[0:16].sum()), int(values[32:48].sum())]
    lanes = np.arange(64) % 32
    want = np.where(lanes < 8, np.roll(values, -8), np.where(lanes < 16, values, 0))
    np.testing.assert_array_equal(first, want)
    library.launch("ballot_mask_sum", 1, 48, 0, [ptr(values), ptr(sums)])
    assert sums.tolist() == [int(values[:32].sum()), int(values[32:48].sum())]


def test_warp_kernels_are_clean_under_the_checks(built: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    library = load(built, "warps.cu", WARP_KERNELS, monkeypatch, checks="race,init,sync")
    x = np.ones((4, 40), np.float32)
    sums, maxima = np.zeros((4, 32), np.float32), np.zeros(4, np.float32)
    library.launch("row_sum_max", 1, 128, 0, [ptr(x), ptr(sums), ptr(maxima), ctypes.c_int(40)])
    assert (sums == 40).all()
    predicates, keys = np.ones(64, np.int32), np.arange(64, dtype=np.int32)
    out, reduced = np.zeros((8, 64), np.uint32), np.zeros((8, 64), np.int32)
    library.launch("votes", 1, 64, 0, [ptr(predicates), ptr(keys), ctypes.c_int(24), ptr(out), ptr(reduced)])
    values, halves, sums = np.arange(64, dtype=np.int32), np.zeros(64, np.int32), np.zeros(2, np.int32)
    library.launch("half_warp_sums", 1, 64, 0, [ptr(values), ptr(halves)])
    library.launch("warp_tree_sum", 2, 64, 0, [ptr(values), ptr(sums)])
    assert sums.tolist() == [2016, 2016]


# ---- each class of warp-level bug, named ------------------------------------------------------


def launch_bug(library: EmulatorLibrary, symbol: str) -> None:
    values = np.arange(1, 65, dtype=np.int32)
    floats, out = np.ones(64, np.float32), np.zeros(64, np.int32)  # alive until the launch ends
    args = {
        "shuffle_in_branch": (32, [ptr(floats)]),
        "vote_outside_mask": (32, [ptr(values), ptr(out)]),
        "syncwarp_in_branch": (32, [ptr(out)]),
        "lockstep_reduction": (64, [ptr(values), ptr(out)]),
        "shuffle_from_returned_lane": (32, [ptr(floats), ptr(out), ctypes.c_int(20)]),
    }
    threads, arguments = args[symbol]
    library.launch(symbol, 1, threads, 0, arguments)


PLANTED = {
    "shuffle_in_branch": (
        "sync",
        "shuffle_in_branch: sync check: divergent warp: in block (0, 0, 0) warp 0, lane 0 (thread (0, 0, 0)) waits at "
        "__shfl_xor_sync with mask 0xffffffff (warp_bugs.cu:8), which names lane 16 (thread (16, 0, 0)), but that lane "
        "waits at __syncthreads (warp_bugs.cu:9)",
    ),
    "vote_outside_mask": (
        "sync",
        "vote_outside_mask: sync check: lane not in mask: in block (0, 0, 0) warp 0, lane 16 (thread (16, 0, 0)) calls "
        "__ballot_sync with mask 0x0000ffff, which does not name lane 16 (warp_bugs.cu:15)",
    ),
    "syncwarp_in_branch": (
        "sync",
        "syncwarp_in_branch: sync check: divergent warp: in block (0, 0, 0) warp 0, lane 0 (thread (0, 0, 0)) waits at "
        "__syncwarp with mask 0xffffffff (warp_bugs.cu:22), which names lane 16 (thread (16, 0, 0)), but that lane "
        "waits at __syncthreads (warp_bugs.cu:23)",
    ),
    "lockstep_reduction": (
        "race",
        "lockstep_reduction: race check: write after read: block (0, 0, 0) thread (1, 0, 0) writes shared "
        "lockstep_reduction::partial + 4 bytes (of 256), which thread (0, 0, 0) read since the last __syncthreads "
        "(warp 0, lanes 1 and 0: lanes of a warp are not in lockstep, and no __syncwarp orders them) (warp_bugs.cu:36)",
    ),
    "shuffle_from_returned_lane": (
        "sync",
        "shuffle_from_returned_lane: sync check: inactive source lane: in block (0, 0, 0) warp 0, lane 4 (thread (4, 0, 0)) "
        "reads lane 20 in __shfl_down_sync with mask 0xffffffff, but that lane has returned (warp_bugs.cu:51)",
    ),
}


@pytest.mark.parametrize("symbol", BUG_KERNELS)
def test_each_planted_warp_bug_is_named(built: dict, monkeypatch: pytest.MonkeyPatch, symbol: str) -> None:
    check, message = PLANTED[symbol]
    library = load(built, "warp_bugs.cu", BUG_KERNELS, monkeypatch, checks=check)
    with pytest.raises(KernelFaultError) as caught:
        launch_bug(library, symbol)
    assert first_fault(caught.value) == message


@pytest.mark.parametrize("threading", THREADINGS)
@pytest.mark.parametrize("symbol", ["shuffle_in_branch", "syncwarp_in_branch"])
def test_a_collective_that_would_hang_fails_the_launch_unchecked(
    built: dict, monkeypatch: pytest.MonkeyPatch, threading: str, symbol: str
) -> None:
    library = load(built, "warp_bugs.cu", BUG_KERNELS, monkeypatch, threading=threading)
    with pytest.raises(RuntimeError, match=rf"^launching {symbol}: lanes of a warp wait at a warp collective "):
        launch_bug(library, symbol)


def test_lanes_are_not_in_lockstep_without_the_checks(built: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lockstep reduction's answer is wrong here, as a GPU may give it."""
    library = load(built, "warp_bugs.cu", BUG_KERNELS, monkeypatch)
    values, out = np.arange(1, 65, dtype=np.int32), np.zeros(1, np.int32)
    library.launch("lockstep_reduction", 1, 64, 0, [ptr(values), ptr(out)])
    assert out[0] != values.sum()
