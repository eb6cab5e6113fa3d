"""A process forked after it ran emulated kernels runs them too: fork() copies
OpenMP's record of its worker threads but not the threads, so the child
(a DataLoader's or a process pool's worker) runs every launch on one worker
(aotc.runtime.emulator.launch._after_fork) instead of waiting for ever."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import aotc_env, installed_library

SCRIPT = """\
import multiprocessing as mp
import sys

import numpy as np

from aotc import reference, tropical

tropical.set_library(sys.argv[1])
a = np.random.default_rng(0).random((37, 11)).astype(np.float32)
b = np.random.default_rng(1).random((11, 29)).astype(np.float32)
want = reference.matmul(a, b, "minplus")
assert np.array_equal(tropical.matmul(a, b, "minplus"), want)  # the parent's team of workers


def grandchild() -> None:
    assert np.array_equal(tropical.matmul(a, b, "maxplus"), reference.matmul(a, b, "maxplus"))


def child() -> None:
    assert np.array_equal(tropical.matmul(a, b, "minplus"), want)  # a library loaded before the fork
    assert np.array_equal(tropical.matmul(a, b, "maxmul"), reference.matmul(a, b, "maxmul"))  # a kernel loaded after it
    inner = mp.get_context("fork").Process(target=grandchild)
    inner.start()
    inner.join(120)
    assert inner.exitcode == 0, inner.exitcode


process = mp.get_context("fork").Process(target=child)
process.start()
process.join(240)
if process.is_alive():
    process.kill()
    raise SystemExit("the forked child hung")
assert process.exitcode == 0, process.exitcode
print("forked children ran their kernels")
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "register_at_fork"), reason="no fork() on this platform")
@pytest.mark.parametrize("threading", ["fibers", "os-threads"])
def test_a_child_forked_after_a_launch_runs_its_kernels(tmp_path: Path, threading: str) -> None:
    script = tmp_path / "fork.py"
    script.write_text(SCRIPT)
    env = aotc_env({"AOTC_BACKEND": "emulator", "AOTC_EMULATOR_THREADING": threading, "AOTC_EMULATOR_WORKERS": "2"})
    done = subprocess.run([sys.executable, str(script), str(installed_library())], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "forked children ran their kernels"
