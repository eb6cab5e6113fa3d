"""Adding a semiring is a manifest edit: max-min ("bottleneck") on f32, built
through the CMake package and checked on the emulator against the reference."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import aotc
from aotc.runtime.cache import DiskCache
from aotc.runtime.emulator.backend import EmulatorBackend
from aotc.runtime.library import Library
from conftest import aotc_env
from kernel_harness import Case, run_and_check
from tropical_manifest import tropical_manifest

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

MANIFEST = tropical_manifest(
    "bottleneck",
    {"maxmin": "{add: max, mul: min, zero: -inf, one: +inf}"},
    ["{semiring: maxmin, dtype: f32, pass: [forward, argmax], variant: [single, batched]}"],
    tile="{block_m: 64, block_n: 64, block_k: 8, thread_m: 4, thread_n: 4}",
    head="templates: aotc:tropical",
)

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.24)
project(bottleneck LANGUAGES NONE)
find_package(aotc CONFIG REQUIRED)
aotc_add_kernel_library(bottleneck MANIFEST manifest.yaml WARNINGS_AS_ERRORS)
"""


def test_max_min_is_a_manifest_only_edit(tmp_path: Path) -> None:
    project = tmp_path / "project"
    # The templates are aotc's shipped ones, named in the manifest: only the manifest is new.
    project.mkdir()
    (project / "manifest.yaml").write_text(MANIFEST)
    (project / "CMakeLists.txt").write_text(CMAKELISTS)
    build = project / "build"
    configure = [
        "cmake", "-S", str(project), "-B", str(build), "-G", "Ninja", "-DAOTC_ARCHS=80",
        f"-Daotc_DIR={aotc.cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}",
    ]  # fmt: skip
    for command in (configure, ["cmake", "--build", str(build)]):
        result = subprocess.run(command, capture_output=True, text=True, env=aotc_env(), timeout=900)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    backend = EmulatorBackend(cache=DiskCache(tmp_path / "cache"))
    library = Library(build / "aotc" / "bottleneck" / "lib", backend=backend)
    assert len(library) == 4
    for pass_name in ("forward", "argmax"):
        run_and_check(library, ("maxmin", "f32", pass_name, "single"), Case(37, 45, 70), seed=3)
        run_and_check(library, ("maxmin", "f32", pass_name, "batched"), Case(9, 11, 13, batch=3, a_batched=False), seed=4)
