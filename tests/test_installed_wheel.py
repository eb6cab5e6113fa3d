"""The tropical library as `pip install .` installed it, with the full matrix.

Under tox the package under test is the wheel tox built; these tests check it
with NVIDIA's own cuobjdump rather than trusting aotc's index.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from aotc.build.manifest import load_manifest
from conftest import REPO, RunAotc, installed_library

# The wheel itself is under test here, never a build folder.
LIBRARY = installed_library(allow_override=False)


def _cuobjdump() -> str:
    try:
        dist = importlib.metadata.distribution("nvidia-cuda-cuobjdump")
    except importlib.metadata.PackageNotFoundError:
        found = shutil.which("cuobjdump")
        if found is None:
            pytest.fail("cuobjdump not found: install the test extra (nvidia-cuda-cuobjdump)")
        return found
    return str(next(dist.locate_file(f) for f in dist.files or () if f.name == "cuobjdump"))


def _index() -> dict:
    return json.loads((LIBRARY / "index.json").read_text())


def test_every_fatbin_holds_sass_and_ptx_for_the_listed_archs() -> None:
    cuobjdump = _cuobjdump()
    manifest = load_manifest(REPO / "kernels" / "manifest.yaml")
    index = _index()
    assert [k.name for k in manifest.kernels] == list(index["kernels"])
    for name, entry in index["kernels"].items():
        # The wheel is the one build of the full default matrix.
        assert tuple(entry["sass"]) == manifest.archs.sass, name
        assert tuple(entry["ptx"]) == manifest.archs.ptx, name
        fatbin = str(LIBRARY / entry["fatbin"]["file"])
        elf = subprocess.run([cuobjdump, "--list-elf", fatbin], capture_output=True, text=True, check=True).stdout
        ptx = subprocess.run([cuobjdump, "--list-ptx", fatbin], capture_output=True, text=True, check=True).stdout
        assert sorted(re.findall(r"\.sm_(\w+)\.cubin", elf)) == sorted(entry["sass"]), f"{name}: {elf}"
        assert sorted(re.findall(r"\.sm_(\w+)\.ptx", ptx)) == sorted(entry["ptx"]), f"{name}: {ptx}"


def test_resource_report_is_kept_for_every_sass_arch() -> None:
    for name, entry in _index()["kernels"].items():
        assert sorted(entry["resources"]) == sorted(entry["sass"]), name
    # Register tiling must not spill where the issue rate matters most.
    for name in ("gemm_maxplus_f32_forward", "gemm_maxplus_f32_argmax", "gemm_minplus_f32_argmax", "gemm_maxmul_f32_argmax"):
        usage = _index()["kernels"][name]["resources"]["90"]
        assert usage["spill_stores"] == 0 and usage["spill_loads"] == 0, (name, usage)


def test_inspect_installed_library(run_aotc: RunAotc) -> None:
    result = run_aotc("inspect", "tropical")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split()[:3] == ["kernel", "sm_75", "sm_80"]
    row = next(line for line in lines if line.startswith("gemm_maxplus_f32_forward "))
    assert row.split()[1:8] == ["SASS"] * 6 + ["SASS+PTX"]
    assert row.endswith("ok")


def _copy_library(tmp_path: Path) -> Path:
    copy = tmp_path / "tropical"
    shutil.copytree(LIBRARY, copy)
    return copy


def test_inspect_names_a_flipped_byte(tmp_path: Path, run_aotc: RunAotc) -> None:
    copy = _copy_library(tmp_path)
    victim = copy / "gemm_maxplus_f64_forward.fatbin"
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.write_bytes(bytes(data))
    result = run_aotc("inspect", str(copy))
    assert result.returncode == 1
    assert f"aotc: error: {victim}: sha256" in result.stderr
    assert "gemm_maxplus_f64_forward" in [line.split()[0] for line in result.stdout.splitlines() if "FAILED" in line]


def test_inspect_names_a_missing_source(tmp_path: Path, run_aotc: RunAotc) -> None:
    copy = _copy_library(tmp_path)
    (copy / "src" / "gemm_minplus_i32_forward.cu").unlink()
    result = run_aotc("inspect", str(copy / "index.json"))
    assert result.returncode == 1
    assert f"{copy}/src/gemm_minplus_i32_forward.cu: missing" in result.stderr


def test_inspect_a_wheel(tmp_path: Path, run_aotc: RunAotc) -> None:
    wheel = tmp_path / "aotc-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(LIBRARY.rglob("*")):
            if path.is_file():
                archive.write(path, f"aotc/_lib/tropical/{path.relative_to(LIBRARY).as_posix()}")
    good = run_aotc("inspect", str(wheel))
    assert good.returncode == 0, good.stderr

    flipped = tmp_path / "flipped.whl"
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(flipped, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.endswith("gemm_andor_bool_forward.fatbin"):
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            target.writestr(item, data)
    bad = run_aotc("inspect", str(flipped))
    assert bad.returncode == 1
    assert "aotc/_lib/tropical/gemm_andor_bool_forward.fatbin: sha256" in bad.stderr
