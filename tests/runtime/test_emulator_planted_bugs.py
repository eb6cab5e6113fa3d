"""Kernels broken on purpose must fail on the emulator: the differential check,
and each class of the emulator's checks (AOTC_EMULATOR_CHECK) with a bug of its
own, planted by editing the shipped template.

If they passed, a green differential run would prove nothing."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aotc import reference
from aotc.build.codegen import render_kernel
from aotc.build.manifest import load_manifest
from aotc.errors import KernelFaultError
from aotc.runtime.cache import DiskCache
from aotc.runtime.emulator.backend import EmulatorBackend
from aotc.runtime.emulator.checks import asan_environment
from conftest import REPO, aotc_env, first_fault
from kernel_harness import Case, DeviceArrays, operands
from tropical_manifest import tropical_manifest

MANIFEST = tropical_manifest(
    "planted",
    {"maxplus": "{add: max, mul: add, zero: -inf, one: 0}", "maxmul": "{add: max, mul: mul, zero: -inf, one: 1}"},
    ["{semiring: [maxplus, maxmul], dtype: f32, pass: forward, variant: single}"],
    splits=False,  # the launches below pack the arrays and sizes alone
)

# The barrier that ends each k tile (it also votes on whether the next is plain).
BARRIER = "        impure = __syncthreads_or(!plain_next);\n"
K_BOUND = "const int k_end = min(BK, K - t * BK);"
# The first tile's barrier, which thread x = 0 skips in the planted sync bug.
FIRST_BARRIER = "bool impure = __syncthreads_or(!plain_next);"
BUGS = {
    "correct": ("", ""),
    "missing-syncthreads": (BARRIER, "        impure = !plain_next;\n"),
    "off-by-one-k-bound": (K_BOUND, "const int k_end = min(BK, K - t * BK + 1);"),
    # Row M of A is one past its last: a read past the end of A's allocation.
    "off-by-one-row-bound": ("(row < M && ((full) || col < K - e))", "(row <= M && ((full) || col < K - e))"),
    # The first tile is loaded into registers but never stored to shared memory.
    "read-before-write": ("        AOTC_STORE_TILE(0);\n", ""),
    "barrier-in-thread-dependent-branch": (
        FIRST_BARRIER,
        "bool impure = threadIdx.x == 0 ? !plain_next : __syncthreads_or(!plain_next);",
    ),
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
    kernel = next(k for k in manifest.kernels if dict(k.axes)["semiring"] == semiring)
    backend = EmulatorBackend(cache=DiskCache(tmp_path / "cache"))
    function = backend.get_function(backend.load_module(render_kernel(manifest, kernel).encode(), name=kernel.name), kernel.symbol)
    a, b = operands(case, "f32", semiring, seed=7)
    memory = DeviceArrays(backend)
    c = np.full((case.m, case.n), 12345.0, np.float32)
    pa, pb, pc = memory.upload(a), memory.upload(b), memory.upload(c)
    params = struct.pack("@QQQiiiqqq", pa, pb, pc, case.m, case.n, case.k, case.k, case.n, case.n)
    launch = kernel.launch
    tile = dict(kernel.constants)
    grid = (-(-case.n // tile["block_n"]), -(-case.m // tile["block_m"]), 1)
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


# ---- the emulator's checks: each class fails on a bug of its own ---------------------------
# The check under test alone, so each checker is shown able to fail by itself.
# The memory check reads AddressSanitizer's shadow, which must be loaded first:
# it runs in a child process started with libasan preloaded.
CHECKED = [
    ("race", "missing-syncthreads", "race check: (read after write|write after read|write after write): "),
    ("init", "read-before-write", "init check: uninitialized read: "),
    ("sync", "barrier-in-thread-dependent-branch", "sync check: divergent barrier: "),
]


@pytest.mark.parametrize(("check", "bug", "message"), CHECKED)
def test_check_catches_its_planted_bug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: str, bug: str, message: str) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", check)
    with pytest.raises(KernelFaultError) as caught:
        _run(tmp_path, bug, "maxmul", CASE)
    text = first_fault(caught.value)
    assert re.match(rf"gemm_maxmul_f32_forward: {message}", text), text
    assert "\n" not in text
    if check == "sync":
        # Thread x = 0 skipped the first barrier and waits at the next one.
        where = r"gemm_maxmul_f32_forward:\d+"
        assert re.search(rf"waits at the __syncthreads of {where} while thread \(0, 0, 0\) waits at {where}$", text), text
    else:
        assert re.search(r"block \(\d+, \d+, 0\) thread \(\d+, \d+, 0\) (reads|writes) shared gemm_maxmul_f32_forward::[AB]s \+ \d+ bytes", text), text
        assert re.search(r" \(gemm_maxmul_f32_forward:\d+\)$", text), text  # the access's line


def test_shipped_template_passes_race_init_and_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "race,init,sync")
    for semiring in ("maxplus", "maxmul"):
        got, want = _run(tmp_path / semiring, "correct", semiring, CASE)
        np.testing.assert_array_equal(got, want)


def _run_checked_in_child(tmp_path: Path, bug: str, check: str) -> str:
    """Runs ``bug`` under ``check`` in a Python started with libasan first; returns its verdict line."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from runtime.test_emulator_planted_bugs import CASE, _run\n"
        "from aotc.errors import KernelFaultError\n"
        "try:\n"
        f"    _run(Path({str(tmp_path)!r}), {bug!r}, 'maxmul', CASE)\n"
        "    print('clean')\n"
        "except KernelFaultError as error:\n"
        "    print(error)\n"
    )
    tests = str(Path(__file__).resolve().parents[1])
    env = aotc_env({**asan_environment(), "AOTC_EMULATOR_CHECK": check})
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], tests])
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return first_fault(result.stdout.strip().splitlines()[-1])


def test_memory_check_catches_a_bound_off_by_one(tmp_path: Path) -> None:
    assert _run_checked_in_child(tmp_path / "correct", "correct", "memory") == "clean"
    verdict = _run_checked_in_child(tmp_path / "bug", "off-by-one-row-bound", "memory")
    # CASE is 45 x 37 x 61: row 45 of A starts 45 * 61 * 4 = 10980 bytes in,
    # where A ends and the harness's poisoned guard band begins.
    assert re.fullmatch(
        r"gemm_maxmul_f32_forward: memory check: out of bounds: block \(\d+, 1, 0\) thread \(\d+, \d+, 0\) "
        r"reads 4 bytes at argument A \+ 109\d\d bytes \(bytes AddressSanitizer marks off limits: a redzone, a guard "
        r"band, or freed memory\) \(gemm_maxmul_f32_forward:\d+\)",
        verdict,
    ), verdict
