"""ci/gpu-suite.sh, as far as a machine with no GPU can take it: the shell
parses, and its own calls of the side-by-side benchmark and of the profiles
plan without a GPU (their flags are ones the scripts take)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import gemm_profile
import gemm_side_by_side

SUITE = REPO / "ci" / "gpu-suite.sh"
STAND_IN = Path(__file__).resolve().parent / "peer_stand_in.cu"


def _calls(script: str) -> list[list[str]]:
    """The suite's command lines that run a benchmarks/ script, variables filled in."""
    text = SUITE.read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        match = re.search(rf"python (benchmarks/{script}) (.*)$", line)
        if match:
            args = match[2].replace('"${arch}"', "90").replace('"$build"', "/tmp/build").replace('"$OUT"', "/tmp/out")
            found.append(shlex.split(args))
    return found


@pytest.mark.parametrize("script", ["ci/gpu-suite.sh", "ci/gpu-install.sh"])
def test_the_scripts_parse(script: str) -> None:
    done = subprocess.run(["bash", "-n", str(REPO / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_suites_side_by_side_plans_without_a_gpu(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (call,) = _calls("gemm_side_by_side.py")
    assert "--out" in call and "--build-dir" in call
    monkeypatch.setenv("AOTC_PEER_CU", str(STAND_IN))  # the suite names the peer by this variable
    assert gemm_side_by_side.main([*call, "--plan"]) == 0
    # Every pair and counting kernel, on 4096^3 and the ragged shape, plain and exact.
    assert capsys.readouterr().out.splitlines()[-1] == "112 rows"


def test_the_suites_profiles_plan_without_a_gpu(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (call,) = _calls("gemm_profile.py")
    monkeypatch.setenv("AOTC_PEER_CU", str(STAND_IN))
    assert gemm_profile.main([*call, "--plan"]) == 0
    passes = capsys.readouterr().out.splitlines()
    assert len(passes) == len(gemm_profile.CLASSES)
    for kind, line in zip(gemm_profile.CLASSES, passes):
        argv = shlex.split(line)
        assert argv[:3] == ["ncu", "--clock-control", "none"]
        assert argv[argv.index("--kernel") + 1] == kind and "--once" in argv
        assert argv[argv.index("--build-dir") + 1] == "/tmp/build"
