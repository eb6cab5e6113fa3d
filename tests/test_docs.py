"""The docs' code blocks, as ``ci/doc_blocks.py`` reads them (CI runs them there).

What runs in seconds is checked here: the tutorial shows every file of
examples/rowops, each exactly as it is; the skip list names blocks that
exist; no Python block uses a name it never defines.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

DOCS = ["README.md", "examples/rowops/README.md", "examples/warpnorm/README.md"]
TUTORIAL = "examples/rowops/README.md"


def _doc_blocks() -> object:
    spec = importlib.util.spec_from_file_location("doc_blocks", REPO / "ci" / "doc_blocks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["doc_blocks"] = module  # its NamedTuple resolves its own module by name
    spec.loader.exec_module(module)
    return module


doc_blocks = _doc_blocks()


def test_the_skip_list_names_blocks_that_exist_and_names_are_unique() -> None:
    assert doc_blocks.problems(DOCS) == []  # type: ignore[attr-defined]


def test_a_skipped_name_no_block_has_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(doc_blocks.SKIPPED, ("README.md", "no-such-block"), "test")  # type: ignore[attr-defined]
    assert doc_blocks.problems(DOCS) == ["README.md: SKIPPED names a block 'no-such-block' that the doc does not have"]  # type: ignore[attr-defined]


def test_the_tutorial_shows_every_file_of_the_example_as_it_is() -> None:
    shown = {b.path: b.text for b in doc_blocks.blocks(TUTORIAL) if b.kind == "file"}  # type: ignore[attr-defined]
    example = REPO / "examples" / "rowops"
    tracked = subprocess.run(["git", "ls-files"], cwd=example, capture_output=True, text=True, check=True).stdout.split()
    files = {name for name in tracked if name != "README.md"} or {
        str(p.relative_to(example)) for p in example.rglob("*") if p.is_file() and "build" not in p.parts and p.name != "README.md"
    }
    assert set(shown) == files
    for name in sorted(files):
        assert shown[name] == (example / name).read_text(), f"{TUTORIAL}: the block {name} differs from examples/rowops/{name}"


def test_fences_inside_list_items_keep_their_code_indented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("- item\n\n  ```python\n  if x:\n      y = 1\n  ```\n\n```yaml a/b.yaml\nk:\n  v: 1\n```\n")
    monkeypatch.setattr(doc_blocks, "REPO", tmp_path)
    first, second = doc_blocks.blocks("doc.md")  # type: ignore[attr-defined]
    assert (first.kind, first.text) == ("python", "if x:\n    y = 1\n")
    assert (second.kind, second.path, second.text) == ("file", "a/b.yaml", "k:\n  v: 1\n")


@pytest.mark.skipif(shutil.which("ruff") is None, reason="needs ruff (tox installs it)")
def test_no_python_block_uses_a_name_it_never_defines(tmp_path: Path) -> None:
    snippets = []
    for doc in DOCS:
        for block in doc_blocks.blocks(doc):  # type: ignore[attr-defined]
            if block.lang == "python":
                path = tmp_path / f"{Path(doc).parent.name or 'root'}_{block.line}.py"
                path.write_text(block.text)
                snippets.append(path)
    assert len(snippets) >= 10
    result = subprocess.run(
        ["ruff", "check", "--isolated", "--select", "F821,E9", "--output-format", "concise", *map(str, snippets)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout
