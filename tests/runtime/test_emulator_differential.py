"""Every kernel of the installed tropical library, run on the CPU emulator
through the ordinary loader, against the NumPy reference."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import aotc
from aotc.runtime.cache import DiskCache
from aotc.runtime.emulator.backend import EmulatorBackend
from aotc.runtime.library import Library
from kernel_harness import Case, run_and_check

# AOTC_TEST_LIBRARY: a built library folder (<build>/aotc/tropical/lib), to
# run the matrix from a source checkout without installing.
LIBRARY = Path(os.environ.get("AOTC_TEST_LIBRARY") or aotc.library_dir("tropical"))
if not (LIBRARY / "index.json").is_file():
    reason = f"aotc at {Path(aotc.__file__).parent} has no installed tropical library; run through tox or pip install ."
    if os.environ.get("AOTC_REQUIRE_INSTALLED") == "1":
        raise RuntimeError(reason)
    pytest.skip(reason, allow_module_level=True)

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
MATRIX = [
    pytest.param(kind, case, id=f"{'-'.join(kind)}-{case.id}")
    for kind in KERNELS
    for case in (BATCHED if kind[3] == "batched" else SINGLE)
]


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> Library:
    backend = EmulatorBackend(cache=DiskCache(tmp_path_factory.mktemp("emulator-cache")))
    return Library(LIBRARY, backend=backend)


@pytest.mark.parametrize(("kind", "case"), MATRIX)
def test_kernel_matches_reference(emulated: Library, kind: tuple[str, str, str, str], case: Case) -> None:
    run_and_check(emulated, kind, case, seed=hash((kind, case.id)) % 2**32)


def test_every_kernel_is_in_the_matrix() -> None:
    assert len(KERNELS) == len(set(KERNELS)) > 0
    assert {c.values[0] for c in MATRIX} == set(KERNELS)
