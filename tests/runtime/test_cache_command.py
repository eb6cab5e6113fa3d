"""``aotc cache info | clear | prune`` over the disk cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aotc.runtime.cache import CacheKey, DiskCache
from conftest import RunAotc


def fill(directory: Path, count: int, size: int = 1000) -> DiskCache:
    cache = DiskCache(directory)
    for i in range(count):
        key = CacheKey.for_source(f"source {i}".encode(), target="sm_87", compiler="test")
        assert cache.save(key, bytes(size))
        os.utime(directory / f"{key.digest}.entry", ns=(i * 10**9, i * 10**9))  # oldest first
    return cache


def test_info_on_a_fresh_directory(run_aotc: RunAotc, tmp_path: Path) -> None:
    result = run_aotc("cache", "info", env={"AOTC_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"directory: {tmp_path / 'cache'}",
        "state:     ok",
        "entries:   0, 0 B of 2.00 GiB (AOTC_CACHE_MAX_BYTES)",
    ]


def test_info_clear_and_prune(run_aotc: RunAotc, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    fill(directory, 4)
    env = {"AOTC_CACHE_DIR": str(directory)}
    assert "entries:   4," in run_aotc("cache", "info", env=env).stdout

    pruned = run_aotc("cache", "prune", "--max-bytes", "2200", env=env)
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 2 entries; 2 entries" in pruned.stdout

    capped = run_aotc("cache", "prune", env={**env, "AOTC_CACHE_MAX_BYTES": "1100"})
    assert "removed 1 entries; 1 entries" in capped.stdout

    cleared = run_aotc("cache", "clear", env=env)
    assert cleared.returncode == 0
    assert cleared.stdout.strip() == f"{directory}: removed 1 entries"
    assert not list(directory.glob("*.entry"))


@pytest.mark.skipif(os.name == "nt", reason="the cache checks POSIX modes")
def test_a_refused_directory(run_aotc: RunAotc, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env = {"AOTC_CACHE_DIR": str(shared)}
    info = run_aotc("cache", "info", env=env)
    assert info.returncode == 0
    assert "state:     refused (" in info.stdout and "writable by group or others" in info.stdout
    assert "CacheWarning" not in info.stderr
    clear = run_aotc("cache", "clear", env=env)
    assert clear.returncode == 1
    assert clear.stderr.startswith("aotc: error: cannot clear the cache at")
    assert clear.stderr.count("\n") == 1


def test_a_bad_size_cap_is_one_line(run_aotc: RunAotc, tmp_path: Path) -> None:
    result = run_aotc("cache", "info", env={"AOTC_CACHE_DIR": str(tmp_path), "AOTC_CACHE_MAX_BYTES": "2GB"})
    assert result.returncode == 1
    assert "AOTC_CACHE_MAX_BYTES='2GB'" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_action_is_required(run_aotc: RunAotc) -> None:
    assert run_aotc("cache").returncode == 2


def test_clear_also_clears_nvrtcs_answers(run_aotc: RunAotc, tmp_path: Path) -> None:
    # NVRTC's answers live in a folder of the cache's own (aotc.runtime.jit);
    # clearing the cache must not leave them behind.
    directory = tmp_path / "cache"
    fill(directory, 2)
    fill(directory / "nvrtc-answers", 1, size=200)
    cleared = run_aotc("cache", "clear", env={"AOTC_CACHE_DIR": str(directory)})
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.strip() == f"{directory}: removed 2 entries (and 1 NVRTC answers)"
    assert not list(directory.rglob("*.entry"))
