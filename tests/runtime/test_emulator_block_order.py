"""AOTC_EMULATOR_BLOCK_ORDER: the emulator runs a grid's blocks in order, reversed
or shuffled, read at every launch, so order-dependent results show up."""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import numpy as np
import pytest

from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import EmulatorLibrary, load_library_bytes

KERNELS = Path(__file__).parent / "emulator_kernels"

if shutil.which("g++") is None:  # pragma: no cover - the test image has g++
    pytest.skip("the emulator needs g++ with OpenMP, which is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def library() -> EmulatorLibrary:
    return load_library_bytes(compile_library_bytes(KERNELS / "block_order.cu", ("log_block_order", "atomic_scatter")))


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def block_order(library: EmulatorLibrary, grid: tuple[int, int, int]) -> list[int]:
    order = np.full(grid[0] * grid[1] * grid[2], -1, dtype=np.int32)
    next_slot = np.zeros(1, dtype=np.int32)
    library.launch("log_block_order", grid, 1, 0, [ptr(order), ptr(next_slot)])
    return order.tolist()


def test_blocks_run_x_fastest_by_default(library: EmulatorLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AOTC_EMULATOR_BLOCK_ORDER", raising=False)
    assert block_order(library, (3, 2, 2)) == list(range(12))
    monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", "in-order")
    assert block_order(library, (3, 2, 2)) == list(range(12))


def test_reverse_runs_the_last_block_first(library: EmulatorLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", "reverse")
    assert block_order(library, (3, 2, 2)) == list(range(11, -1, -1))


def test_shuffle_is_a_permutation_fixed_by_its_seed(library: EmulatorLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    orders = {}
    for seed in ("shuffle", "shuffle:0", "shuffle:1", "shuffle:2"):
        monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", seed)
        orders[seed] = block_order(library, (40, 3, 1))
        assert sorted(orders[seed]) == list(range(120))
        assert block_order(library, (40, 3, 1)) == orders[seed]  # read afresh, same seed, same order
    assert orders["shuffle"] == orders["shuffle:0"]
    assert len({tuple(o) for o in orders.values()}) == 3
    assert orders["shuffle:1"] != list(range(120))


@pytest.mark.parametrize("value", ["random", "shuffle:", "shuffle:x", "shuffle:-1", "shuffled"])
def test_a_bad_order_is_one_line_naming_the_variable(library: EmulatorLibrary, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", value)
    want = r"^launching log_block_order: AOTC_EMULATOR_BLOCK_ORDER must be in-order, reverse, shuffle or shuffle:SEED \(a whole number\), got '"
    with pytest.raises(ValueError, match=want) as info:
        block_order(library, (2, 1, 1))
    assert repr(value) in str(info.value)


def scatter(library: EmulatorLibrary, grad_c: np.ndarray, kstar: np.ndarray, k: int) -> np.ndarray:
    m, n = grad_c.shape
    grad_a = np.zeros((m, k), dtype=np.float32)
    args = [ptr(grad_c), ptr(kstar), ptr(grad_a), ctypes.c_int(n), ctypes.c_int(k)]
    library.launch("atomic_scatter", (n, m, 1), 1, 0, args)
    return grad_a


def crafted_sums() -> tuple[np.ndarray, np.ndarray]:
    """Every term of a row lands on one k, with magnitudes 1e-8 to 1e8: a float
    sum of them depends on the order it adds in."""
    rng = np.random.default_rng(7)
    grad_c = (rng.choice([-1.0, 1.0], (2, 64)) * 10.0 ** rng.uniform(-8, 8, (2, 64))).astype(np.float32)
    return grad_c, np.zeros((2, 64), dtype=np.int32)


def test_float_atomics_sum_in_block_order(library: EmulatorLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    # Why the backward passes own their rows and columns: the same scatter with
    # float atomics gives other bits when the blocks run in another order.
    grad_c, kstar = crafted_sums()
    monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", "in-order")
    in_order = scatter(library, grad_c, kstar, 3)
    assert np.array_equal(scatter(library, grad_c, kstar, 3), in_order)  # one thread a block: sequential
    np.testing.assert_allclose(in_order[:, 0], grad_c.astype(np.float64).sum(axis=1), rtol=1e-3, atol=1)
    shuffled = []
    for seed in range(1, 6):
        monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", f"shuffle:{seed}")
        shuffled.append(scatter(library, grad_c, kstar, 3))
    assert any(not np.array_equal(s, in_order) for s in shuffled)
