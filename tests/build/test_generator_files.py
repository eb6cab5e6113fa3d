"""aotcTools.cmake's _AOTC_GENERATOR_FILES: the Python files the generate and
index steps depend on. A module they import but the list lacks is an edit that
silently rebuilds nothing."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import AOTC_IMPORT_ROOT, aotc_env

TOOLS = AOTC_IMPORT_ROOT / "aotc" / "build" / "cmake" / "aotcTools.cmake"


def listed_modules() -> set[str]:
    block = re.search(r"foreach\(module IN ITEMS(.*?)\)", TOOLS.read_text(), re.DOTALL)
    assert block, "no foreach(module IN ITEMS ...) in aotcTools.cmake"
    return {"aotc" if m == "__init__" else "aotc." + m.replace("/__init__", "").replace("/", ".") for m in block.group(1).split()}


def imported_modules() -> set[str]:
    # A fresh interpreter: what the build tool's process imports, nothing the tests loaded
    # (codegen too, which its generate step imports when it runs).
    code = "import sys, aotc.build.tool, aotc.build.codegen; print(*sorted(m for m in sys.modules if m.split('.')[0] == 'aotc'))"
    result = subprocess.run([sys.executable, "-c", code], env=aotc_env(), capture_output=True, text=True, timeout=120, check=True)
    return set(result.stdout.split())


def test_every_module_the_build_tool_imports_is_a_generator_dependency() -> None:
    missing = imported_modules() - listed_modules()
    assert not missing, f"add to _AOTC_GENERATOR_FILES in {TOOLS.name}: {sorted(missing)}"


def test_every_listed_file_exists() -> None:
    for module in listed_modules():
        path = AOTC_IMPORT_ROOT.joinpath(*module.split("."))
        assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), module
