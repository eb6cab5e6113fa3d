"""The build tool's index step: the staged library is the built files, linked where
the file system allows, and nothing planted in the stage survives it; and its
memo: an edit to one kernel re-reads that kernel's files only, and the index is
the same bytes with or without the memo, whatever happened between runs."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from aotc.build import _index_memo, index_writer, tool
from aotc.build.codegen import generate
from aotc.build.manifest import load_manifest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import kernel_library

__all__: list[str] = []


def _index(manifest: Path, work: Path, stage: str = "lib", memo: bool = True) -> bytes:
    status = tool.main([
        "index", f"--manifest={manifest}", f"--fatbin-dir={work / 'fatbin'}", f"--gen-dir={work / 'gen'}", f"--stage={work / stage}",
        "--compiler=nvcc", "--compiler-version=13.0.88", "--min-driver=13000", *([f"--memo={work / 'index.memo'}"] if memo else []),
    ])  # fmt: skip
    assert status == 0
    return (work / stage / "index.json").read_bytes()


def _built_project(tmp_path: Path, count: int) -> tuple[Path, Path, list[str]]:
    """An N-kernel project generated, with a stand-in fatbin and ptxas report per kernel."""
    manifest = kernel_library.write_library(tmp_path / "project", count)
    work = tmp_path / "build"
    loaded = load_manifest(manifest)
    generate(loaded, work / "gen")
    names = [k.name for k in loaded.kernels]
    (work / "fatbin").mkdir()
    for name in names:
        (work / "fatbin" / f"{name}.fatbin").write_bytes(f"fatbin of {name}".encode())
        (work / "gen" / f"{name}.resources.txt").write_text(
            f"ptxas info    : Compiling entry function '{name}' for 'sm_80'\nptxas info    : Used 8 registers, used 0 barriers, 0 bytes smem\n"
        )
    return manifest, work, names


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    return _built_project(tmp_path, 6)


def test_the_stage_is_the_built_files_and_nothing_planted_survives(tmp_path: Path) -> None:
    manifest, work, names = _built_project(tmp_path, 3)
    _index(manifest, work)
    lib = work / "lib"
    for name in names:
        for staged, built in ((lib / f"{name}.fatbin", work / "fatbin" / f"{name}.fatbin"), (lib / "src" / f"{name}.cu", work / "gen" / f"{name}.cu")):
            assert staged.read_bytes() == built.read_bytes()
            assert os.path.samestat(os.stat(staged), os.stat(built))  # a hard link: restaging is a stat

    # A fatbin rebuilt (a new file in its place), a link and a stray file planted in the stage.
    rebuilt = work / "fatbin" / f"{names[0]}.fatbin"
    rebuilt.unlink()
    rebuilt.write_bytes(b"rebuilt")
    (lib / f"{names[1]}.fatbin").unlink()
    (lib / f"{names[1]}.fatbin").symlink_to(work / "fatbin" / f"{names[1]}.fatbin")
    (lib / "stray.fatbin").write_bytes(b"not a kernel")
    _index(manifest, work)
    assert (lib / f"{names[0]}.fatbin").read_bytes() == b"rebuilt"
    assert not (lib / f"{names[1]}.fatbin").is_symlink() and (lib / f"{names[1]}.fatbin").read_bytes() == f"fatbin of {names[1]}".encode()
    assert not (lib / "stray.fatbin").exists()
    index = json.loads((lib / "index.json").read_text())
    assert sorted(index["kernels"]) == sorted(names) and index["kernels"][names[0]]["fatbin"]["size"] == len(b"rebuilt")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many files the memo had to read (its misses), counted per run."""
    counted = [0]
    digest = _index_memo.file_digest

    def counting(data: bytes) -> dict[str, object]:
        counted[0] += 1
        return digest(data)

    monkeypatch.setattr(_index_memo, "file_digest", counting)
    return counted


