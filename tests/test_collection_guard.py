"""The collection guard fails a run that would silently leave test files out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from collection_guard import uncollected
from conftest import aotc_env

TESTS = Path(__file__).resolve().parent


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = aotc_env({"PYTHONPATH": str(TESTS)})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "collection_guard", "-q", "-p", "no:cacheprovider", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )


def test_uncollected_names_files_without_tests(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"a/test_x.py": "", "build/test_y.py": "", "packages/p/test_z.py": "", "b/test_s.py": ""})
    assert uncollected(root, [root / "a/test_x.py"], [root / "b/test_s.py"]) == ["build/test_y.py"]


def test_a_run_that_skips_a_build_folder_fails(tmp_path: Path) -> None:
    # pytest's default norecursedirs skips `build`: exactly the gap this guards.
    root = _tree(tmp_path, {
        "suite/test_ok.py": "def test_ok():\n    pass\n",
        "suite/build/test_hidden.py": "def test_hidden():\n    pass\n",
    })
    result = _pytest(root, "suite")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "collection guard: 1 test file(s) yielded no test: suite/build/test_hidden.py" in result.stderr


def test_a_file_with_no_test_fails_and_a_skipped_file_passes(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "suite/test_ok.py": "def test_ok():\n    pass\n",
        "suite/test_empty.py": "def helper():\n    pass\n",
        "suite/test_skipped.py": "import pytest\npytest.skip('no GPU', allow_module_level=True)\n",
    })
    result = _pytest(root, "suite")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "suite/test_empty.py" in result.stderr and "test_skipped" not in result.stderr
    (root / "suite/test_empty.py").write_text("def test_now():\n    pass\n")
    result = _pytest(root, "suite")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed, 1 skipped" in result.stdout


def test_selecting_by_keyword_is_not_a_gap(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"suite/test_a.py": "def test_a():\n    pass\n", "suite/test_b.py": "def test_b():\n    pass\n"})
    result = _pytest(root, "suite", "-k", "test_a")
    assert result.returncode == 0, result.stdout + result.stderr
