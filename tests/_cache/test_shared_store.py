"""The store both caches share (``aotc._cache``): one implementation, named by each side's setting.

Its behaviour under faults is tested through each side: the JIT cache in
``tests/runtime/test_cache.py`` and ``tests/faults/test_cache_faults.py``, the
fatbin cache in ``tests/faults/test_build_cache_faults.py``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import aotc._cache as store
from aotc.build import fatbin_cache
from aotc.errors import CacheError, CacheWarning
from aotc.runtime import cache as jit_cache

__all__: list[str] = []


def test_both_caches_are_the_one_store() -> None:
    assert jit_cache.DiskCache is store.DiskCache
    assert jit_cache.CacheKey is store.CacheKey
    assert isinstance(fatbin_cache.build_cache(), store.DiskCache)


@pytest.mark.parametrize("setting", ["AOTC_CACHE_DIR", "AOTC_BUILD_CACHE_DIR"])
def test_a_refused_directory_names_the_setting_that_chose_it(tmp_path: Path, setting: str) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheWarning)
        assert store.DiskCache(shared, setting=setting).state == store.STATE_REFUSED
    (warning,) = caught
    assert f"set {setting} to a private directory" in str(warning.message)


def test_the_user_cache_dir_follows_xdg_and_names_the_setting_when_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert store.user_cache_dir("AOTC_BUILD_CACHE_DIR") == tmp_path / "aotc"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.user_cache_dir("AOTC_BUILD_CACHE_DIR") == tmp_path / "home" / ".cache" / "aotc"
    monkeypatch.delenv("HOME")
    monkeypatch.setattr("os.path.expanduser", lambda path: path)  # no home folder to be found
    with pytest.raises(CacheError, match="set AOTC_BUILD_CACHE_DIR"):
        store.user_cache_dir("AOTC_BUILD_CACHE_DIR")
