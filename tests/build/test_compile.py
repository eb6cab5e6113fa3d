"""One kernel's compile step: the nvcc command it runs, and the report it keeps."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from aotc.build import compile as _compile
from aotc.build.compile import nvcc_command


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


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_without_a_launcher_one_nvcc_builds_every_arch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.txt"
    nvcc = _script(tmp_path / "nvcc", f"echo nvcc \"$@\" >> {log}\necho 'ptxas info    : Used 42 registers' >&2\n")
    monkeypatch.setenv("AOTC_TOOLCHAIN_KIND", "nvcc")
    monkeypatch.setenv("AOTC_TOOLCHAIN_NVCC", str(nvcc))
    monkeypatch.delenv("AOTC_COMPILER_LAUNCHER", raising=False)
    report = tmp_path / "k.resources.txt"
    assert _compile.main(["--sass=80,90", "--ptx=90", f"--resources={report}", "--out=k.fatbin", "k.cu"]) == 0
    (call,) = log.read_text().splitlines()
    assert call.split()[:3] == ["nvcc", "-fatbin", "--resource-usage"]
    assert report.read_text() == "ptxas info    : Used 42 registers\n"


def test_a_launcher_gets_one_call_per_arch_then_fatbinary_bundles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sccache mishandles a multi-arch nvcc -fatbin under concurrency: single-arch calls only.
    log = tmp_path / "calls.txt"
    bin_dir = tmp_path / "cuda" / "bin"
    bin_dir.mkdir(parents=True)
    # The fake nvcc writes its -o file and reports per arch; fatbinary records its images.
    nvcc = _script(
        bin_dir / "nvcc",
        f'echo nvcc "$@" >> {log}\nwhile [ "$1" != "-o" ]; do shift; done; echo image > "$2"\n'
        "echo 'ptxas info    : one arch' >&2\n",
    )
    _script(bin_dir / "fatbinary", f'echo fatbinary "$@" >> {log}\n')
    _script(
        bin_dir / "ptxas",
        f'echo ptxas "$@" >> {log}\nwhile [ "$1" != "-o" ]; do shift; done; echo image > "$2"\n'
        "echo 'ptxas info    : one arch' >&2\n",
    )
    launcher = _script(tmp_path / "launcher", f'echo launcher >> {log}\nexec "$@"\n')
    monkeypatch.setenv("AOTC_TOOLCHAIN_KIND", "nvcc")
    monkeypatch.setenv("AOTC_TOOLCHAIN_NVCC", str(nvcc))
    monkeypatch.setenv("AOTC_COMPILER_LAUNCHER", str(launcher))
    monkeypatch.setenv("AOTC_COMPILE_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "k.cu").write_text("__global__ void k() {}\n")
    report = tmp_path / "k.resources.txt"
    assert _compile.main(["--sass=80,90", "--ptx=90", "--werror", f"--resources={report}", "--out=out/k.fatbin", "gen/k.cu"]) == 0
    calls = log.read_text().splitlines()
    assert calls[0::2][:4] == ["launcher"] * 4
    parts = "out/k.fatbin.parts"
    # The front end once per arch, from a copy of the source in a scratch folder
    # named by its bytes (so the cache key holds no build path), then ptxas.
    assert re.fullmatch(r"nvcc -ptx -arch=compute_80 -Werror all-warnings -o k\.compute_80\.\d+\.ptx k\.cu", calls[1])
    assert re.fullmatch(r"nvcc -ptx -arch=compute_90 -Werror all-warnings -o k\.compute_90\.\d+\.ptx k\.cu", calls[3])
    assert calls[5] == f"ptxas --warning-as-error -arch=sm_80 -m64 -v {parts}/k.compute_80.ptx -o {parts}/k.sm_80.cubin"
    assert calls[7] == f"ptxas --warning-as-error -arch=sm_90 -m64 -v {parts}/k.compute_90.ptx -o {parts}/k.sm_90.cubin"
    scratch = list((tmp_path / "scratch" / "aotc-compile").iterdir())
    assert len(scratch) == 1 and (scratch[0] / "k.cu").read_text() == "__global__ void k() {}\n"
    bundle = calls[8].split(" ")
    assert bundle[:3] == ["fatbinary", "--create=out/k.fatbin", "-64"]
    assert bundle[-4:] == [
        "--compress-mode=size",
        "--image3=kind=elf,sm=80,file=out/k.fatbin.parts/k.sm_80.cubin",
        "--image3=kind=elf,sm=90,file=out/k.fatbin.parts/k.sm_90.cubin",
        "--image3=kind=ptx,sm=90,file=out/k.fatbin.parts/k.compute_90.ptx",
    ]
    assert report.read_text() == "ptxas info    : one arch\n" * 4
    assert not (tmp_path / "out" / "k.fatbin.parts").exists()


def test_a_failing_compiler_fails_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_TOOLCHAIN_KIND", "nvcc")
    monkeypatch.setenv("AOTC_TOOLCHAIN_NVCC", "false")
    monkeypatch.delenv("AOTC_COMPILER_LAUNCHER", raising=False)
    assert _compile.main(["--sass=80", "--out=k.fatbin", "k.cu"]) == 1
