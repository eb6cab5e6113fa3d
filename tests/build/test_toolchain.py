"""Which compiler a build uses: found by explicit places only, of the lane's CUDA major."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from aotc.build import toolchain as _toolchain
from aotc.build.toolchain import find_nvcc, find_toolchain, lane_requirements
from aotc.errors import ToolchainError


def fake_nvcc(folder: Path, version: str) -> Path:
    """An executable that answers ``--version`` as nvcc ``version`` does."""
    folder.mkdir(parents=True, exist_ok=True)
    nvcc = folder / "nvcc"
    major, minor, _ = version.split(".")
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {major}.{minor}, V{version}'\n")
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IXUSR)
    return nvcc


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No nvcc anywhere the search looks, and no NVRTC wheels."""
    for var in ("AOTC_NVCC", "CUDACXX", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.setattr(_toolchain, "_pypi_nvcc_candidates", list)
    monkeypatch.setattr(_toolchain, "_nvrtc_toolchain", lambda cuda: None)
    return monkeypatch


def test_nvcc_on_path_of_the_lane_major_is_used(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    nvcc = fake_nvcc(tmp_path / "bin", "13.0.88")
    clean_env.setenv("PATH", str(nvcc.parent))
    found = find_toolchain("13")
    assert (found.kind, found.path, found.version, found.origin) == ("nvcc", str(nvcc.resolve()), "13.0.88", "PATH")
    assert found.identity == "nvcc 13.0.88 cuda13"


def test_an_nvcc_of_another_major_is_passed_over(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("PATH", str(fake_nvcc(tmp_path / "bin13", "13.0.88").parent))
    clean_env.setenv("CUDA_HOME", str(fake_nvcc(tmp_path / "cuda12" / "bin", "12.9.41").parent.parent))
    found = find_nvcc("12")
    assert found is not None and (found.version, found.origin) == ("12.9.41", "CUDA_HOME")


def test_cudacxx_comes_before_path(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("PATH", str(fake_nvcc(tmp_path / "a", "13.0.48").parent))
    clean_env.setenv("CUDACXX", str(fake_nvcc(tmp_path / "b", "13.0.88")))
    assert find_toolchain("13").version == "13.0.88"


def test_explicit_aotc_nvcc_of_the_wrong_major_is_an_error(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("AOTC_NVCC", str(fake_nvcc(tmp_path / "bin", "13.0.88")))
    with pytest.raises(ToolchainError, match=r"AOTC_NVCC=.* is CUDA 13.0.88, but this build is for CUDA 12 \(AOTC_CUDA\)"):
        find_toolchain("12")


def test_without_nvcc_the_nvrtc_wheels_build(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setattr(_toolchain, "_nvrtc_toolchain", lambda cuda: _toolchain.Toolchain("nvrtc", "", "12.9.86", cuda, "wheels"))
    found = find_toolchain("12")
    assert (found.kind, found.identity) == ("nvrtc", "nvrtc 12.9.86 cuda12")


def test_nothing_found_says_what_to_install(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ToolchainError) as info:
        find_toolchain("12")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("no CUDA 12 compiler: no nvcc of that version")
    assert "pip install nvidia-cuda-nvrtc-cu12>=12.8,<13 nvidia-nvfatbin-cu12>=12.8,<13" in message


def test_forcing_nvcc_never_falls_back(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setattr(_toolchain, "_nvrtc_toolchain", lambda cuda: _toolchain.Toolchain("nvrtc", "", "13.0.88", cuda, "wheels"))
    with pytest.raises(ToolchainError, match=r"no CUDA 13 nvcc found .*set AOTC_NVCC$"):
        find_toolchain("13", prefer="nvcc")


@pytest.mark.parametrize(("cuda", "prefer", "message"), [("11", "auto", "AOTC_CUDA='11'"), ("13", "gcc", "AOTC_COMPILER='gcc'")])
def test_bad_options_name_the_option(clean_env: pytest.MonkeyPatch, cuda: str, prefer: str, message: str) -> None:
    with pytest.raises(ToolchainError, match=message):
        find_toolchain(cuda, prefer)


def test_build_requirements_only_without_a_matching_nvcc(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert lane_requirements("13") == ["nvidia-cuda-nvrtc>=13.0,<14", "nvidia-nvfatbin>=13.0,<14"]
    assert lane_requirements("13", prefer="nvcc") == []
    clean_env.setenv("PATH", str(fake_nvcc(tmp_path / "bin", "13.0.88").parent))
    assert lane_requirements("13") == []
    assert lane_requirements("12") == ["nvidia-cuda-nvrtc-cu12>=12.8,<13", "nvidia-nvfatbin-cu12>=12.8,<13"]
    assert lane_requirements("13", prefer="nvrtc") == ["nvidia-cuda-nvrtc>=13.0,<14", "nvidia-nvfatbin>=13.0,<14"]


def test_main_writes_a_cmake_file(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("PATH", str(fake_nvcc(tmp_path / "bin", "13.0.88").parent) + os.pathsep + os.environ["PATH"])
    out = tmp_path / "toolchain.cmake"
    assert _toolchain.main(["--cuda=13", f"--out={out}"]) == 0
    text = out.read_text()
    assert 'set(_aotc_compiler_kind "nvcc")' in text
    assert 'set(_aotc_compiler_identity "nvcc 13.0.88 cuda13")' in text
    assert 'set(_aotc_min_driver "13000")' in text
    assert 'set(_aotc_lane_wheel "aotc")' in text


def test_main_reports_one_line_and_exit_1(clean_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _toolchain.main(["--cuda=12", f"--out={tmp_path / 'x.cmake'}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("aotc: error: no CUDA 12 compiler") and err.count("\n") == 1


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH")
def test_main_names_the_toolkits_own_folder_and_writes_the_fingerprint_once(tmp_path: Path) -> None:
    out, fingerprint = tmp_path / "toolchain.cmake", tmp_path / "compiler-fingerprint.txt"
    assert _toolchain.main(["--cuda=13", f"--out={out}", f"--fingerprint-out={fingerprint}"]) == 0
    (line,) = [line for line in out.read_text().splitlines() if line.startswith("set(_aotc_toolkit_bin ")]
    bin_dir = Path(line.split('"')[1])
    assert (bin_dir / "ptxas").read_bytes()[:4] == b"\x7fELF"  # the toolkit's, not a wrapper script beside nvcc
    assert fingerprint.read_text().startswith("kind nvcc\n")
    assert (tmp_path / "digests.json").is_file()
    written = fingerprint.stat().st_mtime_ns
    assert _toolchain.main(["--cuda=13", f"--out={out}", f"--fingerprint-out={fingerprint}"]) == 0
    assert fingerprint.stat().st_mtime_ns == written  # unchanged, so ninja recompiles nothing
