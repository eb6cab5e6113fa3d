"""A template whose kernel does not take its declared parameters fails the build,
in one line naming the family and the parameter (aotc.build.signature.parameter_check)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_nvrtc
from declared_support import AXPY, write_project
from runtime.runtime_support import cmake_build

# The template spells its own parameter list, with x writable: not what the signature declares.
WRONG = AXPY["templates/axpy.cu.j2"].replace("{{ params }}", "{{ ctype.x }}* x, {{ ctype.y }}* y, int rows, int n, double alpha")
CMAKE = "cmake_minimum_required(VERSION 3.24)\nproject(axpy LANGUAGES NONE)\nfind_package(aotc CONFIG REQUIRED)\naotc_add_kernel_library(axpylib MANIFEST manifest.yaml)\n"


@pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("ninja") is None, reason="needs nvcc and ninja to build")
def test_the_build_names_the_family_and_the_parameter(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write_project(project, {**AXPY, "templates/axpy.cu.j2": WRONG, "CMakeLists.txt": CMAKE})
    result = cmake_build(project, tmp_path / "build", "80")
    assert result.returncode != 0
    log = result.stdout + result.stderr
    lines = [line for line in log.splitlines() if line.startswith("aotc: error:")]
    assert lines, log[-3000:]
    # ninja runs two compiles at once: the first to fail may be an f32 or an f64 kernel.
    pattern = r"aotc: error: \S+/axpy_f(32|64)_(64|128)\.cu: family axpy: parameter x \(1 of 5\) must be const (float|double)\*, as its signature declares"
    assert re.fullmatch(pattern, lines[0]), lines


def test_nvrtc_refuses_it_too(tmp_path: Path) -> None:
    """The same check holds under NVRTC, the other compiler a build may use."""
    require_nvrtc()
    from aotc.build.codegen import render_kernel
    from aotc.build.manifest import load_manifest

    manifest = load_manifest(write_project(tmp_path, {**AXPY, "templates/axpy.cu.j2": WRONG}))
    source = tmp_path / "axpy.cu"
    source.write_text(render_kernel(manifest, manifest.kernels[0]))
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from aotc.build.nvrtc_fatbin import main; sys.exit(main(sys.argv[1:]))",
         "--cuda", "13", "--sass", "80", "--ptx", "80", "--out", str(tmp_path / "axpy.fatbin"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode != 0
    assert 'static assertion failed with "aotc: family axpy: parameter x (1 of 5) must be const float*' in result.stderr


def test_a_kernel_that_matches_compiles_on_the_emulator(tmp_path: Path) -> None:
    """The check is plain C++: the emulator's host compiler takes it, and it holds there too."""
    from aotc.build.codegen import render_kernel
    from aotc.build.manifest import load_manifest
    from aotc.runtime.emulator.compile import compile_library

    for template, fails in ((AXPY["templates/axpy.cu.j2"], False), (WRONG, True)):
        root = tmp_path / ("wrong" if fails else "right")
        manifest = load_manifest(write_project(root, {**AXPY, "templates/axpy.cu.j2": template}))
        kernel = manifest.kernels[0]
        (root / "k.cu").write_text(render_kernel(manifest, kernel))
        if fails:
            with pytest.raises(Exception, match="family axpy: parameter x"):
                compile_library(str(root / "k.cu"), [kernel.symbol], str(root / "k.so"))
        else:
            compile_library(str(root / "k.cu"), [kernel.symbol], str(root / "k.so"))


def test_a_template_that_names_its_kernel_otherwise_is_told_so_once(capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel not named ``{{ kernel_name }}`` fails the check's decltype, and then
    every parameter's static_assert: nvcc's report of that, as it prints it. The
    build says the one thing that is wrong, not that each parameter has the wrong type."""
    from aotc.build.compile import show_report

    source = "aotc/bagkit/gen/topk_f32.cu"
    report = "".join(
        f'{source}({33 + i}): error: {text}\n  line\n  ^\n\n'
        for i, text in enumerate([
            'the global scope has no "topk_f32"',
            'incomplete type "aotc_signature_check::arity<aotc_signature_check::kernel_type>" is not allowed',
            'static assertion failed with "aotc: family topk: parameter x (1 of 6) must be const float*, as its signature declares"',
        ])
    )  # fmt: skip
    show_report(report.encode(), source, failed=True)
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("aotc: error:")]
    assert errors == [f'aotc: error: {source}: the template defines no kernel named topk_f32: declare it extern "C" __global__ void {{{{ kernel_name }}}}(...)']
