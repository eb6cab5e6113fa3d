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
