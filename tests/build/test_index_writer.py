from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aotc._version import __version__
from aotc.build._backward_fields import Gradient
from aotc.build.index_writer import build_index, dumps, kernel_entry, seal
from aotc.build.manifest import Manifest, load_manifest
from aotc.build.signature import ArrayParam, ScalarParam
from aotc.dtypes import DTYPES
from aotc.index import SCHEMA, LibraryIndex, sha256_bytes
from aotc.index.schema import KERNEL_SEALED, TOP_SEALED, canonical_json
from tropical_manifest import tropical_manifest

MANIFEST = tropical_manifest(
    "mini",
    {"maxplus": "{add: max, mul: add, zero: -inf, one: 0}"},
    ["{semiring: maxplus, dtype: f32, pass: [forward, argmax], variant: single}"],
    head="archs: {sass: [75, 80], ptx: [80]}",
)
REPO = Path(__file__).resolve().parents[2]
TOOLKIT = {"compiler": "nvcc", "version": "13.0.88", "cuda_major": 13, "min_driver": 13000, "wheel": "aotc"}


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "gemm.cu.j2").write_text("// {{ kernel_name }}\n")
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
    assert (entry["family"], entry["axes"]) == ("gemm", {"semiring": "maxplus", "dtype": "f32", "pass": "forward", "variant": "single"})
    assert entry["signature"] == kernel.signature.to_json()
    assert "backward" not in entry  # written only where the kernel has one
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
    assert {"axes", "signature"} <= set(KERNEL_SEALED)
    assert entry["checksum"]["launch"] == sha256_bytes(canonical_json(entry["launch"]))
    assert set(index["checksum"]) == set(TOP_SEALED)
    assert index["checksum"]["semirings"] == sha256_bytes(canonical_json(index["semirings"]))


def test_a_kernels_backward_is_written_and_sealed() -> None:
    manifest = load_manifest(REPO / "examples" / "rowops" / "kernels" / "manifest.yaml")
    index = build_index(manifest, {k.name: kernel_entry(k, manifest, b"fatbin", b"// source", {}) for k in manifest.kernels}, TOOLKIT)
    entry = index["kernels"]["softmax_f32"]
    assert entry["backward"] == {"kernels": [{"kernel": "softmax_backward_f32", "saves": ["y"]}]}
    assert entry["checksum"]["backward"] == sha256_bytes(canonical_json(entry["backward"]))
    assert "backward" not in index["kernels"]["scan_f32"]["checksum"]
    lines = dumps(index).decode().splitlines()
    assert any(line.startswith('"softmax_f32": {"family": "softmax", ') for line in lines)  # found by its family


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


def test_argument_names_fills_and_extents_are_written_only_where_declared() -> None:
    f32, i32 = DTYPES["f32"], DTYPES["i32"]
    plain = {"name": "C", "array": {"dtype": "f32", "role": "out", "shape": ["M", "k"]}}
    assert ArrayParam("C", f32, "out", ("M", "k")).to_json() == plain
    assert ArrayParam("C", f32, "out", ("M", "k"), arg="C").to_json() == plain  # the name itself is not written
    filled = ArrayParam("C", f32, "out", ("M", "k"), arg="out", fill=float("-inf")).to_json()
    assert filled == {"name": "C", "arg": "out", "array": {**plain["array"], "fill": "-inf"}}  # JSON has no infinity
    assert ArrayParam("K", i32, "out", ("M",), fill=0).to_json()["array"]["fill"] == 0
    assert ScalarParam("M", "i32", True).to_json() == {"name": "M", "scalar": "i32", "dim": True}
    extent = ScalarParam("k", "i32", False, arg="width", extent=True, max="N").to_json()
    assert extent == {"name": "k", "arg": "width", "scalar": "i32", "dim": False, "extent": True, "max": "N"}
    assert ScalarParam("k", "i64", False, extent=True).to_json() == {"name": "k", "scalar": "i64", "dim": False, "extent": True}


def test_a_backward_is_written_as_kernel_names() -> None:
    assert Gradient((("g_a", ("Kstar", "B")), ("g_b", ("Kstar", "A")))).to_json() == {
        "kernels": [{"kernel": "g_a", "saves": ["Kstar", "B"]}, {"kernel": "g_b", "saves": ["Kstar", "A"]}]
    }
    assert Gradient(through="gemm_argmax").to_json() == {"through": "gemm_argmax"}


def test_the_build_imports_the_schema_and_not_the_reader() -> None:
    # aotcTools.cmake lists aotc/index/__init__.py, schema.py and _layout.py (the
    # layout's writer) as inputs of the index step; the reader's modules are not,
    # so the build must not import them.
    script = "import sys, aotc.build.tool; print(sorted(m for m in sys.modules if m.startswith('aotc.index')))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    assert result.stdout.strip() == "['aotc.index', 'aotc.index._layout', 'aotc.index.schema']"
