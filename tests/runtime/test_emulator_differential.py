"""Every kernel of the installed tropical library, run on the CPU emulator
through the ordinary loader, against the NumPy reference."""

from __future__ import annotations

import json
import zlib

import pytest

from aotc.runtime.library import Library
from conftest import installed_library
from kernel_harness import Case, run_and_check

LIBRARY = installed_library()

KERNELS = [
    (entry["semiring"], entry["dtype"], entry["pass"], entry["variant"])
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
