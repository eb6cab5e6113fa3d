from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aotc.build.codegen import generate, render_kernel
from aotc.errors import BuildError
from aotc.build.manifest import load_manifest
from conftest import REPO, RunAotc

GOLDEN_DIR = Path(__file__).parent / "codegen" / "golden"
UPDATE = os.environ.get("AOTC_UPDATE_GOLDEN") == "1"


@pytest.fixture
def golden_project(tmp_path: Path) -> Path:
    """The golden manifest beside a copy of the repository's real templates."""
    shutil.copy(REPO / "tests" / "packages" / "golden" / "manifest.yaml", tmp_path / "manifest.yaml")
    shutil.copytree(REPO / "aotc" / "build" / "templates" / "tropical", tmp_path / "templates")
    return tmp_path / "manifest.yaml"


def test_rendered_sources_match_golden_files(golden_project: Path) -> None:
    manifest = load_manifest(golden_project)
    names = set()
    for kernel in manifest.kernels:
        ref = GOLDEN_DIR / f"{kernel.name}.cu.ref"
        names.add(ref.name)
        rendered = render_kernel(manifest, kernel)
        if UPDATE:
            ref.parent.mkdir(parents=True, exist_ok=True)
            ref.write_text(rendered)
        assert ref.is_file(), f"no golden file {ref}; run with AOTC_UPDATE_GOLDEN=1 and review the diff"
        assert rendered == ref.read_text(), f"{kernel.name} differs from {ref} (AOTC_UPDATE_GOLDEN=1 to accept)"
    assert {p.name for p in GOLDEN_DIR.glob("*.cu.ref")} == names, "stale golden files"


def test_generated_sources_include_no_headers(golden_project: Path) -> None:
    # Needed so the same bytes compile under NVRTC and as host C++.
    manifest = load_manifest(golden_project)
    for kernel in manifest.kernels:
        assert "#include" not in render_kernel(manifest, kernel)


def test_generate_rewrites_only_changed_files(golden_project: Path, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    manifest = load_manifest(golden_project)
    first = generate(manifest, out)
    assert len(first.written) == len(manifest.kernels) and not first.unchanged
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.cu")}

    second = generate(load_manifest(golden_project), out)
    assert not second.written and len(second.unchanged) == len(manifest.kernels)
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.cu")} == stamps

    # Every kernel shares the default tile: an i64 tile changes the i64 kernel alone.
    text = golden_project.read_text().replace(
        "      - {when: {semiring: counting}", "      - {when: {dtype: i64}, block_m: 64, block_n: 64}\n      - {when: {semiring: counting}"
    )
    golden_project.write_text(text)
    third = generate(load_manifest(golden_project), out)
    assert [p.name for p in third.written] == ["gemm_minplus_i64_forward.cu"]


def test_generate_removes_sources_of_dropped_kernels(golden_project: Path, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    generate(load_manifest(golden_project), out)
    text = golden_project.read_text()
    for line in ("      - {semiring: andor, dtype: bool, pass: argmax, variant: single}\n", "      - {semiring: andor, dtype: bool, pass: argmax, variant: packed}\n"):
        assert line in text
        text = text.replace(line, "")
    golden_project.write_text(text.replace("dtype: [f32, i32, i64, bool]", "dtype: [f32, i32, i64]"))
    result = generate(load_manifest(golden_project), out)
    assert sorted(p.name for p in result.removed) == ["gemm_andor_bool_argmax.cu", "gemm_andor_bool_argmax_packed.cu"]
    assert not (out / "gemm_andor_bool_argmax.cu").exists()


def test_template_error_names_the_template(golden_project: Path) -> None:
    template = golden_project.parent / "templates" / "gemm.cu.j2"
    template.write_text(template.read_text() + "{{ no_such_variable }}\n")
    manifest = load_manifest(golden_project)
    with pytest.raises(BuildError, match=r"gemm\.cu\.j2:\d+: rendering gemm_maxplus_f32_forward: 'no_such_variable' is undefined"):
        render_kernel(manifest, manifest.kernels[0])


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("{semiring: andor, dtype: f32, pass: forward, variant: single}", "rendering gemm_andor_f32_forward: semiring andor is not defined on f32"),
        ("{semiring: maxplus, dtype: i32, pass: backward_a, variant: single}", "rendering gemm_maxplus_i32_backward_a: backward passes need a float dtype, not i32"),
        ("{semiring: minplus, dtype: f32, pass: forward, variant: single, constants: {stages: 3}}", "rendering gemm_minplus_f32_forward: the product and packed kernels double-buffer their tiles: stages must be 2, not 3"),
    ],
)
def test_the_tropical_templates_refuse_what_they_cannot_implement(golden_project: Path, block: str, message: str) -> None:
    # What the retired GEMM form's manifest checks refused, the template set refuses, in one line naming the kernel.
    text = golden_project.read_text().replace("    matrix:\n", f"    matrix:\n      - {block}\n", 1)
    golden_project.write_text(text)
    manifest = load_manifest(golden_project)
    with pytest.raises(BuildError, match=rf"gemm\.cu\.j2:\d+: .*{message}"):
        render_kernel(manifest, manifest.kernels[0])


def test_a_semiring_missing_from_the_table_is_refused_by_the_template(golden_project: Path) -> None:
    golden_project.write_text(golden_project.read_text().replace("  maxmin: {add: max, mul: min, zero: -inf, one: +inf}\n", ""))
    manifest = load_manifest(golden_project)
    kernel = next(k for k in manifest.kernels if k.name == "gemm_maxmin_f32_forward")
    with pytest.raises(BuildError, match=r"rendering gemm_maxmin_f32_forward: semiring maxmin is not in the manifest's semirings table"):
        render_kernel(manifest, kernel)


