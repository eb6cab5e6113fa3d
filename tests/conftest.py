from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import aotc

REPO = Path(__file__).resolve().parents[1]
# The aotc under test: the installed wheel under tox, the source tree otherwise.
AOTC_IMPORT_ROOT = Path(aotc.__file__).resolve().parents[1]


def aotc_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose Python imports the same aotc these tests import."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(AOTC_IMPORT_ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


RunAotc = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def run_aotc(tmp_path: Path) -> RunAotc:
    """Run the ``aotc`` CLI in a subprocess, as a user would."""

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "aotc", *args],
            cwd=cwd or tmp_path,
            env=aotc_env(env),
            capture_output=True,
            text=True,
            timeout=300,
        )

    return run


def installed_library(*, allow_override: bool = True) -> Path:
    """The tropical library under test: AOTC_TEST_LIBRARY (a built library folder,
    for running from a checkout) unless ``allow_override`` is False, else the
    installed one. Skips the calling
    module, saying why, when there is none, unless AOTC_REQUIRE_INSTALLED=1
    (tox), where a missing library is an error."""
    override = os.environ.get("AOTC_TEST_LIBRARY") if allow_override else None
    library = Path(override or aotc.library_dir("tropical"))
    if not (library / "index.json").is_file():
        reason = f"no tropical library at {library}: run through tox, pip install ., or set AOTC_TEST_LIBRARY"
        if os.environ.get("AOTC_REQUIRE_INSTALLED") == "1":
            raise RuntimeError(reason)
        pytest.skip(reason, allow_module_level=True)
    return library


@pytest.fixture(scope="session")
def emulated_tropical(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The tropical library on the CPU emulator, one per test session, with its
    own cache so each kernel compiles once per run and never touches the user's."""
    from aotc.runtime.cache import DiskCache
    from aotc.runtime.emulator.backend import EmulatorBackend
    from aotc.runtime.library import Library

    backend = EmulatorBackend(cache=DiskCache(tmp_path_factory.mktemp("emulator-cache")))
    return Library(installed_library(), backend=backend)
