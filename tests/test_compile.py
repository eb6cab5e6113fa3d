"""One kernel's compile step: the nvcc command it runs, and the report it keeps."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from aotc import _compile
from aotc._compile import nvcc_command


def test_sass_and_ptx_become_generate_code_pairs() -> None:
    command = nvcc_command("nvcc", "gen/k.cu", "fatbin/k.fatbin", ["80", "90a", "120"], ["120"], werror=False, compress="size")
    assert command == [
        "nvcc", "-fatbin", "--resource-usage",
        "--generate-code=arch=compute_80,code=sm_80",
        "--generate-code=arch=compute_90a,code=sm_90a",
        "--generate-code=arch=compute_120,code=[sm_120,compute_120]",
        "--compress-mode=size", "-o", "fatbin/k.fatbin", "gen/k.cu",
    ]  # fmt: skip


def test_ptx_only_arch_werror_and_no_compression() -> None:
    command = nvcc_command("nvcc", "k.cu", "k.fatbin", ["75"], ["90"], werror=True, compress="none")
    assert "--generate-code=arch=compute_90,code=compute_90" in command
    assert command[command.index("-Werror") + 1] == "all-warnings"
    assert "--no-compress" in command and not any(c.startswith("--compress-mode") for c in command)
    assert not any(c.startswith("--compress") for c in nvcc_command("n", "k.cu", "k.f", ["75"], [], werror=False, compress="default"))


def test_runs_launcher_then_nvcc_and_keeps_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A launcher that records its arguments and prints a ptxas-like report on stderr.
    log = tmp_path / "argv.txt"
    launcher = tmp_path / "launcher"
    launcher.write_text(f"#!/bin/sh\necho \"$@\" > {log}\necho 'ptxas info    : Used 42 registers' >&2\n")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("AOTC_TOOLCHAIN_KIND", "nvcc")
    monkeypatch.setenv("AOTC_TOOLCHAIN_NVCC", "/opt/cuda/bin/nvcc")
    monkeypatch.setenv("AOTC_COMPILER_LAUNCHER", str(launcher))
    report = tmp_path / "k.resources.txt"
    rc = _compile.main(["--sass=80", "--ptx=80", f"--resources={report}", "--out=k.fatbin", "k.cu"])
    assert rc == 0
    assert log.read_text().split() == ["/opt/cuda/bin/nvcc", "-fatbin", "--resource-usage", "--generate-code=arch=compute_80,code=[sm_80,compute_80]", "--compress-mode=size", "-o", "k.fatbin", "k.cu"]
    assert report.read_text() == "ptxas info    : Used 42 registers\n"


def test_a_failing_compiler_fails_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_TOOLCHAIN_KIND", "nvcc")
    monkeypatch.setenv("AOTC_TOOLCHAIN_NVCC", "false")
    monkeypatch.delenv("AOTC_COMPILER_LAUNCHER", raising=False)
    assert _compile.main(["--sass=80", "--out=k.fatbin", "k.cu"]) == 1
