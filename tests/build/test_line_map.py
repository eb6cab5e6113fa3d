"""Where each generated line came from, and compile errors named at the template's line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from aotc.build.codegen import _environment, generate, render_kernel
from aotc.build.line_map import explain, line_map, mark, read_map
from aotc.build.manifest import load_manifest
from conftest import REPO, aotc_env

TEMPLATE = """\
// {{ name }}: line 1
{% if flag %}
int a = 2;   // line 3
{% else %}
int a = 4;
{% endif %}
{% macro twice(x) -%}
  {{ x }} + {{ x }}
{%- endmacro %}
int b = {{ twice("a") }};  // line 10
text {% if flag %}and more{% endif %}

after  // line 13
{%- if flag %} joined{% endif %}

{# a comment #}
{% include "part.j2" %}
last  // line 18
"""
PART = "from the part  // part line 1\n"


def render(marking: bool, folder: Path) -> str:
    loader = jinja2.FileSystemLoader(str(folder))
    if marking:
        plain = loader

        class Marking(jinja2.FileSystemLoader):
            def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str | None, object]:
                source, filename, uptodate = plain.get_source(environment, template)
                return mark(source, template) or source, filename, uptodate

        loader = Marking(str(folder))
    env = jinja2.Environment(loader=loader, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template("t.j2").render(name="k", flag=True)


def test_each_line_names_its_template_line(tmp_path: Path) -> None:
    (tmp_path / "t.j2").write_text(TEMPLATE)
    (tmp_path / "part.j2").write_text(PART)
    plain, marked = render(False, tmp_path), render(True, tmp_path)
    origins = line_map(marked, plain)
    assert origins is not None
    assert dict(zip(plain.split("\n"), origins)) == {
        "// k: line 1": "t.j2:1",
        "int a = 2;   // line 3": "t.j2:3",
        "int b = a + a;  // line 10": "t.j2:8",  # the first template line that wrote on it: the macro's
        "text and more": "t.j2:11",  # the block tag took its newline; the text's line is still its origin
        "after  // line 13 joined": "t.j2:13",  # "{%-" joined the next line's text to it
        "from the part  // part line 1": "part.j2:1",
        "last  // line 18": "t.j2:18",
        "": "",
    }


def test_a_template_whose_text_feeds_its_logic_gets_no_map(tmp_path: Path) -> None:
    # The captured text is compared: a marker in it would change the answer, so no map, never a wrong one.
    (tmp_path / "t.j2").write_text('{% set body %}\nx\n{% endset %}{{ "yes" if body == "x\\n" else "no" }}\n')
    plain, marked = render(False, tmp_path), render(True, tmp_path)
    assert plain == "yes\n"
    assert line_map(marked, plain) is None


@pytest.mark.parametrize(
    "manifest", [REPO / "kernels" / "manifest.yaml", REPO / "examples" / "rowops" / "kernels" / "manifest.yaml"]
)
def test_every_shipped_line_of_template_text_maps_to_itself(manifest: Path, tmp_path: Path) -> None:
    loaded = load_manifest(manifest)
    generate(loaded, tmp_path)
    checked = 0
    for kernel in loaded.kernels:
        source = tmp_path / f"{kernel.name}.cu"
        origins = read_map(source)
        lines = source.read_text().split("\n")
        assert origins is not None and len(origins) == len(lines)
        check = next(i for i, text in enumerate(lines) if text.startswith(f"// aotc: {kernel.name} must take"))
        assert all(origins[: check - 1]), kernel.name  # every line but codegen's own signature check
        assert not any(origins[check:]), kernel.name
        for text, origin in zip(lines, origins):
            if not origin:
                continue
            path, number = origin.rsplit(":", 1)
            template_line = Path(path).read_text().split("\n")[int(number) - 1]
            if "{" not in template_line and text.strip():
                # A line starts as its template line does: a macro whose last
                # line ends in {%- endmacro %} is continued by its call's line
                # ("}" then " while (...);").
                assert text.strip().startswith(template_line.strip()), (kernel.name, origin)
                checked += 1
    assert checked > 100


def test_the_map_changes_no_generated_byte(tmp_path: Path) -> None:
    loaded = load_manifest(REPO / "kernels" / "manifest.yaml")
    generate(loaded, tmp_path)
    env = _environment(loaded.templates_dir)
    for kernel in loaded.kernels[:8]:
        assert (tmp_path / f"{kernel.name}.cu").read_text() == render_kernel(loaded, kernel, env)
    assert not [p for p in tmp_path.iterdir() if p.suffix not in (".cu", ".lines") and p.name not in (".aotc-generated", ".aotc-rendered")]


def test_explain_leads_each_diagnostic_with_its_template_line(tmp_path: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text("a\nb\nc\n")
    (tmp_path / "k.lines").write_text("aotc line map 1\n/t\nx.cu.j2:7\nx.cu.j2:9\n\n\n")
    report = (
        "ptxas info    : Used 42 registers\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"  # nvcc's continuation
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"  # NVRTC's
        f"{source}(2): error: identifier \"nope\" is undefined\n"
        "      nope;\n      ^\n"
        "k.cu:1:5: warning: unused variable\n"
        "other.cu(2): error: not ours\n"
        "k.cu(3): error: a line with no origin\n"
    )
    shown, errors = explain(report, source)
    assert shown.splitlines() == [
        f"/t/x.cu.j2:9: error: identifier \"nope\" is undefined [{source}:2]",
        "      nope;",
        "      ^",
        "/t/x.cu.j2:7: warning: unused variable [k.cu:1]",
        "other.cu(2): error: not ours",
        "k.cu(3): error: a line with no origin",
    ]
    assert errors == 2


BROKEN = """\
library: broken
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  fill:
    template: fill.cu.j2
    axes: {dtype: [f32]}
    name: "fill_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [n]}
      y: {array: dtype, role: out, shape: [n]}
      n: i32
    launch:
      grid: ["cdiv(n, 128)"]
      block: [128]
"""
FILL = """\
// {{ kernel_name }}: y = x, one thread an element.
extern "C" __global__ void {{ kernel_name }}({{ params }})
{
    long long i = (long long)blockIdx.x * 128 + threadIdx.x;
    if (i < n) y[i] = not_declared_anywhere;
}
"""


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_compile_error_names_the_template_line_in_one_block(compiler: str, tmp_path: Path) -> None:
    if compiler == "nvcc" and shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    if compiler == "nvrtc":
        from aotc.build.nvrtc_fatbin import load_toolchain
        from aotc.errors import BuildError

        try:
            load_toolchain(13)
        except BuildError as exc:
            pytest.skip(f"needs NVRTC 13 ({exc})")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "fill.cu.j2").write_text(FILL)
    (tmp_path / "manifest.yaml").write_text(BROKEN)
    generate(load_manifest(tmp_path / "manifest.yaml"), tmp_path / "gen")
    env = aotc_env({"AOTC_TOOLCHAIN_KIND": compiler, "AOTC_TOOLCHAIN_CUDA": "13", "AOTC_BUILD_CACHE": "0"})
    env.pop("AOTC_TOOLCHAIN_FINGERPRINT", None)
    command = [sys.executable, "-m", "aotc.build.compile", "--out", "fill.fatbin", "--sass", "80", "--ptx", "80", "gen/fill_f32.cu"]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    template = tmp_path.resolve() / "templates" / "fill.cu.j2"
    assert re.search(rf"^{re.escape(str(template))}:5: error: identifier \"not_declared_anywhere\" is undefined \[.*fill_f32\.cu:5\]$", result.stderr, re.M), result.stderr
    assert "ptxas info" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith("aotc: error: ")
    assert os.path.isfile(tmp_path / "gen" / "fill_f32.lines")
