"""Every build test gets a fatbin cache of its own: no test reads another's
entries or the user's (``aotc.build.fatbin_cache``)."""

from __future__ import annotations

from pathlib import Path

import pytest

__all__: list[str] = []


@pytest.fixture(autouse=True)
def private_build_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path_factory.mktemp("fatbin-cache") / "cache"
    monkeypatch.setenv("AOTC_BUILD_CACHE_DIR", str(directory))
    monkeypatch.delenv("AOTC_BUILD_CACHE", raising=False)
    for name in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN"):
        monkeypatch.delenv(name, raising=False)
    return directory