def test_cli_generate(golden_project: Path, tmp_path: Path, run_aotc: RunAotc) -> None:
    result = run_aotc("generate", str(golden_project), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "12 written, 0 unchanged, 0 removed" in result.stdout
    assert len(list((tmp_path / "out").glob("*.cu"))) == 12


def _nvrtc_compile(source: bytes, name: str, arch: str) -> tuple[bool, str]:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings (NVRTC) is not installed")
    err, program = nvrtc.nvrtcCreateProgram(source, name.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        pytest.skip(f"NVRTC is not usable here ({err.name}); install nvidia-cuda-nvrtc")
    try:
        options = [f"--gpu-architecture=sm_{arch}".encode(), b"-default-device"]
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(program, log)
        return result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace").strip("\x00 \n")
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def test_generated_sources_compile_under_nvrtc_without_warnings(golden_project: Path) -> None:
    # The wheel ships these sources for run-time JIT, so NVRTC must take them as they are.
    manifest = load_manifest(golden_project)
    for kernel in manifest.kernels:
        ok, log = _nvrtc_compile(render_kernel(manifest, kernel).encode(), f"{kernel.name}.cu", "80")
        assert ok and not log, f"{kernel.name}: {log}"


def test_generated_sources_compile_under_nvcc_without_warnings(golden_project: Path, tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    manifest = load_manifest(golden_project)
    out = generate(manifest, tmp_path / "gen")
    result = subprocess.run(
        [nvcc, "-fatbin", "-arch=sm_80", "-Werror", "all-warnings", "--output-directory", str(tmp_path), *map(str, out.written)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


NAMED_LIKE_A_DICT = """\
library: named
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  pick:
    template: pick.cu.j2
    axes: {dtype: [f32]}
    name: "pick_{dtype}"
    signature:
      values: {array: dtype, role: in, shape: [n]}
      items: {array: i32, role: out, shape: [n]}
      keys: {array: f64, role: in, shape: [n]}
      get: i64
      n: i32
    launch:
      grid: [n]
      block: [32]
"""


def test_ctype_names_every_parameter(tmp_path: Path) -> None:
    """``ctype.values`` is the C type of a parameter named ``values`` (and so for
    ``items``, ``keys`` and ``get``), not the method a dict's attribute gives:
    nvcc used to fail on ``typedef <built-in method values of dict object ...> T;``."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "manifest.yaml").write_text(NAMED_LIKE_A_DICT)
    (tmp_path / "templates" / "pick.cu.j2").write_text(
        "typedef {{ ctype.values }} V;\ntypedef {{ ctype.items }} I;\ntypedef {{ ctype.keys }} K;\n"
        "typedef {{ ctype.get }} G;\ntypedef {{ ctype['n'] }} N;\n"
        'extern "C" __global__ void {{ kernel_name }}({{ params }}) {}\n'
    )
    manifest = load_manifest(tmp_path / "manifest.yaml")
    source = render_kernel(manifest, manifest.kernels[0])
    for line in ("typedef float V;", "typedef int I;", "typedef double K;", "typedef long long G;", "typedef int N;"):
        assert line in source, source


def test_a_misspelt_ctype_names_the_parameter_not_the_table(tmp_path: Path) -> None:
    """``{{ ctype.xx }}`` for a parameter the signature lacks is one line naming
    the template's line, ``ctype.xx`` and the parameters there are; Jinja's own
    text named the table's Python class (``'aotc.build.codegen._ByName object'
    has no attribute 'xx'``)."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "manifest.yaml").write_text(NAMED_LIKE_A_DICT)
    (tmp_path / "templates" / "pick.cu.j2").write_text('// a kernel\ntypedef {{ ctype.valeus }} V;\nextern "C" __global__ void {{ kernel_name }}({{ params }}) {}\n')
    manifest = load_manifest(tmp_path / "manifest.yaml")
    with pytest.raises(BuildError) as info:
        render_kernel(manifest, manifest.kernels[0])
    names = ", ".join(p.name for p in manifest.kernels[0].signature.params)
    want = f"pick.cu.j2:2: rendering {manifest.kernels[0].name}: ctype.valeus: the signature has no parameter 'valeus' (its parameters: {names})"
    assert str(info.value).endswith(want), str(info.value)
    assert "_ByName" not in str(info.value) and "\n" not in str(info.value)


def test_ctype_keeps_a_dicts_methods_where_no_parameter_takes_their_name(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    text = NAMED_LIKE_A_DICT
    for name, other in (("values:", "x:"), ("items:", "y:"), ("keys:", "z:"), ("get:", "g:")):
        text = text.replace(f"      {name}", f"      {other}")
    (tmp_path / "manifest.yaml").write_text(text)
    (tmp_path / "templates" / "pick.cu.j2").write_text(
        '{% for name, type in ctype.items() %}// {{ name }}: {{ type }}\n{% endfor %}extern "C" __global__ void {{ kernel_name }}({{ params }}) {}\n'
    )
    manifest = load_manifest(tmp_path / "manifest.yaml")
    source = render_kernel(manifest, manifest.kernels[0])
    assert "// x: float\n// y: int\n// z: double\n// g: long long\n// n: int\n" in source, source
