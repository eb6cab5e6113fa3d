"""The architecture, checked: the import-linter contracts in pyproject.toml hold.

Build time (manifest, codegen, compilers) and run time (index.json, load,
launch) meet only at index.json; the run-time side imports nothing of the
build's, Jinja2 and PyYAML included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from conftest import AOTC_IMPORT_ROOT, REPO, aotc_env
from test_import_time import FORBIDDEN

PYPROJECT = REPO / "pyproject.toml"


def lint_imports_command() -> str:
    """The ``lint-imports`` beside this Python, else on PATH. Skips, saying why, when
    import-linter is not installed, unless AOTC_REQUIRE_INSTALLED=1 (tox): then it fails."""
    found = shutil.which("lint-imports", path=sysconfig.get_path("scripts")) or shutil.which("lint-imports")
    if found is None:
        reason = "import-linter is not installed: pip install 'import-linter>=2' (in aotc's test extra)"
        if os.environ.get("AOTC_REQUIRE_INSTALLED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def lint_imports(import_root: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = aotc_env({"PYTHONPATH": str(import_root)})
    return subprocess.run(
        [lint_imports_command(), "--config", str(PYPROJECT), "--no-cache"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def contract_names() -> list[str]:
    text = PYPROJECT.read_text()
    contracts = text.split("[[tool.importlinter.contracts]]")[1:]
    return [re.search(r'^name = "(.*)"$', c, re.MULTILINE).group(1) for c in contracts]  # type: ignore[union-attr]


def verdicts(stdout: str) -> dict[str, str]:
    """contract name -> KEPT or BROKEN, from lint-imports' report (names may wrap)."""
    flat = " ".join(stdout.split())
    return {name: m.group(1) for name in contract_names() if (m := re.search(re.escape(name) + r" (KEPT|BROKEN)", flat))}


def test_the_contracts_are_stated() -> None:
    assert contract_names() == [
        "The runtime, the array layer, the tropical API and the generated bindings import nothing of aotc.build",
        "The shared modules (errors, dtypes, generated code, index, archs, semiring, reference, the cache store) import neither side",
        "aotc.build imports neither the runtime nor the tropical API",
        "The runtime, the array layer, the tropical API and the generated bindings import neither Jinja2 nor PyYAML",
        "The tropical API over the generated bindings over the array layer over the runtime, never the other way",
        "Build pipeline: the build tool over codegen over the manifest over its field parsers over the signature (the ABI) over YAML",
        "No import cycles between the parts of any package, sub-packages included",
        "Backends do not import one another",
    ]


def test_every_contract_is_kept(tmp_path: Path) -> None:
    result = lint_imports(AOTC_IMPORT_ROOT, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert verdicts(result.stdout) == dict.fromkeys(contract_names(), "KEPT")
    assert f"Contracts: {len(contract_names())} kept, 0 broken." in result.stdout


def test_a_planted_import_breaks_its_contract(tmp_path: Path) -> None:
    """The contracts bite: the runtime importing the manifest, and the tropical API
    importing PyYAML, are each reported, with the offending line."""
    copy = tmp_path / "src"
    python_only = shutil.ignore_patterns("_lib", "__pycache__", "templates", "cmake")
    shutil.copytree(AOTC_IMPORT_ROOT / "aotc", copy / "aotc", ignore=python_only)
    with (copy / "aotc" / "runtime" / "launcher.py").open("a") as f:
        f.write("\nimport aotc.build.manifest  # planted\n")
    with (copy / "aotc" / "tropical" / "__init__.py").open("a") as f:
        f.write("\nimport yaml  # planted\n")
    result = lint_imports(copy, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    names = contract_names()
    broken = {names[0], names[3]}
    assert verdicts(result.stdout) == {name: "BROKEN" if name in broken else "KEPT" for name in names}
    assert "aotc.runtime.launcher -> aotc.build.manifest" in result.stdout
    assert "aotc.tropical -> yaml" in result.stdout


def test_import_aotc_is_checked_for_the_heavy_imports() -> None:
    # tests/test_import_time.py runs `import aotc` and asserts none of FORBIDDEN is imported.
    assert {"jinja2", "yaml", "numpy", "torch", "cuda"} <= set(FORBIDDEN)
