"""The fatbin cache, through the compile step that consults it (``aotc.build.compile``).

A fake nvcc (``tests/fake_nvcc.py``) logs its calls and writes output that
depends on its source and arguments, so a hit must write exactly the bytes a
compile would, and a miss shows as one more ``-fatbin`` call.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_nvcc import FakeToolchain

from aotc.build import fatbin_cache
from aotc.errors import BuildError

__all__: list[str] = []


@pytest.fixture
def fake(tmp_path: Path) -> FakeToolchain:
    return FakeToolchain(tmp_path)


def outputs(folder: Path) -> tuple[bytes, bytes]:
    return (folder / "tropical/fatbin/k.fatbin").read_bytes(), (folder / "tropical/gen/k.resources.txt").read_bytes()


def test_another_build_directory_hits_and_writes_what_a_compile_writes(fake: FakeToolchain) -> None:
    first, second = fake.build_dir("clone-a"), fake.build_dir("clone-b")
    rc, out, err = fake.compile(first)
    assert (rc, fake.compiles()) == (0, 1)
    # ptxas' report goes to the index (resources.txt), not the log, where it buried errors.
    assert "cached" not in out and err == ""
    assert b"ptxas info" in outputs(first)[1]

    rc, out, err = fake.compile(second)
    assert (rc, fake.compiles()) == (0, 1)  # no compiler ran
    assert out.splitlines() == ["aotc: tropical: cached k"]
    assert outputs(second) == outputs(first)
    assert err == ""  # as a compile shows it


@pytest.mark.parametrize(
    ("extra", "env"),
    [
        (["--compress=balance"], {}),
        (["--sass=80"], {}),
        (["--ptx=80"], {}),
        (["--werror"], {}),
        ([], {"NVCC_APPEND_FLAGS": "-DX=1"}),
        ([], {"NVCC_PREPEND_FLAGS": "-G"}),
        ([], {"NVCC_CCBIN": "clang++"}),
        ([], {"AOTC_COMPILER_LAUNCHER": "env"}),  # per-arch calls: another ptxas report
    ],
    ids=["compression", "sass", "ptx", "werror", "append-flags", "prepend-flags", "ccbin", "launcher"],
)
def test_each_input_of_the_step_misses(fake: FakeToolchain, extra: list[str], env: dict[str, str]) -> None:
    assert fake.compile(fake.build_dir("a"))[0] == 0
    rc, out, _ = fake.compile(fake.build_dir("b"), *extra, env=env)
    assert rc == 0 and "cached" not in out
    assert fake.compiles() == 2
    rc, out, _ = fake.compile(fake.build_dir("c"), *extra, env=env)
    assert out.splitlines() == ["aotc: tropical: cached k"]  # and that entry is then a hit


def test_an_edited_source_misses(fake: FakeToolchain) -> None:
    fake.compile(fake.build_dir("a"))
    rc, out, _ = fake.compile(fake.build_dir("b", b"__global__ void k() { /* edited */ }\n"))
    assert (rc, out, fake.compiles()) == (0, "", 2)


def test_another_compiler_misses(fake: FakeToolchain) -> None:
    fake.compile(fake.build_dir("a"))
    fake.set_fingerprint("kind nvcc\nfake 2\n")  # what configure writes for another nvcc
    rc, out, _ = fake.compile(fake.build_dir("b"))
    assert (rc, out, fake.compiles()) == (0, "", 2)


def test_other_implicit_headers_miss(fake: FakeToolchain) -> None:
    fake.compile(fake.build_dir("a"))
    # A new build directory preprocesses the empty .cu afresh (the memo is per build directory).
    other = FakeToolchain(fake.root / "other-build", fingerprint=fake.fingerprint)
    other.nvcc, other.log = fake.nvcc, fake.log
    other.env["AOTC_TOOLCHAIN_NVCC"] = str(fake.nvcc)
    rc, out, _ = other.compile(other.build_dir("b"), env={"FAKE_HEADERS": "cuda_runtime.h of another toolkit"})
    assert (rc, out, fake.compiles()) == (0, "", 2)


@pytest.mark.parametrize("token", ["#include <cstdio>", "__has_include(<x>)", "__FILE__", "__DATE__", "__TIME__", "__TIMESTAMP__"])
def test_a_source_that_reaches_outside_itself_is_never_cached(fake: FakeToolchain, token: str) -> None:
    source = f"// {token}\n__global__ void k() {{}}\n".encode()
    for name in ("a", "b"):
        rc, out, _ = fake.compile(fake.build_dir(name, source))
        assert rc == 0
        assert out.startswith("aotc: tropical: not cached k: it uses ")
    assert fake.compiles() == 2


def test_a_failed_compile_stores_nothing(fake: FakeToolchain, private_build_cache: Path) -> None:
    rc, _, err = fake.compile(fake.build_dir("a"), env={"FAKE_NVCC_FAIL": "1"})
    assert rc == 2 and "fake failure" in err
    assert not list(private_build_cache.glob("*.entry"))
    assert fake.compile(fake.build_dir("b"))[0] == 0
    assert fake.compiles() == 2


def test_the_switch_turns_the_cache_off(fake: FakeToolchain, private_build_cache: Path) -> None:
    for name in ("a", "b"):
        assert fake.compile(fake.build_dir(name), env={"AOTC_BUILD_CACHE": "0"})[1] == ""
    assert fake.compiles() == 2
    assert not private_build_cache.exists()


def test_without_a_fingerprint_nothing_is_cached(fake: FakeToolchain, private_build_cache: Path) -> None:
    for name in ("a", "b"):
        assert fake.compile(fake.build_dir(name), env={"AOTC_TOOLCHAIN_FINGERPRINT": ""})[0] == 0
    assert fake.compiles() == 2
    assert not private_build_cache.exists()


def test_a_bad_cap_is_one_line(fake: FakeToolchain) -> None:
    rc, _, err = fake.compile(fake.build_dir("a"), env={"AOTC_BUILD_CACHE_MAX_BYTES": "lots"})
    assert rc == 1
    assert err == "aotc: error: AOTC_BUILD_CACHE_MAX_BYTES='lots' is not a whole number of bytes (for example 2147483648)\n"


def test_the_default_directory_is_build_under_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AOTC_BUILD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "the-runtime-cache"))  # the runtime's, not the build's
    assert fatbin_cache.build_cache_dir() == tmp_path / "aotc" / "build"
    monkeypatch.setenv("AOTC_BUILD_CACHE_DIR", "~/elsewhere")
    assert fatbin_cache.build_cache_dir() == Path(os.path.expanduser("~/elsewhere"))


def test_payloads_round_trip_and_garbage_is_refused() -> None:
    payload = fatbin_cache.pack(b"\x50\xed\x55\xba fatbin", b"ptxas info : Used 8 registers\n")
    assert fatbin_cache.unpack(payload) == (b"\x50\xed\x55\xba fatbin", b"ptxas info : Used 8 registers\n")
    assert fatbin_cache.unpack(b"") is None
    assert fatbin_cache.unpack(b"NOTAFAT\x00" + payload[8:]) is None
    assert fatbin_cache.unpack(payload[:20]) is None  # shorter than its stated fatbin


def test_keys_separate_every_option_and_the_compiler() -> None:
    base = fatbin_cache.fatbin_key(b"k", fingerprint="nvcc 1", options=["sass=80"])
    assert base.digest == fatbin_cache.fatbin_key(b"k", fingerprint="nvcc 1", options=["sass=80"]).digest
    others = [
        fatbin_cache.fatbin_key(b"k2", fingerprint="nvcc 1", options=["sass=80"]),
        fatbin_cache.fatbin_key(b"k", fingerprint="nvcc 2", options=["sass=80"]),
        fatbin_cache.fatbin_key(b"k", fingerprint="nvcc 1", options=["sass=90"]),
        fatbin_cache.fatbin_key(b"k", fingerprint="nvcc 1", options=["sass=80", "werror=1"]),
    ]
    assert len({base.digest, *(key.digest for key in others)}) == 5


def test_a_bad_cap_from_the_module_is_a_build_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_BUILD_CACHE_MAX_BYTES", "-1")
    with pytest.raises(BuildError, match="AOTC_BUILD_CACHE_MAX_BYTES='-1'"):
        fatbin_cache.build_cache()
