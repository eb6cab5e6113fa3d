"""Kernels broken on purpose must fail the differential check on the emulator.

If they passed, a green differential run would prove nothing."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from aotc import reference
from aotc.build.codegen import render_kernel
from aotc.build.manifest import load_manifest
from aotc.runtime.cache import DiskCache
from aotc.runtime.emulator.backend import EmulatorBackend
from conftest import REPO
from kernel_harness import Case, DeviceArrays, operands

MANIFEST = """\
library: planted
semirings:
  maxplus: {add: max, mul: add, zero: -inf, one: 0}
  maxmul: {add: max, mul: mul, zero: -inf, one: 1}
dtypes: [f32]
families:
  gemm:
    template: gemm.cu.j2
    matrix: {semiring: [maxplus, maxmul], dtype: [f32], pass: [forward]}
    tiles: {f32: {block_m: 32, block_n: 32, block_k: 8, thread_m: 4, thread_n: 4}}
"""

# The barrier that ends each k tile (it also votes on whether the next is plain).
BARRIER = "        impure = __syncthreads_or(!plain_next);\n"
K_BOUND = "const int k_end = min(BK, K - t * BK);"
BUGS = {
    "correct": ("", ""),
    "missing-syncthreads": (BARRIER, "        impure = !plain_next;\n"),
    "off-by-one-k-bound": (K_BOUND, "const int k_end = min(BK, K - t * BK + 1);"),
}


def _run(tmp_path: Path, bug: str, semiring: str, case: Case) -> tuple[np.ndarray, np.ndarray]:
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "aotc" / "build" / "templates" / "tropical", templates)
    old, new = BUGS[bug]
    body = templates / "gemm" / "product.cuh.j2"
    if old:
        text = body.read_text()
        assert text.count(old) == 1, f"the planted bug {bug!r} no longer matches the template"
        body.write_text(text.replace(old, new))
    (tmp_path / "manifest.yaml").write_text(MANIFEST)
    manifest = load_manifest(tmp_path / "manifest.yaml")
    kernel = next(k for k in manifest.kernels if k.semiring.name == semiring)
    backend = EmulatorBackend(cache=DiskCache(tmp_path / "cache"))
    function = backend.get_function(backend.load_module(render_kernel(manifest, kernel).encode(), name=kernel.name), kernel.symbol)
    a, b = operands(case, "f32", semiring, seed=7)
    memory = DeviceArrays(backend)
    c = np.full((case.m, case.n), 12345.0, np.float32)
    pa, pb, pc = memory.upload(a), memory.upload(b), memory.upload(c)
    params = struct.pack("@QQQiiiqqq", pa, pb, pc, case.m, case.n, case.k, case.k, case.n, case.n)
    launch = kernel.launch
    grid = (-(-case.n // kernel.tile.block_n), -(-case.m // kernel.tile.block_m), 1)
    backend.launch(function, (grid, launch.block, 0), None, params)
    got = memory.download(pc, c)
    memory.free()
    return got, reference.matmul(a, b, semiring)


# Several K tiles, ragged M, N and K: where both bugs have something to break.
CASE = Case(45, 37, 61)


def test_the_unbroken_template_passes(tmp_path: Path) -> None:
    for semiring in ("maxplus", "maxmul"):
        got, want = _run(tmp_path / semiring, "correct", semiring, CASE)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bug", ["missing-syncthreads", "off-by-one-k-bound"])
def test_planted_bug_is_caught(tmp_path: Path, bug: str) -> None:
    # A missing barrier races on shared tiles; a k bound one too far lets tile
    # padding (the largest finite float) into the product, which max-times
    # turns into +inf.
    got, want = _run(tmp_path, bug, "maxmul", CASE)
    assert not np.array_equal(got, want, equal_nan=True), f"{bug} went unnoticed"
