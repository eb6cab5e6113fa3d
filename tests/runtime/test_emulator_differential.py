"""Every kernel of the installed tropical library, run on the CPU emulator
through the ordinary loader, against the NumPy reference."""

from __future__ import annotations

import json
import zlib

import pytest

from aotc.runtime.library import Library
from conftest import installed_library
from kernel_harness import Case, run_and_check
from tropical_manifest import tropical_manifest

LIBRARY = installed_library()

KERNELS = [
    (entry["axes"]["semiring"], entry["axes"]["dtype"], entry["axes"]["pass"], entry["axes"]["variant"])
    for entry in json.loads((LIBRARY / "index.json").read_text())["kernels"].values()
]
# Ragged sizes, plus leading dimensions that are multiples of 16 bytes so the
# vector loads run (and the same sizes misaligned, so their fallback runs).
SINGLE = [Case(1, 1, 1), Case(7, 13, 5), Case(65, 33, 129), Case(5, 4, 0), Case(37, 48, 40), Case(37, 48, 40, misaligned=True)]
BATCHED = [
    Case(7, 13, 5, batch=3),
    Case(7, 13, 5, batch=3, a_batched=False),
    Case(6, 9, 17, batch=2, b_batched=False),
    Case(9, 16, 24, batch=2, a_batched=False),
]
# Plain tiles (docs/design.md; counting too): inputs a plain tile may fold, and the same with
# values it may not in k slabs of some rows, so plain and exact tiles meet in
# one output, and blocks of rows differ. 70 rows span two 64-row blocks.
PLAIN_SINGLE = [Case(70, 40, 40, pattern="plain"), Case(70, 40, 104, pattern="slab"), Case(70, 40, 101, pattern="pairs")]
PLAIN_BATCHED = [Case(40, 20, 104, batch=2, pattern="pairs"), Case(40, 20, 40, batch=2, a_batched=False, pattern="plain")]


# And/or folds bytes with & and |, each normalized to 0 or 1 as loaded: bool
# arrays whose true bytes share no bit.
BYTES_SINGLE = [Case(70, 40, 40, pattern="bytes")]
BYTES_BATCHED = [Case(40, 20, 24, batch=2, b_batched=False, pattern="bytes")]


# Packed and/or: 32 k values a word; K below, at and past word and tile
# (8 words) boundaries, K = 0, and single rows and columns.
PACKED = [
    Case(1, 1, 1), Case(1, 40, 70), Case(33, 1, 33), Case(7, 13, 5), Case(5, 4, 0), Case(3, 5, 64),
    Case(65, 33, 129, pattern="bytes"), Case(70, 67, 300, pattern="bytes"), Case(9, 70, 256, pattern="bytes"),
]  # fmt: skip


def _cases(semiring: str, dtype: str, pass_name: str, variant: str) -> list[Case]:
    if variant == "packed":
        return PACKED
    cases = BATCHED if variant == "batched" else SINGLE
    if pass_name in ("forward", "argmax") and dtype == "bool":
        cases = cases + (BYTES_BATCHED if variant == "batched" else BYTES_SINGLE)
    elif pass_name in ("forward", "argmax"):
        cases = cases + (PLAIN_BATCHED if variant == "batched" else PLAIN_SINGLE)
    return cases


MATRIX = [pytest.param(kind, case, id=f"{'-'.join(kind)}-{case.id}") for kind in KERNELS for case in _cases(*kind)]


@pytest.mark.parametrize(("kind", "case"), MATRIX)
def test_kernel_matches_reference(emulated_tropical: Library, kind: tuple[str, str, str, str], case: Case) -> None:
    run_and_check(emulated_tropical, kind, case, seed=zlib.crc32(f"{kind}{case.id}".encode()))


def test_every_kernel_is_in_the_matrix() -> None:
    assert len(KERNELS) == len(set(KERNELS)) > 0
    assert {c.values[0] for c in MATRIX} == set(KERNELS)


# K near 2**31: the k tile count, (K + BK - 1) / BK, once overflowed int, and a
# wrong product came back. One thread per block and a 1 x 1 result keep the
# emulator to K steps (about 30 s); A is np.zeros, whose untouched pages cost no
# memory, with one value at the last k, and B a zero-stride column, so nothing
# near 8 GB is ever written. The reference cannot run at this size; the answer
# is the reference's for any K: the last k wins, 5 (x) 1.
HUGE_K = 2**31 - 1
HUGE_K_MANIFEST = tropical_manifest(
    "hugek",
    {"maxplus": "{add: max, mul: add, zero: -inf, one: 0}", "andor": "{add: or, mul: and, zero: false, one: true}"},
    ["{semiring: maxplus, dtype: f32, pass: argmax, variant: single}", "{semiring: andor, dtype: bool, pass: argmax, variant: packed}"],
    tile="{block_m: 1, block_n: 1, block_k: 64, thread_m: 1, thread_n: 1}",
    head="archs: {sass: [80], ptx: [80]}",
)


@pytest.fixture(scope="module")
def one_thread_library(emulated_tropical: Library, tmp_path_factory: pytest.TempPathFactory) -> Library:
    import aotc
    from aotc.runtime.emulator.backend import EmulatorBackend
    from runtime.runtime_support import make_library

    folder = make_library(tmp_path_factory.mktemp("hugek"), manifest_text=HUGE_K_MANIFEST)
    return aotc.load(folder, backend=EmulatorBackend(cache=emulated_tropical.backend.cache))


def test_k_near_two_to_the_31(one_thread_library: Library) -> None:
    import numpy as np

    from aotc import reference, tropical

    a = np.zeros((1, HUGE_K), np.float32)
    a[0, -1] = 5
    b = np.broadcast_to(np.float32(1), (HUGE_K, 1))
    c, k = tropical.over(one_thread_library).matmul_argmax(a, b, "maxplus")
    small = (np.zeros((1, 9), np.float32), np.ones((9, 1), np.float32))
    small[0][0, -1] = 5
    want_c, want_k = reference.matmul_argmax(*small, "maxplus")  # the same product at K = 9
    assert (c.tolist(), k.tolist()) == (want_c.tolist(), [[HUGE_K - 1]]) and want_k.tolist() == [[8]]


def test_packed_k_near_two_to_the_31(one_thread_library: Library) -> None:
    import numpy as np

    from aotc import tropical
    from aotc.tropical._packed import PackedBool

    words = -(-HUGE_K // 32)
    last = np.uint32(1 << ((HUGE_K - 1) % 32))  # only the last k is true in both
    pa, pb = (np.zeros((1, words), np.uint32) for _ in range(2))
    pa[0, -1] = pb[0, -1] = last
    c, k = tropical.over(one_thread_library).matmul_packed_argmax(PackedBool(pa, (1, HUGE_K), 1), PackedBool(pb, (HUGE_K, 1), 0))
    assert (c.tolist(), k.tolist()) == ([[True]], [[HUGE_K - 1]])
