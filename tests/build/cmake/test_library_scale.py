"""A library past the old caps (1,024 kernels, 64 values an axis), built through
CMake as a downstream project builds one: 2,000 kernels of
``benchmarks/kernel_library.py``, batched compile steps, an index that loads,
a no-op rebuild and a one-kernel edit.

The size budget is the compiler's: a stand-in nvcc (``tests/fake_nvcc.py``,
a shell script that writes a fatbin of its source and arguments) takes the
place of a real compile, which costs a tenth of a second of CPU a kernel here;
what is under test is aotc's own work at this size. Real compiles of the same
batched steps are ``tests/build/test_compile_batch.py`` (NVRTC) and
``test_incremental_build.py`` (nvcc); the timed build is
``benchmarks/library_build.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import aotc
from conftest import REPO, aotc_env
from fake_nvcc import FakeToolchain

sys.path.insert(0, str(REPO / "benchmarks"))
import kernel_library

__all__: list[str] = []

COUNT = 2000
_COMPILED = re.compile(r"^aotc: scale2000: compiling (\w+)$", re.MULTILINE)


def _run(command: list[str], env: dict[str, str]) -> str:
    result = subprocess.run(command, capture_output=True, text=True, env=aotc_env(env), timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_a_library_of_2000_kernels_builds_rebuilds_nothing_and_one_edit_compiles_one(tmp_path: Path) -> None:
    root = tmp_path / "project"
    kernel_library.write_library(root, COUNT)
    fake = FakeToolchain(tmp_path / "toolchain")
    # The fatbin cache off: each kernel the build asks for is compiled, and counted.
    env = {"AOTC_NVCC": str(fake.nvcc), "AOTC_BUILD_CACHE": "0", "AOTC_COMPILER_LAUNCHER": ""}
    build = root / "build"
    configure = ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja", f"-Daotc_DIR={aotc.cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}"]
    assert f"aotc: scale{COUNT}: {COUNT} kernels" in _run(configure, env)

    log = _run(["cmake", "--build", str(build)], env)
    names = _COMPILED.findall(log)
    assert len(names) == COUNT == len(set(names))
    assert fake.compiles() == COUNT
    # 32 compile commands of at most 63 kernels (AOTC_COMPILE_BATCH=auto), not 2,000.
    assert len(re.findall(r"aotc: scale2000: compile step \d+ of 32 \(\d+ kernels\)", log)) == 32

    lib = build / "aotc" / f"scale{COUNT}" / "lib"
    index = json.loads((lib / "index.json").read_text())
    assert len(index["kernels"]) == COUNT and names[0] in index["kernels"]
    assert len(aotc.load(str(lib))) == COUNT

    assert _COMPILED.findall(_run(["cmake", "--build", str(build)], env)) == []

    kernel_library.write_library(root, COUNT, edit=1234)
    edited = _run(["cmake", "--build", str(build)], env)
    name = "axpb_{}_{}".format(*kernel_library.point_of(1234, kernel_library.axes_for(COUNT)))
    assert _COMPILED.findall(edited) == [name]
    assert re.findall(r"aotc: generated (\w+)\.cu", edited) == [name]
    assert fake.compiles() == COUNT + 1
