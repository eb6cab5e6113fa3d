"""Codegen renders only the kernels whose render key changed (``aotc.build._render_keys``):
a one-value edit of a large manifest renders one kernel, a template edit the
kernels of that template, and a source that is not the file it wrote is
written again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aotc.build import codegen
from aotc.build._render_keys import RECORD
from aotc.build.manifest import load_manifest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import kernel_library

__all__: list[str] = []

COUNT = 300


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kernels codegen renders (each twice in a row: the source, then the line map's marked copy)."""
    names: list[str] = []
    real = codegen.render_kernel

    def counting(manifest, kernel, env=None, context=None):  # codegen.render_kernel's own signature
        if names[-1:] != [kernel.name]:
            names.append(kernel.name)
        return real(manifest, kernel, env, context)

    monkeypatch.setattr(codegen, "render_kernel", counting)
    return names


def test_only_what_changed_is_rendered_again(tmp_path: Path, rendered: list[str]) -> None:
    manifest_path = kernel_library.write_library(tmp_path / "lib", COUNT)
    out = tmp_path / "gen"
    first = codegen.generate(load_manifest(manifest_path), out)
    assert len(first.written) == COUNT and len(rendered) == COUNT
    sources = {p.name: p.read_bytes() for p in out.glob("*.cu")}

    rendered.clear()
    again = codegen.generate(load_manifest(manifest_path), out)
    assert (rendered, again.written, len(again.unchanged)) == ([], (), COUNT)

    # One kernel's constant: that kernel, and the next edit puts it back.
    kernel_library.write_library(tmp_path / "lib", COUNT, edit=123)
    edited = codegen.generate(load_manifest(manifest_path), out)
    name = f"axpb_{123 % 64}_{123 // 64}"
    assert rendered == [name] and [p.stem for p in edited.written] == [name]
    rendered.clear()
    kernel_library.write_library(tmp_path / "lib", COUNT)
    codegen.generate(load_manifest(manifest_path), out)
    assert rendered == [name]
    assert {p.name: p.read_bytes() for p in out.glob("*.cu")} == sources

    # A source edited by hand, and a line map removed: each written again, nothing else.
    rendered.clear()
    (out / "axpb_0_0.cu").write_text("// edited by hand\n")
    (out / "axpb_1_0.lines").unlink()
    codegen.generate(load_manifest(manifest_path), out)
    assert sorted(rendered) == ["axpb_0_0", "axpb_1_0"]
    assert (out / "axpb_0_0.cu").read_bytes() == sources["axpb_0_0.cu"] and (out / "axpb_1_0.lines").is_file()

    # The template: every kernel rendered from it.
    rendered.clear()
    template = tmp_path / "lib" / "kernels" / "templates" / "axpb.cu.j2"
    template.write_text(template.read_text() + "// edited\n")
    changed = codegen.generate(load_manifest(manifest_path), out)
    assert len(rendered) == COUNT and len(changed.written) == COUNT


def test_a_forged_or_damaged_record_only_renders_more(tmp_path: Path, rendered: list[str]) -> None:
    manifest_path = kernel_library.write_library(tmp_path / "lib", 8)
    out = tmp_path / "gen"
    codegen.generate(load_manifest(manifest_path), out)
    record = out / RECORD
    lines = record.read_text().splitlines()
    key, rest = lines[0].split(" ", 1)
    record.write_text("\n".join([f"{'0' * 64} {rest}", "not a record line", *lines[1:], "\x00" * 50]) + "\n")
    rendered.clear()
    codegen.generate(load_manifest(manifest_path), out)
    assert rendered == ["axpb_0"]
    assert record.read_text().splitlines()[0].startswith(key)
