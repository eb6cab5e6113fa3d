"""NVRTC JIT through the disk cache, with the real NVRTC (no GPU needed)."""

from __future__ import annotations

import os
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
    with pytest.raises(BuildError, match=r"cannot compile k\.cu for sm_70"):
        jit.compile_cubin(source, "k.cu", (7, 0))


def test_without_nvrtc_the_reason_is_kept(monkeypatch: pytest.MonkeyPatch, source: bytes) -> None:
    monkeypatch.setattr(jit, "probe", jit.NvrtcProbe((None, "libnvrtc cannot be loaded (test)")))
    assert jit.nvrtc_info() is None
    with pytest.raises(BuildError, match=r"NVRTC is not available: libnvrtc cannot be loaded \(test\)"):
        jit.compile_cubin(source, "k.cu", (8, 0))


# --- NVRTC's answer kept under the libnvrtc file's identity ---------------------

IDENTITY = ("/opt/x/libnvrtc.so.13", 1234, 5678)
ANSWER = (jit.NvrtcInfo((13, 0), frozenset({(8, 0), (9, 0)})), "")


def _asking(calls: list[str]):  # type: ignore[no-untyped-def]
    def ask() -> tuple[jit.NvrtcInfo | None, str]:
        calls.append("asked")
        return ANSWER

    return ask


def test_a_recorded_answer_is_read_without_asking_nvrtc(tmp_path: Path) -> None:
    cache, calls = DiskCache(tmp_path / "cache"), []
    first = jit.NvrtcProbe(ask=_asking(calls), locate=lambda: IDENTITY, cache=cache)
    assert first() == ANSWER and first.asked == 1
    later = jit.NvrtcProbe(ask=_asking(calls), locate=lambda: IDENTITY, cache=cache)
    assert later() == ANSWER and later.asked == 0
    assert calls == ["asked"]


@pytest.mark.parametrize("changed", [("/opt/y/libnvrtc.so.13", 1234, 5678), ("/opt/x/libnvrtc.so.13", 1235, 5678), ("/opt/x/libnvrtc.so.13", 1234, 5679)])
def test_another_libnvrtc_file_is_asked_again(tmp_path: Path, changed: tuple[str, int, int]) -> None:
    cache, calls = DiskCache(tmp_path / "cache"), []
    jit.NvrtcProbe(ask=_asking(calls), locate=lambda: IDENTITY, cache=cache)()
    jit.NvrtcProbe(ask=_asking(calls), locate=lambda: changed, cache=cache)()
    assert calls == ["asked", "asked"]


@pytest.mark.parametrize("record", [b"", b"13.0\n", b"x.y\n80\n", b"13.0\n8.0.1\n"])
def test_a_damaged_record_is_a_miss(tmp_path: Path, record: bytes) -> None:
    cache, calls = DiskCache(tmp_path / "cache"), []
    cache.save(jit._probe_key(IDENTITY), record)  # noqa: SLF001 - the record's key
    assert jit.NvrtcProbe(ask=_asking(calls), locate=lambda: IDENTITY, cache=cache)() == ANSWER
    assert calls == ["asked"]


def test_no_file_identity_asks_and_keeps_nothing(tmp_path: Path) -> None:
    cache, calls = DiskCache(tmp_path / "cache"), []
    for _ in range(2):
        jit.NvrtcProbe(ask=_asking(calls), locate=lambda: None, cache=cache)()
    assert calls == ["asked", "asked"]
    assert not list((tmp_path / "cache").glob("*.entry"))


def test_locate_finds_the_libnvrtc_cuda_bindings_loads() -> None:
    from cuda.pathfinder import load_nvidia_dynamic_lib

    found = jit.locate_nvrtc()
    assert found is not None
    assert found[0] == os.path.realpath(load_nvidia_dynamic_lib("nvrtc").abs_path)
    assert found[1:] == (os.stat(found[0]).st_size, os.stat(found[0]).st_mtime_ns)


def test_a_jit_cache_hit_on_an_unlisted_arch_calls_no_nvrtc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aotc.runtime.library import Library
    from runtime_support import RecordingBackend

    lib = make_library(tmp_path / "lib")  # SASS and PTX for 8.0 only: 9.0 takes NVRTC
    cache = DiskCache(tmp_path / "cache")
    monkeypatch.setattr(jit, "probe", jit.NvrtcProbe(cache=cache))
    first = Library(lib, backend=RecordingBackend((9, 0)), cache=cache).kernel(KERNEL)
    assert "compiled now" in first.image and jit.probe.asked == 1

    def refuse(*args: object) -> tuple[None, str]:
        raise AssertionError("NVRTC was called on a cache hit")

    monkeypatch.setattr(jit, "probe", jit.NvrtcProbe(ask=refuse, cache=cache))
    monkeypatch.setattr(jit, "compile_cubin", refuse)
    again = Library(lib, backend=RecordingBackend((9, 0)), cache=cache).kernel(KERNEL)
    assert "from the disk cache" in again.image and jit.probe.asked == 0


_HIT_PROCESS = """
import sys
from aotc.runtime.library import Library
from aotc.runtime.backends.noop import NoopBackend
launcher = Library(sys.argv[1], backend=NoopBackend((9, 0))).kernel(sys.argv[2])
maps = open("/proc/self/maps").read()
print(launcher.image, "libnvrtc" in maps, "cuda.bindings.nvrtc" in sys.modules)
"""


def test_a_later_process_hitting_the_cache_loads_no_libnvrtc(tmp_path: Path) -> None:
    lib = make_library(tmp_path / "lib")
    env = aotc_env({"AOTC_CACHE_DIR": str(tmp_path / "cache")})
    outputs = [
        subprocess.run([sys.executable, "-c", _HIT_PROCESS, str(lib), KERNEL], env=env, capture_output=True, text=True, timeout=120, check=True).stdout.strip()
        for _ in range(2)
    ]  # fmt: skip
    assert outputs == ["NVRTC cubin for sm_90 (compiled now) True True", "NVRTC cubin for sm_90 (from the disk cache) False False"]
