"""Packed bool matrices: pack_bool / PackedBool, matmul_packed, and matmul's
choice to pack, on the CPU emulator against the NumPy reference."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from aotc import reference, tropical
from aotc.tropical._packed import PackedBool
from conftest import installed_library

LIBRARY = installed_library()


# aotc.tropical's functions run on the emulated library (conftest).
pytestmark = pytest.mark.usefixtures("tropical_on_emulator")


def _bools(rng: np.random.Generator, shape: tuple[int, int], density: float = 0.1) -> np.ndarray:
    return rng.random(shape) < density


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (1, 1), (1, 31), (3, 32), (2, 33), (4, 100)])
@pytest.mark.parametrize("axis", [0, 1])
def test_pack_and_unpack_round_trip(shape: tuple[int, int], axis: int) -> None:
    a = _bools(np.random.default_rng(1), shape, 0.5)
    packed = tropical.pack_bool(a, axis)
    lines, length = (shape[0], shape[1]) if axis == 1 else (shape[1], shape[0])
    assert packed.words.dtype == np.uint32 and packed.words.shape == (lines, -(-length // 32))
    assert packed.shape == shape and packed.axis == axis
    np.testing.assert_array_equal(packed.unpack(), a)


def test_bit_order_and_padding() -> None:
    a = np.zeros((1, 40), bool)
    a[0, [0, 5, 31, 32, 39]] = True
    np.testing.assert_array_equal(tropical.pack_bool(a, 1).words, [[0x80000021, 0x81]])


def test_any_nonzero_byte_packs_as_true() -> None:
    a = np.array([[1, 2, 0, 0x80]], np.uint8).view(np.bool_)
    assert tropical.pack_bool(a, 1).words.tolist() == [[0b1011]]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tropical.pack_bool(np.ones((2, 2), np.float32)), "tropical.pack_bool: a: expected a 2-D bool array"),
        (lambda: tropical.pack_bool(np.ones((2, 2, 2), bool)), "tropical.pack_bool: a: expected a 2-D bool array"),
        (lambda: tropical.pack_bool(np.ones((2, 2), bool), 2), "tropical.pack_bool: axis: must be 0"),
        (lambda: tropical.pack_bool(np.ones((2, 2), bool), True), "tropical.pack_bool: axis: expected 0"),
        (lambda: tropical.matmul_packed(tropical.pack_bool(np.ones((2, 3), bool), 0), tropical.pack_bool(np.ones((3, 2), bool), 0)), "pa: expected pack_bool(A, 1)"),
        (lambda: tropical.matmul_packed(tropical.pack_bool(np.ones((2, 3), bool), 1), tropical.pack_bool(np.ones((3, 2), bool), 1)), "pb: expected pack_bool(B, 0)"),
        (lambda: tropical.matmul_packed(tropical.pack_bool(np.ones((2, 3), bool), 1), tropical.pack_bool(np.ones((4, 2), bool), 0)), "pb: shape (4, 2) does not fit"),
    ],
)
def test_errors_are_one_line(call: Any, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=re.escape(message)) as raised:
        call()
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (1, 50, 65), (40, 1, 64), (5, 4, 0), (33, 17, 300)])
def test_matmul_packed_matches_the_reference(m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * 1000 + k)
    a, b = _bools(rng, (m, k), 0.08), _bools(rng, (k, n), 0.08)
    pa, pb = tropical.pack_bool(a, 1), tropical.pack_bool(b, 0)
    want_c, want_k = reference.matmul_argmax(a, b, "andor")
    np.testing.assert_array_equal(tropical.matmul_packed(pa, pb), want_c)
    c, kstar = tropical.matmul_packed_argmax(pa, pb)
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(kstar, want_k)
    packed = tropical.matmul_packed(pa, pb, packed=True)
    assert isinstance(packed, PackedBool) and packed.axis == 1
    np.testing.assert_array_equal(packed.unpack(), want_c)


def test_bits_past_k_in_the_last_word_are_ignored() -> None:
    # Words packed elsewhere may leave garbage past K; the kernels mask it.
    a, b = np.zeros((2, 40), bool), np.zeros((40, 3), bool)
    pa, pb = tropical.pack_bool(a, 1), tropical.pack_bool(b, 0)
    dirty_a = PackedBool(pa.words | np.uint32(0xFFFFFF00) * (np.arange(2) == 1), pa.shape, 1)
    dirty_b = PackedBool(pb.words | np.uint32(0xFFFFFF00) * (np.arange(2) == 1), pb.shape, 0)
    c, kstar = tropical.matmul_packed_argmax(dirty_a, dirty_b)
    assert not c.any() and (kstar == -1).all()
    assert not tropical.matmul_packed(dirty_a, dirty_b).any()


def test_reachability_stays_packed() -> None:
    # R_{t+1} = R_t (x) A: the nodes reachable in exactly t + 1 steps.
    rng = np.random.default_rng(7)
    adjacency = _bools(rng, (70, 70), 0.03)
    step = tropical.pack_bool(adjacency, 0)
    reach, want = tropical.pack_bool(np.eye(70, dtype=bool), 1), np.eye(70, dtype=bool)
    for _ in range(4):
        reach = tropical.matmul_packed(reach, step, packed=True)
        want = reference.matmul(want, adjacency, "andor")
        np.testing.assert_array_equal(reach.unpack(), want)


def test_matmul_packs_numpy_bools_from_k_64(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = tropical.Tropical._call  # noqa: SLF001 - counts the packed route: the packed forward binding's calls
    monkeypatch.setattr(tropical.Tropical, "_call", lambda self, layout, *args, **kwargs: calls.append(layout.name) or real(self, layout, *args, **kwargs))
    rng = np.random.default_rng(3)
    for k, packs in ((tropical.PACK_MIN_K - 1, False), (tropical.PACK_MIN_K, True), (200, True)):
        a, b = _bools(rng, (9, k), 0.05), _bools(rng, (k, 11), 0.05)
        calls.clear()
        np.testing.assert_array_equal(tropical.matmul(a, b, "andor"), reference.matmul(a, b, "andor"))
        assert [c for c in calls if c.endswith("packed")] == (["gemm_forward_packed"] if packs else []), k
    # Batches and other semirings take the byte kernels.
    calls.clear()
    a3, b = _bools(rng, (2, 3, 100)), _bools(rng, (100, 4))
    np.testing.assert_array_equal(tropical.matmul(a3, b, "andor"), reference.matmul(a3, b, "andor"))
    out = np.empty((3, 4), bool)
    assert tropical.matmul(a3[0], b, "andor", out=out) is out
    np.testing.assert_array_equal(out, reference.matmul(a3[0], b, "andor"))
    assert [c for c in calls if c.endswith("packed")] == ["gemm_forward_packed"]
