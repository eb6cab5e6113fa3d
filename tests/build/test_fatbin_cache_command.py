"""``aotc cache --build info | clear | prune``: the build's fatbin cache, beside the JIT cache's commands."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import RunAotc

from aotc._cache import CacheKey, DiskCache

__all__: list[str] = []


def fill(directory: Path, count: int, size: int = 1000) -> None:
    cache = DiskCache(directory)
    for i in range(count):
        key = CacheKey.for_source(f"kernel {i}".encode(), target="fatbin", compiler="test")
        assert cache.save(key, bytes(size))
        os.utime(directory / f"{key.digest}.entry", ns=(i * 10**9, i * 10**9))  # oldest first


def test_info_prune_and_clear_act_on_the_build_cache_only(run_aotc: RunAotc, tmp_path: Path) -> None:
    build, jit = tmp_path / "build-cache", tmp_path / "jit-cache"
    fill(build, 4)
    fill(jit, 2)
    env = {"AOTC_BUILD_CACHE_DIR": str(build), "AOTC_CACHE_DIR": str(jit)}

    info = run_aotc("cache", "info", "--build", env=env)
    assert info.returncode == 0, info.stderr
    assert info.stdout.splitlines() == [
        f"directory: {build}",
        "state:     ok",
        "entries:   4, 4.2 KiB of 2.00 GiB (AOTC_BUILD_CACHE_MAX_BYTES)",  # 4 x (1000 + an 84-byte header)
    ]
    assert run_aotc("cache", "--build", "info", env=env).stdout == info.stdout  # either place

    pruned = run_aotc("cache", "prune", "--build", "--max-bytes", "2200", env=env)
    assert "removed 2 entries; 2 entries" in pruned.stdout
    cleared = run_aotc("cache", "clear", "--build", env=env)
    assert cleared.stdout.strip() == f"{build}: removed 2 entries"
    assert not list(build.glob("*.entry"))
    assert len(list(jit.glob("*.entry"))) == 2  # the JIT cache is not the build's


def test_a_refused_build_directory_says_why(run_aotc: RunAotc, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    info = run_aotc("cache", "info", "--build", env={"AOTC_BUILD_CACHE_DIR": str(shared)})
    assert info.returncode == 0
    assert "state:     refused (" in info.stdout and "writable by group or others" in info.stdout
    cleared = run_aotc("cache", "clear", "--build", env={"AOTC_BUILD_CACHE_DIR": str(shared)})
    assert cleared.returncode == 1
    assert cleared.stderr.startswith(f"aotc: error: cannot clear the cache at {shared}: ")
