"""The build tool's index step: the staged library is the built files, linked where
the file system allows, and nothing planted in the stage survives it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from aotc.build import tool
from aotc.build.codegen import generate
from aotc.build.manifest import load_manifest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import kernel_library

__all__: list[str] = []


def _index(manifest: Path, work: Path) -> int:
    return tool.main([
        "index", f"--manifest={manifest}", f"--fatbin-dir={work / 'fatbin'}", f"--gen-dir={work / 'gen'}", f"--stage={work / 'lib'}",
        "--compiler=nvcc", "--compiler-version=13.0.88", "--min-driver=13000",
    ])  # fmt: skip


def test_the_stage_is_the_built_files_and_nothing_planted_survives(tmp_path: Path) -> None:
    manifest = kernel_library.write_library(tmp_path / "project", 3)
    work = tmp_path / "build"
    loaded = load_manifest(manifest)
    generate(loaded, work / "gen")
    names = [k.name for k in loaded.kernels]
    (work / "fatbin").mkdir()
    for name in names:
        (work / "fatbin" / f"{name}.fatbin").write_bytes(f"fatbin of {name}".encode())
    assert _index(manifest, work) == 0
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
    assert _index(manifest, work) == 0
    assert (lib / f"{names[0]}.fatbin").read_bytes() == b"rebuilt"
    assert not (lib / f"{names[1]}.fatbin").is_symlink() and (lib / f"{names[1]}.fatbin").read_bytes() == f"fatbin of {names[1]}".encode()
    assert not (lib / "stray.fatbin").exists()
    index = json.loads((lib / "index.json").read_text())
    assert sorted(index["kernels"]) == sorted(names) and index["kernels"][names[0]]["fatbin"]["size"] == len(b"rebuilt")
