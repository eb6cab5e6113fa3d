"""NVRTC JIT through the disk cache, with the real NVRTC (no GPU needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aotc.errors import BuildError
from aotc.runtime import jit
from aotc.runtime.cache import DiskCache
from conftest import aotc_env
from runtime_support import make_library

KERNEL = "gemm_maxplus_f32_forward"

if jit.nvrtc_info() is None:  # pragma: no cover - the test extra installs nvidia-cuda-nvrtc
    pytest.fail(f"NVRTC is needed for these tests: {jit.nvrtc_problem()}", pytrace=False)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    lib = make_library(tmp_path_factory.mktemp("rt"))
    return (lib / "src" / f"{KERNEL}.cu").read_bytes()


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Counts real NVRTC compiles: the hook the 'compiled once' tests read."""
    calls: list[tuple[int, int]] = []
    real = jit.compile_cubin

    def counting(source: bytes, name: str, capability: tuple[int, int]) -> bytes:
        calls.append(capability)
        return real(source, name, capability)

    monkeypatch.setattr(jit, "compile_cubin", counting)
    return calls


def test_nvrtc_reports_its_version_and_targets() -> None:
    info = jit.nvrtc_info()
    assert info is not None
    assert info.version >= (13, 0)
    assert {(7, 5), (8, 0), (8, 7), (9, 0)} <= info.archs
    assert info.compiler == f"nvrtc {info.version[0]}.{info.version[1]}"


def test_compiles_a_cubin_for_exactly_the_arch(source: bytes) -> None:
    cubin = jit.compile_cubin(source, f"{KERNEL}.cu", (8, 7))
    assert cubin[:4] == b"\x7fELF"
    assert jit.nvrtc_options((8, 7)) == ("--gpu-architecture=sm_87", "-default-device")


def test_compiled_once_then_a_hit(source: bytes, tmp_path: Path, compiles: list) -> None:
    cache = DiskCache(tmp_path / "cache")
    first = jit.jit_cubin(source, f"{KERNEL}.cu", (8, 7), cache)
    second = jit.jit_cubin(source, f"{KERNEL}.cu", (8, 7), cache)
    assert (first.compiled, second.compiled) == (True, False)
    assert first.cubin == second.cubin
    assert compiles == [(8, 7)]
    assert (cache.stats.builds, cache.stats.hits) == (1, 1)


def test_each_arch_is_its_own_entry(source: bytes, tmp_path: Path, compiles: list) -> None:
    cache = DiskCache(tmp_path / "cache")
    jit.jit_cubin(source, "k.cu", (8, 6), cache)
    jit.jit_cubin(source, "k.cu", (8, 7), cache)
    jit.jit_cubin(source, "k.cu", (8, 7), cache)
    assert compiles == [(8, 6), (8, 7)]
    assert jit.jit_key(source, (8, 6)).digest != jit.jit_key(source, (8, 7)).digest
    assert jit.jit_key(source, (8, 7)).compiler == jit.nvrtc_info().compiler  # type: ignore[union-attr]


_SECOND_PROCESS = """
import sys
from pathlib import Path
from aotc.runtime.cache import DiskCache
from aotc.runtime.jit import jit_cubin
result = jit_cubin(Path(sys.argv[1]).read_bytes(), "k.cu", (8, 7), DiskCache(sys.argv[2]))
print("compiled" if result.compiled else "hit")
"""


def _in_process(source_file: Path, cache_dir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _SECOND_PROCESS, str(source_file), str(cache_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=aotc_env(),
    )


def test_a_second_process_hits_what_the_first_compiled(source: bytes, tmp_path: Path) -> None:
    source_file = tmp_path / "k.cu"
    source_file.write_bytes(source)
    outputs = []
    for _ in range(2):
        out, err = _in_process(source_file, tmp_path / "cache").communicate(timeout=120)
        assert not err, err
        outputs.append(out.strip())
    assert outputs == ["compiled", "hit"]


def test_racing_processes_compile_once(source: bytes, tmp_path: Path) -> None:
    source_file = tmp_path / "k.cu"
    source_file.write_bytes(source)
    racers = [_in_process(source_file, tmp_path / "cache") for _ in range(3)]
    outputs = sorted(racer.communicate(timeout=120)[0].strip() for racer in racers)
    assert outputs == ["compiled", "hit", "hit"]


def test_compile_errors_are_one_line(tmp_path: Path) -> None:
    bad = b'extern "C" __global__ void k(float* x) { x[0] = not_declared; }\n'
    with pytest.raises(BuildError, match=r"NVRTC failed to compile bad\.cu for sm_80: .*not_declared") as info:
        jit.jit_cubin(bad, "bad.cu", (8, 0), DiskCache(tmp_path / "cache"))
    assert "\n" not in str(info.value)
    assert not list((tmp_path / "cache").glob("*.entry"))


def test_an_arch_nvrtc_cannot_target_is_refused(source: bytes) -> None:
    with pytest.raises(BuildError, match="cannot compile k.cu for sm_70"):
        jit.compile_cubin(source, "k.cu", (7, 0))


def test_without_nvrtc_the_reason_is_kept(monkeypatch: pytest.MonkeyPatch, source: bytes) -> None:
    monkeypatch.setattr(jit, "probe", jit.NvrtcProbe((None, "libnvrtc cannot be loaded (test)")))
    assert jit.nvrtc_info() is None
    with pytest.raises(BuildError, match=r"NVRTC is not available: libnvrtc cannot be loaded \(test\)"):
        jit.compile_cubin(source, "k.cu", (8, 0))
