"""A batch of kernels' compile steps in one ``aotc-compile`` process: each kernel
compiled alone, only where its recorded step key differs, and its fatbin the
same whichever batch it fell in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_nvcc import FakeToolchain

from aotc.build import compile as compile_step
from aotc.build import nvrtc_fatbin

__all__: list[str] = []

KERNELS = ("k0", "k1", "k2")


def _source(name: str, body: str = "") -> bytes:
    return f'extern "C" __global__ void {name}(float* y) {{ y[0] = 1.0f{body}; }}\n'.encode()


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeToolchain:
    fake = FakeToolchain(tmp_path / "toolchain")
    for name, value in fake.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AOTC_BUILD_CACHE", "0")  # every step a real (fake) compile: what the batch skips is its own doing
    monkeypatch.chdir(tmp_path)
    gen = tmp_path / "lib" / "gen"
    gen.mkdir(parents=True)
    (tmp_path / "lib" / "fatbin").mkdir()
    for name in KERNELS:
        (gen / f"{name}.cu").write_bytes(_source(name))
    return fake


def batch(*extra: str, kernels: tuple[str, ...] = KERNELS) -> int:
    return compile_step.main(["--library=lib", "--sass=80", "--ptx=80", *extra, "--fatbin-dir=lib/fatbin", "--gen-dir=lib/gen", *kernels])


def compiled(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line.removeprefix("aotc: lib: compiling ") for line in capsys.readouterr().out.splitlines() if "compiling" in line]


def test_a_batch_compiles_only_what_changed_since_its_record(fake: FakeToolchain, capsys: pytest.CaptureFixture[str]) -> None:
    assert batch() == 0
    assert compiled(capsys) == list(KERNELS)
    assert fake.compiles() == 3
    assert all(Path(f"lib/fatbin/{k}.fatbin").is_file() and Path(f"lib/gen/{k}.resources.txt").is_file() for k in KERNELS)

    assert batch() == 0  # ninja reran the batch, nothing in it changed
    assert compiled(capsys) == [] and fake.compiles() == 3

    Path("lib/gen/k1.cu").write_bytes(_source("k1", " + 1.0f"))  # one source
    assert batch() == 0
    assert compiled(capsys) == ["k1"] and fake.compiles() == 4

    Path("lib/fatbin/k2.fatbin").unlink()  # an output gone
    assert batch() == 0
    assert compiled(capsys) == ["k2"]

    assert batch("--werror") == 0  # an option of the step: every kernel's key
    assert compiled(capsys) == list(KERNELS)

    fake.set_fingerprint("kind nvcc\nfake 2\n")  # another compiler
    assert batch("--werror") == 0
    assert compiled(capsys) == list(KERNELS)


def test_a_batch_stops_at_its_first_failure_and_keeps_no_record_of_it(fake: FakeToolchain, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NVCC_FAIL", "1")
    assert batch() == 2
    assert compiled(capsys) == ["k0"]  # k1 and k2 not tried
    assert not Path("lib/fatbin/k0.fatbin.key").exists()
    monkeypatch.delenv("FAKE_NVCC_FAIL")
    assert batch() == 0
    assert compiled(capsys) == list(KERNELS)


def test_the_one_kernel_form_is_unchanged(fake: FakeToolchain, capsys: pytest.CaptureFixture[str]) -> None:
    assert compile_step.main(["--sass=80", "--ptx=80", "--out=lib/fatbin/k0.fatbin", "--resources=lib/gen/k0.resources.txt", "lib/gen/k0.cu"]) == 0
    assert capsys.readouterr().out == ""  # ninja's own line names the kernel
    assert Path("lib/fatbin/k0.fatbin").is_file() and not Path("lib/fatbin/k0.fatbin.key").exists()
    with pytest.raises(SystemExit):
        compile_step.main(["--sass=80", "--out=x.fatbin", "--fatbin-dir=lib/fatbin", "--gen-dir=lib/gen", "k0", "k1"])


def test_a_kernels_fatbin_does_not_depend_on_its_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NVRTC, loaded once a batch, compiles each kernel as its own program: alone or
    beside others, first or last, its fatbin is byte for byte the same."""
    try:
        nvrtc_fatbin.load_toolchain(13)
    except nvrtc_fatbin.BuildError as exc:
        pytest.skip(f"NVRTC 13 is not installed: {exc}")
    monkeypatch.setenv("AOTC_TOOLCHAIN_KIND", "nvrtc")
    monkeypatch.setenv("AOTC_TOOLCHAIN_CUDA", "13")
    monkeypatch.setenv("AOTC_BUILD_CACHE", "0")
    monkeypatch.delenv("AOTC_TOOLCHAIN_FINGERPRINT", raising=False)
    monkeypatch.chdir(tmp_path)
    fatbins = {}
    for folder, kernels in (("alone", ("k1",)), ("batch", KERNELS), ("reversed", KERNELS[::-1])):
        os.makedirs(f"{folder}/gen")
        os.makedirs(f"{folder}/fatbin")
        for name in KERNELS:
            Path(f"{folder}/gen/{name}.cu").write_bytes(_source(name))
        args = ["--library=lib", "--sass=80", "--ptx=80", f"--fatbin-dir={folder}/fatbin", f"--gen-dir={folder}/gen", *kernels]
        assert compile_step.main(args) == 0
        fatbins[folder] = {name: Path(f"{folder}/fatbin/{name}.fatbin").read_bytes() for name in kernels}
    assert fatbins["alone"]["k1"] == fatbins["batch"]["k1"] == fatbins["reversed"]["k1"]
    assert fatbins["batch"] == fatbins["reversed"]
