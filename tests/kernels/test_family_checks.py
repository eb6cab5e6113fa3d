"""A declared family runs under the emulator's checks (AOTC_EMULATOR_CHECK), so
an author tests a new kernel on a laptop: rowops passes them, and a barrier
taken out of its softmax is reported as the race it makes."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import aotc
import aotc.kernels
from aotc.errors import KernelFaultError
from declared_support import ROWOPS, declared_library

CHECKS = "race,init,sync"  # memory needs libasan preloaded: tests/runtime/test_emulator_checks.py runs it


def checked(root: Path, kernels: Path) -> aotc.kernels.Kernels:
    lib = declared_library(root, kernels / "manifest.yaml")
    return aotc.kernels.over(aotc.load(lib, backend="emulator"))


def test_rowops_passes_the_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", CHECKS)
    rowops = checked(tmp_path, ROWOPS)
    x = np.random.default_rng(3).normal(size=(3, 600))
    np.testing.assert_allclose(rowops.softmax(x).sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(rowops.scan(x), np.cumsum(x, axis=1), rtol=1e-9, atol=1e-9)


def test_a_missing_barrier_is_reported_as_a_race(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernels = tmp_path / "kernels"
    shutil.copytree(ROWOPS, kernels)
    template = kernels / "templates" / "softmax.cu.j2"
    text = template.read_text()
    barrier = "    __syncthreads();  // everyone has read partial[0] before the sum reuses it\n"
    assert barrier in text
    template.write_text(text.replace(barrier, ""))
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", CHECKS)
    rowops = checked(tmp_path / "lib", kernels)
    with pytest.raises(KernelFaultError, match=r"^softmax_f64: race check: .* shared softmax_f64::partial"):
        rowops.softmax(np.ones((1, 300)))
