"""The fatbin cache under the faults the runtime's JIT cache is held to
(``test_cache_faults.py``, ``tests/runtime/test_cache.py``), through the build's
compile step: a killed filler, racing fillers, damaged entries, unsafe or
read-only directories, a full disk. Each must still build the right fatbin.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path

import pytest
from fake_nvcc import FakeToolchain

from aotc._cache import _store
from aotc.build import compile as compile_step

__all__: list[str] = []


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "fatbin-cache"
    monkeypatch.setenv("AOTC_BUILD_CACHE_DIR", str(directory))
    monkeypatch.delenv("AOTC_BUILD_CACHE", raising=False)
    return directory


@pytest.fixture
def fake(tmp_path: Path, cache_dir: Path) -> FakeToolchain:
    return FakeToolchain(tmp_path / "toolchain")


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.entry"))


def fatbin(folder: Path) -> bytes:
    return (folder / "tropical/fatbin/k.fatbin").read_bytes()


def in_process(fake: FakeToolchain, folder: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """One compile step in this process, so that a test can patch the store under it."""
    for name, value in fake.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(folder)
    return compile_step.main(fake.argv())


def test_a_filler_killed_mid_compile_leaves_no_entry_and_frees_its_lock(fake: FakeToolchain, cache_dir: Path) -> None:
    dying = fake.run(fake.build_dir("a"), env={"FAKE_NVCC_SLEEP": "30"}, start_new_session=True)
    deadline = time.monotonic() + 60
    while not list(cache_dir.glob("*.lock")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the fake nvcc is asleep inside the locked fill
    os.killpg(dying.pid, signal.SIGKILL)
    dying.communicate(timeout=60)
    assert dying.returncode == -signal.SIGKILL
    assert entries(cache_dir) == []

    started = time.monotonic()
    rc, out, _ = fake.compile(fake.build_dir("b"))
    assert (rc, out) == (0, "")
    assert time.monotonic() - started < 20  # the dead filler's flock died with it
    assert len(entries(cache_dir)) == 1


def test_a_writer_killed_mid_write_leaves_a_temp_file_that_breaks_nothing(fake: FakeToolchain, cache_dir: Path) -> None:
    first = fake.build_dir("a")
    fake.compile(first)
    (entry,) = entries(cache_dir)
    whole = entry.read_bytes()
    entry.unlink()
    dead = cache_dir / f".{entry.name[:-6]}.0123456789abcdef.tmp"
    dead.write_bytes(whole[: len(whole) // 2])  # what a kill -9 during the write leaves

    rc, out, _ = fake.compile(fake.build_dir("b"))
    assert (rc, out, fake.compiles()) == (0, "", 2)  # a miss, compiled again
    assert entries(cache_dir) == [entry]
    assert fake.compile(fake.build_dir("c"))[1] == "aotc: tropical: cached k\n"


def test_racing_fillers_compile_once(fake: FakeToolchain) -> None:
    folders = [fake.build_dir(name) for name in ("a", "b", "c")]
    children = [fake.run(folder, env={"FAKE_NVCC_SLEEP": "1"}) for folder in folders]
    results = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0, 0]
    assert fake.compiles() == 1
    assert sorted(out.decode() for out, _ in results) == ["", "aotc: tropical: cached k\n", "aotc: tropical: cached k\n"]
    assert fatbin(folders[0]) == fatbin(folders[1]) == fatbin(folders[2])


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty", "another key's"])
def test_a_damaged_entry_is_compiled_again_and_rewritten(fake: FakeToolchain, cache_dir: Path, damage: str) -> None:
    first = fake.build_dir("a")
    fake.compile(first)
    (entry,) = entries(cache_dir)
    data = bytearray(entry.read_bytes())
    if damage == "truncated":
        data = data[: len(data) - 7]
    elif damage == "flipped":
        data[-3] ^= 0x40
    elif damage == "empty":
        data = bytearray()
    else:
        fake.compile(fake.build_dir("other", b"__global__ void other() {}\n"))
        other = next(path for path in entries(cache_dir) if path != entry)
        data = bytearray(other.read_bytes())
    entry.write_bytes(bytes(data))
    compiled = fake.compiles()

    second = fake.build_dir("b")
    rc, out, _ = fake.compile(second)
    assert (rc, out, fake.compiles()) == (0, "", compiled + 1)
    assert fatbin(second) == fatbin(first)
    assert fake.compile(fake.build_dir("c"))[1] == "aotc: tropical: cached k\n"  # rewritten whole


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o757])
def test_a_directory_others_can_write_is_refused_with_one_line(fake: FakeToolchain, cache_dir: Path, mode: int) -> None:
    cache_dir.mkdir()
    cache_dir.chmod(mode)
    for name in ("a", "b"):
        rc, out, err = fake.compile(fake.build_dir(name))
        assert (rc, out) == (0, "")
        warnings = [line for line in err.splitlines() if line.startswith("aotc: warning:")]
        assert len(warnings) == 1
        assert "writable by group or others" in warnings[0] and "AOTC_BUILD_CACHE_DIR" in warnings[0]
    assert fake.compiles() == 2
    assert list(cache_dir.iterdir()) == []


def test_a_directory_of_another_user_is_refused(
    fake: FakeToolchain, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_dir.mkdir(mode=0o700)
    monkeypatch.setattr(os, "geteuid", lambda: cache_dir.stat().st_uid + 1)
    assert in_process(fake, fake.build_dir("a"), monkeypatch) == 0
    assert "is owned by uid" in capsys.readouterr().err
    assert list(cache_dir.iterdir()) == []


def test_a_file_in_place_of_the_directory_is_refused(fake: FakeToolchain, cache_dir: Path) -> None:
    cache_dir.write_bytes(b"not a directory")
    rc, _, err = fake.compile(fake.build_dir("a"))
    assert rc == 0 and "is not a directory" in err
    assert cache_dir.read_bytes() == b"not a directory"


def test_a_read_only_directory_serves_hits_and_stores_nothing(
    fake: FakeToolchain, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fake.compile(fake.build_dir("a"))[0] == 0  # filled while writable
    fake.compile(fake.build_dir("new", b"__global__ void fresh() {}\n"))
    before = sorted(p.name for p in cache_dir.iterdir())
    real_access = os.access
    # Root ignores mode bits, so the directory's write permission is withdrawn where the store asks for it.
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == cache_dir else real_access(path, mode, **kw))
    compiled = fake.compiles()

    assert in_process(fake, fake.build_dir("b"), monkeypatch) == 0
    assert capsys.readouterr().out == "aotc: tropical: cached k\n"
    folder = fake.build_dir("c", b"__global__ void k() { /* a change */ }\n")
    assert in_process(fake, folder, monkeypatch) == 0
    assert capsys.readouterr().out == ""
    assert fake.compiles() == compiled + 1
    assert sorted(p.name for p in cache_dir.iterdir()) == before  # nothing stored, no lock file either


def test_a_full_disk_builds_the_fatbin_and_stores_nothing(
    fake: FakeToolchain, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    folder = fake.build_dir("a")
    assert in_process(fake, folder, monkeypatch) == 0
    assert fatbin(folder).startswith(b"fatbin of")
    assert entries(cache_dir) == []
    assert not list(cache_dir.glob(".*.tmp"))  # the half-written temp file is removed


def test_a_lock_held_too_long_is_given_up_and_the_step_still_builds(
    fake: FakeToolchain, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fcntl = pytest.importorskip("fcntl", reason="flock needs fcntl (POSIX)")
    monkeypatch.setattr(_store, "LOCK_WAIT_SECONDS", 0.3)
    assert in_process(fake, fake.build_dir("a"), monkeypatch) == 0
    (entry,) = entries(cache_dir)
    entry.unlink()
    # A stuck filler (a hung build on an NFS share, say) holds this key's lock.
    fd = os.open(cache_dir / (entry.name[: -len(".entry")] + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        capsys.readouterr()
        folder = fake.build_dir("b")
        assert in_process(fake, folder, monkeypatch) == 0
        err = capsys.readouterr().err
        assert "fill lock" in err and "building this entry without it" in err
        assert fatbin(folder).startswith(b"fatbin of")
    finally:
        os.close(fd)
