from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aotc._version import __version__
from aotc.build.index_writer import build_index, dumps, kernel_entry, seal
from aotc.build.manifest import Manifest, load_manifest
from aotc.index import SCHEMA, LibraryIndex, sha256_bytes
from aotc.index.schema import KERNEL_SEALED, TOP_SEALED, canonical_json

MANIFEST = """\
library: mini
archs: {sass: [75, 80], ptx: [80]}
semirings:
  maxplus: {add: max, mul: add, zero: -inf, one: 0}
dtypes: [f32]
families:
  gemm:
    template: gemm.cu.j2
    matrix:
      - {semiring: [maxplus], dtype: [f32], pass: [forward, argmax]}
    tiles:
      default: {block_m: 32, block_n: 32, block_k: 8, thread_m: 4, thread_n: 4}
"""
REPO = Path(__file__).resolve().parents[2]
TOOLKIT = {"compiler": "nvcc", "version": "13.0.88", "cuda_major": 13, "min_driver": 13000, "wheel": "aotc"}


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "gemm.cu.j2").write_text("// {{ kernel.name }}\n")
    path = tmp_path / "manifest.yaml"
    path.write_text(MANIFEST)
    return load_manifest(path)


def _entries(manifest: Manifest) -> dict[str, dict]:
    return {k.name: kernel_entry(k, manifest, b"fatbin", b"// source", {}) for k in manifest.kernels}


def test_kernel_entry_records_signature_images_and_checksums(manifest: Manifest) -> None:
    kernel = manifest.kernels[0]
    resources = {"80": {"registers": 40, "spill_stores": 0}}
    entry = kernel_entry(kernel, manifest, b"fatbin", b"// source", resources)
    assert entry["symbol"] == kernel.symbol
    assert (entry["family"], entry["semiring"], entry["dtype"], entry["pass"], entry["variant"]) == (
        "gemm", "maxplus", "f32", "forward", "single",
    )  # fmt: skip
    assert entry["params"] == [p.to_json() for p in kernel.params]
    assert entry["launch"] == kernel.launch.to_json()
    assert entry["fatbin"] == {"file": f"{kernel.name}.fatbin", "sha256": sha256_bytes(b"fatbin"), "size": 6}
    assert entry["source"] == {"file": f"src/{kernel.name}.cu", "sha256": sha256_bytes(b"// source"), "size": 9}
    assert (entry["sass"], entry["ptx"]) == (["75", "80"], ["80"])
    assert entry["resources"] == resources


def test_build_index_keeps_manifest_order_and_names_the_toolkit(manifest: Manifest) -> None:
    entries = dict(reversed(list(_entries(manifest).items())))
    index = build_index(manifest, entries, TOOLKIT)
    assert index["schema"] == SCHEMA and index["aotc_version"] == __version__
    assert index["library"] == "mini"
    assert index["toolkit"] == TOOLKIT
    assert list(index["kernels"]) == [k.name for k in manifest.kernels]
    assert index["semirings"] == {"maxplus": {"add": "max", "mul": "add", "zero": "-inf", "one": "0", "counting": False}}


def test_build_index_needs_an_entry_per_kernel(manifest: Manifest) -> None:
    with pytest.raises(KeyError):
        build_index(manifest, {}, TOOLKIT)


def test_build_index_seals_every_launch_field_and_the_semirings(manifest: Manifest) -> None:
    index = build_index(manifest, _entries(manifest), TOOLKIT)
    entry = next(iter(index["kernels"].values()))
    assert set(entry["checksum"]) == set(KERNEL_SEALED)
    assert entry["checksum"]["launch"] == sha256_bytes(canonical_json(entry["launch"]))
    assert set(index["checksum"]) == set(TOP_SEALED)
    assert index["checksum"]["semirings"] == sha256_bytes(canonical_json(index["semirings"]))


def test_seal_rewrites_stale_checksums(manifest: Manifest) -> None:
    index = build_index(manifest, _entries(manifest), TOOLKIT)
    entry = next(iter(index["kernels"].values()))
    entry["launch"]["block"] = [4, 4, 1]
    before = entry["checksum"]["launch"]
    seal(index)
    assert entry["checksum"]["launch"] != before
    assert entry["checksum"]["launch"] == sha256_bytes(canonical_json(entry["launch"]))


def test_what_the_writer_writes_the_reader_reads(manifest: Manifest) -> None:
    data = dumps(build_index(manifest, _entries(manifest), TOOLKIT))
    assert data.endswith(b"}\n")
    index = LibraryIndex(data, "mini/index.json")
    assert list(index.kernels) == [k.name for k in manifest.kernels]
    kernel = index.kernels[manifest.kernels[0].name]
    assert kernel.launch.block == manifest.kernels[0].launch.block
    assert kernel.pack_format == "@" + "".join(p.pack for p in manifest.kernels[0].params)
    assert index.toolkit is not None and index.toolkit.min_driver == 13000


def test_the_build_imports_the_schema_and_not_the_reader() -> None:
    # aotcTools.cmake lists aotc/index/__init__.py and schema.py as inputs of the
    # index step; the reader's modules are not, so the build must not import them.
    script = "import sys, aotc.build.tool; print(sorted(m for m in sys.modules if m.startswith('aotc.index')))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    assert result.stdout.strip() == "['aotc.index', 'aotc.index.schema']"
