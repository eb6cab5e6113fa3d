"""``aotc warm``: NVRTC-compile ahead of time what a device of --arch would JIT."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from aotc.runtime.select import ImageKind
from aotc.runtime.warm import plan_warm
from conftest import RunAotc
from runtime_support import RecordingBackend, make_library

KERNELS = ["gemm_maxplus_f32_forward", "gemm_maxplus_f32_forward_batched", "gemm_minplus_f32_forward"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_library(tmp_path_factory.mktemp("rt"))  # SASS and PTX for 8.0 only


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"AOTC_CACHE_DIR": str(tmp_path / "cache"), "AOTC_JIT": ""}


def outcomes(stdout: str) -> dict[str, str]:
    """kernel -> outcome, from warm's per-kernel lines."""
    found = re.findall(r"^  (compiled|hit|not needed|failed)\s+(\S+)", stdout, re.MULTILINE)
    return {kernel: outcome for outcome, kernel in found}


def test_warm_twice_compiles_then_hits_everything(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    first = run_aotc("warm", "--arch", "9.0", "--library", str(lib), env=env)
    assert first.returncode == 0, first.stderr
    assert outcomes(first.stdout) == dict.fromkeys(KERNELS, "compiled")
    assert "3 kernels: 3 compiled, 0 hits, 0 not needed, 0 failed" in first.stdout

    second = run_aotc("warm", "--arch", "9.0", "--library", str(lib), "-j", "1", env=env)
    assert second.returncode == 0, second.stderr
    assert outcomes(second.stdout) == dict.fromkeys(KERNELS, "hit")
    assert "0 compiled, 3 hits" in second.stdout


def test_warmed_entries_are_what_the_runtime_loads(
    run_aotc: RunAotc, lib: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_aotc("warm", "--arch", "9.0", "--library", str(lib), "--kernel", KERNELS[0], env=env).returncode == 0
    monkeypatch.setenv("AOTC_CACHE_DIR", env["AOTC_CACHE_DIR"])
    from aotc.runtime.library import Library

    launcher = Library(lib, backend=RecordingBackend((9, 0))).kernel(KERNELS[0])
    assert launcher.choice is not None and launcher.choice.kind is ImageKind.NVRTC_JIT
    assert "from the disk cache" in launcher.image


def test_jetson_87_is_compiled_although_86_and_80_sass_exist(tmp_path: Path) -> None:
    # NVIDIA's binary compatibility across minor versions does not hold on Tegra.
    jetson_lib = make_library(tmp_path, sass=("80", "86"), ptx=("86",))
    plan = plan_warm(jetson_lib, (8, 7))
    assert plan.to_compile == tuple(KERNELS)


def test_kernels_the_sass_serves_are_not_needed(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    result = run_aotc("warm", "--arch", "8.6", "--library", str(lib), env=env)
    assert result.returncode == 0, result.stderr
    assert outcomes(result.stdout) == dict.fromkeys(KERNELS, "not needed")
    assert "SASS sm_80 runs on sm_86" in result.stdout
    assert not list((Path(env["AOTC_CACHE_DIR"])).glob("*.entry"))


def test_driver_policy_compiles_nothing(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    result = run_aotc("warm", "--arch", "9.0", "--library", str(lib), env={**env, "AOTC_JIT": "driver"})
    assert result.returncode == 0, result.stderr
    assert outcomes(result.stdout) == dict.fromkeys(KERNELS, "not needed")
    assert "driver" in result.stdout


def test_one_kernel(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    result = run_aotc("warm", "--arch", "9.0", "--library", str(lib), "--kernel", KERNELS[2], env=env)
    assert result.returncode == 0, result.stderr
    assert outcomes(result.stdout) == {KERNELS[2]: "compiled"}
    assert "1 kernel: 1 compiled" in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        pytest.param(["--arch", "87"], 2, "'87' is not a compute capability; write it as X.Y, e.g. 8.7", id="arch-form"),
        pytest.param(["--arch", "7.0"], 1, "cannot warm for sm_70: NVRTC", id="nvrtc-cannot-target"),
        pytest.param(["--arch", "9.0", "--kernel", "gemm_nope"], 1, "has no kernel 'gemm_nope'", id="unknown-kernel"),
    ],
)
def test_errors_are_one_line(
    run_aotc: RunAotc, lib: Path, env: dict[str, str], args: list[str], code: int, message: str
) -> None:
    result = run_aotc("warm", "--library", str(lib), *args, env=env)
    assert result.returncode == code
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_library(run_aotc: RunAotc, tmp_path: Path, env: dict[str, str]) -> None:
    result = run_aotc("warm", "--arch", "9.0", "--library", str(tmp_path / "none"), env=env)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "no kernel library at" in result.stderr


@pytest.mark.skipif(os.name == "nt", reason="the cache checks POSIX modes")
def test_an_unusable_cache_fails_in_one_line(run_aotc: RunAotc, lib: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # writable by others: refused
    result = run_aotc("warm", "--arch", "9.0", "--library", str(lib), env={"AOTC_CACHE_DIR": str(shared)})
    assert result.returncode == 1
    assert "cannot warm: the cache at" in result.stderr and "refused" in result.stderr
    assert "Traceback" not in result.stderr
    # The cache's warning is one line of the CLI's own, not Python's file:line and source.
    lines = result.stderr.splitlines()
    assert lines[0].startswith("aotc: warning: not using the disk cache: "), result.stderr
    assert [line.split(":")[0] for line in lines] == ["aotc", "aotc"], result.stderr


def test_without_arch_the_emulator_is_refused_in_one_line(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    # --arch defaults to this machine's GPU; the emulator is none to warm for.
    result = run_aotc("warm", "--library", str(lib), env={**env, "AOTC_BACKEND": "emulator"})
    assert result.returncode == 1
    assert result.stderr == (
        "aotc: error: --arch: the emulator backend compiles each kernel's source itself and JITs nothing; "
        "name a GPU's arch (--arch X.Y)\n"
    )
