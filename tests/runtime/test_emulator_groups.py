"""Cooperative groups and asynchronous copies on the emulator: tiles of a
warp with their reduce, scans, votes and shuffles (float sums in CUDA's
order, bit for bit), dynamic and coalesced groups, and cp.async copies that
land at their wait, so that a read before it sees poison and the init check
names it."""

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
SYMBOLS = ("tile_collectives", "block_and_dynamic_tiles", "coalesced_sums", "staged_sum", "pipeline_copies")


@pytest.fixture(scope="module")
def built() -> dict[str, bytes]:
    return {}


def load(built: dict, monkeypatch: pytest.MonkeyPatch, checks: str = "", threading: str = "fibers") -> EmulatorLibrary:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", checks)
    if checks not in built:
        built[checks] = compile_library_bytes(KERNELS / "groups.cu", SYMBOLS, source_name="groups.cu")
    return load_library_bytes(built[checks], threading=threading)


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def butterfly(values: np.ndarray, size: int) -> np.ndarray:
    """cg::reduce's plus over tiles of ``size``: shfl_xor from size / 2 down, in float32."""
    result = values.copy()
    lanes = np.arange(len(values))
    mask = size // 2
    while mask:
        result = (result + result[lanes ^ mask]).astype(values.dtype)
        mask //= 2
    return result


def run_tiles(library: EmulatorLibrary) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n = 64
    rng = np.random.default_rng(11)
    ints = rng.integers(-50, 51, n).astype(np.int32)
    ints[8:16] = np.abs(ints[8:16]) + 1  # one tile votes yes unanimously
    values = rng.standard_normal(n).astype(np.float32)
    out, sums = np.zeros((13, n), np.int32), np.zeros((2, n), np.float32)
    library.launch("tile_collectives", 1, n, 0, [ptr(ints), ptr(values), ptr(out), ptr(sums)])
    return ints, values, out, sums


@pytest.mark.parametrize("threading", ["fibers", "os-threads"])
def test_tiles_reduce_scan_vote_and_shuffle(built: dict, monkeypatch: pytest.MonkeyPatch, threading: str) -> None:
    ints, values, out, sums = run_tiles(load(built, monkeypatch, threading=threading))
    np.testing.assert_array_equal(sums[0], butterfly(values, 32))  # the same bits as CUDA's order
    np.testing.assert_array_equal(sums[1], butterfly(values, 8))
    t = np.arange(64)
    tiles = ints.reshape(8, 8)
    scans = np.cumsum(tiles, axis=1).ravel()
    ballots = [sum(1 << r for r in range(8) if tile[r] > 0) for tile in tiles]
    expected = [
        np.repeat(ints.reshape(2, 32).sum(axis=1), 32),
        np.repeat(tiles.max(axis=1), 8),
        np.repeat(tiles.min(axis=1), 8),
        scans,
        scans - ints,
        np.repeat(ballots, 8),
        np.repeat((tiles > 40).any(axis=1), 8),
        np.repeat((tiles > 0).all(axis=1), 8),
        t % 8,
        (t % 32) // 8,  # a tile of a warp tile: its rank in the warp
        ints[t - t % 8 + 3],
        np.where(t % 32 + 5 < 32, ints[np.minimum(t + 5, 63)], ints),
        ints[t ^ 1],
    ]
    for k, want in enumerate(expected):
        np.testing.assert_array_equal(out[k], np.asarray(want, np.int32), err_msg=f"result {k}")


def test_block_dynamic_and_coalesced_groups(built: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    library = load(built, monkeypatch)
    values = np.arange(128, dtype=np.int32) * 3
    out = np.zeros(128, np.int32)
    library.launch("block_and_dynamic_tiles", 1, 128, 0, [ptr(values), ptr(out)])
    np.testing.assert_array_equal(out, np.repeat(values.reshape(32, 4).sum(axis=1), 4))
    out, first = np.zeros(64, np.int32), values[:64].copy()
    library.launch("coalesced_sums", 1, 64, 0, [ptr(first), ptr(out)])
    t = np.arange(64)
    odd_sums = values[:64].reshape(2, 32)[:, 1::2].sum(axis=1)
    np.testing.assert_array_equal(out, np.where(t % 2 == 1, odd_sums[t // 32] * 100 + (t % 32) // 2, -1))


def staged(library: EmulatorLibrary, early: int) -> tuple[np.ndarray, np.ndarray]:
    blocks, stages = 2, 5
    values = np.random.default_rng(13).standard_normal((blocks, stages, 64)).astype(np.float32)
    out = np.zeros(blocks * 64, np.float32)
    library.launch("staged_sum", blocks, 64, 0, [ptr(values), ptr(out), ctypes.c_int(stages), ctypes.c_int(early)])
    want = np.zeros((blocks, 64), np.float32)
    for s in range(stages):
        want += np.roll(values[:, s], -1, axis=1)
    return out.reshape(blocks, 64), want


@pytest.mark.parametrize("threading", ["fibers", "os-threads"])
def test_copies_land_at_their_wait(built: dict, monkeypatch: pytest.MonkeyPatch, threading: str) -> None:
    library = load(built, monkeypatch, threading=threading)
    got, want = staged(library, early=0)
    np.testing.assert_array_equal(got, want)
    got, _ = staged(library, early=1)
    assert np.isnan(got).all()  # 0 * the poison of a copy not yet landed
    values = np.arange(64, dtype=np.float32) + 1
    out, group_out = np.zeros(64, np.float32), np.zeros(68, np.float32)
    library.launch("pipeline_copies", 1, 64, 0, [ptr(values), ptr(out), ptr(group_out), ctypes.c_int(64)])
    np.testing.assert_array_equal(out, values[::-1])
    np.testing.assert_array_equal(group_out, [*values, 1.0, 2.0, 0.0, 0.0])  # zfill: the last 8 bytes zeroed


def test_groups_and_copies_are_clean_under_the_checks(built: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    library = load(built, monkeypatch, checks="race,init,sync")
    run_tiles(library)
    got, want = staged(library, early=0)
    np.testing.assert_array_equal(got, want)
    values = np.arange(128, dtype=np.int32)
    out = np.zeros(128, np.int32)
    library.launch("block_and_dynamic_tiles", 1, 128, 0, [ptr(values), ptr(out)])
    first = values[:64].copy()
    library.launch("coalesced_sums", 1, 64, 0, [ptr(first), ptr(out)])
    floats, copied, group_out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32), np.zeros(68, np.float32)
    library.launch("pipeline_copies", 1, 64, 0, [ptr(floats), ptr(copied), ptr(group_out), ctypes.c_int(64)])


def test_a_read_before_the_wait_is_named(built: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    library = load(built, monkeypatch, checks="init")
    with pytest.raises(KernelFaultError) as caught:
        staged(library, early=1)
    assert first_fault(caught.value) == (
        "staged_sum: init check: read before an asynchronous copy landed: block (0, 0, 0) thread (0, 0, 0) reads "
        "shared staged_sum::stage + 256 bytes (of 512), which an asynchronous copy fills only at its wait (groups.cu:75)"
    )