def test_an_unchanged_library_reads_no_file_again(project: tuple[Path, Path, list[str]], reads: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    manifest, work, names = project
    first = _index(manifest, work)
    assert reads[0] == 2 * len(names)  # each fatbin and each source, once
    reads[0] = 0
    sealed: list[object] = []
    checksums = index_writer.field_checksums
    monkeypatch.setattr(index_writer, "field_checksums", lambda doc, fields: sealed.append(fields) or checksums(doc, fields))
    assert _index(manifest, work) == first
    assert reads[0] == 0
    assert len(sealed) == 1  # the top level's table; every kernel's is the last run's
    assert first == _index(manifest, work, stage="plain", memo=False)


def test_one_rebuilt_fatbin_is_read_alone_and_the_index_is_the_plain_one(project: tuple[Path, Path, list[str]], reads: list[int]) -> None:
    manifest, work, names = project
    _index(manifest, work)
    rebuilt = work / "fatbin" / f"{names[2]}.fatbin"
    rebuilt.unlink()
    rebuilt.write_bytes(b"rebuilt, and longer than before")
    reads[0] = 0
    memoized = _index(manifest, work)
    assert reads[0] == 1
    assert memoized == _index(manifest, work, stage="plain", memo=False)
    assert json.loads(memoized)["kernels"][names[2]]["fatbin"]["size"] == len(b"rebuilt, and longer than before")


def test_a_kernel_edited_in_the_manifest_is_sealed_anew(project: tuple[Path, Path, list[str]]) -> None:
    manifest, work, names = project
    before = json.loads(_index(manifest, work))
    text = manifest.read_text()
    manifest.write_text(text.replace("      n: i32\n", "      n: i64\n"))  # every kernel's signature; no file changed
    edited = _index(manifest, work)
    assert edited == _index(manifest, work, stage="plain", memo=False)
    assert json.loads(edited)["kernels"][names[0]]["signature"] != before["kernels"][names[0]]["signature"]
    manifest.write_text(text)
    assert _index(manifest, work) == _index(manifest, work, stage="plain", memo=False)


def test_an_index_changed_by_hand_or_a_foreign_memo_is_not_trusted(project: tuple[Path, Path, list[str]]) -> None:
    manifest, work, _ = project
    plain = _index(manifest, work, stage="plain", memo=False)
    _index(manifest, work)
    # A checksum changed by hand in the staged index: the memo's entries are not reused.
    index = work / "lib" / "index.json"
    index.write_bytes(index.read_bytes().replace(b'"sha256": "', b'"sha256": "0', 1))
    assert _index(manifest, work) == plain
    # A memo of another aotc (another tag), or one that does not parse.
    memo = work / "index.memo"
    memo.write_text(json.dumps({**json.loads(memo.read_text()), "tag": "another"}))
    assert _index(manifest, work) == plain
    memo.write_text("{not json")
    assert _index(manifest, work) == plain
    # A memo whose records have the right identities but another shape.
    _index(manifest, work)
    records = json.loads(memo.read_text())
    for record in records["files"].values():
        record[2] = 5 if record[1] == "digest" else {"80": {"registers": "many"}}
    memo.write_text(json.dumps(records))
    assert _index(manifest, work) == plain


def test_a_kernel_removed_is_forgotten_and_unstaged(project: tuple[Path, Path, list[str]]) -> None:
    manifest, work, names = project
    _index(manifest, work)
    fewer = kernel_library.write_library(manifest.parent.parent, 4)
    shutil.rmtree(work / "gen")
    generate(load_manifest(fewer), work / "gen")
    index = json.loads(_index(fewer, work))
    assert sorted(index["kernels"]) == sorted(names[:4])
    assert not (work / "lib" / f"{names[5]}.fatbin").exists() and not (work / "lib" / "src" / f"{names[5]}.cu").exists()
    assert names[5] not in (work / "index.memo").read_text()
