"""Every kernel of the installed library on a real GPU, against the reference.

The same harness and cases as the emulator's differential matrix, through the
cuda-python backend: fresh random inputs, outputs poisoned and guarded."""

from __future__ import annotations

import json

import pytest

import aotc
from aotc.runtime.library import Library
from conftest import gpu_problem
from kernel_harness import Case, run_and_check

LIBRARY = aotc.library_dir("tropical")
LIBRARY_PROBLEM = "" if (LIBRARY / "index.json").is_file() else f"no installed tropical library at {LIBRARY}"
GPU_PROBLEM = gpu_problem() or LIBRARY_PROBLEM
# Without a GPU, conftest.py skips every test marked gpu with the probe's reason.
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(bool(LIBRARY_PROBLEM), reason=LIBRARY_PROBLEM)]

KERNELS = (
    [(e["axes"]["semiring"], e["axes"]["dtype"], e["axes"]["pass"], e["axes"]["variant"]) for e in json.loads((LIBRARY / "index.json").read_text())["kernels"].values()]
    if not GPU_PROBLEM
    else []
)
SINGLE = [
    Case(1, 1, 1), Case(7, 13, 5), Case(65, 33, 129), Case(5, 4, 0), Case(300, 257, 511),
    Case(256, 384, 200), Case(37, 48, 40, misaligned=True),
]  # fmt: skip
BATCHED = [Case(7, 13, 5, batch=3), Case(7, 13, 5, batch=3, a_batched=False), Case(130, 72, 40, batch=4, b_batched=False)]


@pytest.fixture(scope="module")
def gpu_library() -> Library:
    return Library(LIBRARY, backend="cuda-python")


@pytest.mark.parametrize("kind", KERNELS, ids=["-".join(k) for k in KERNELS])
def test_kernel_matches_reference_on_gpu(gpu_library: Library, kind: tuple[str, str, str, str]) -> None:
    for index, case in enumerate(BATCHED if kind[3] == "batched" else SINGLE):
        run_and_check(gpu_library, kind, case, seed=index)
