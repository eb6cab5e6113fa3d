"""The examples in examples/ run as a user runs them, on the emulator backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, aotc_env, installed_library

installed_library(allow_override=False)  # the examples load the installed library by name


@pytest.mark.parametrize("example", ["numpy_shortest_paths.py", "torch_viterbi.py", "jax_viterbi.py"])
def test_example_runs(example: str, tmp_path: Path) -> None:
    if example.startswith("torch"):
        pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")
    if example.startswith("jax"):
        pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
    env = aotc_env({"AOTC_BACKEND": "emulator", "AOTC_CACHE_DIR": str(tmp_path / "cache")})
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / example)], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip()
