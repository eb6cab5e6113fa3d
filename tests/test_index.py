from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from aotc._version import __version__
from aotc.errors import AotcError
from aotc.index import (
    SCHEMA,
    IndexFormatError,
    build_index,
    dumps,
    kernel_entry,
    load_index_file,
    read_index,
    sha256_bytes,
    toolkit_label,
)
from aotc.build.manifest import Manifest, load_manifest

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
TOOLKIT = {"compiler": "nvcc", "version": "13.0.88", "min_driver": 13000}


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "gemm.cu.j2").write_text("// {{ kernel.name }}\n")
    path = tmp_path / "manifest.yaml"
    path.write_text(MANIFEST)
    return load_manifest(path)


def test_sha256_bytes() -> None:
    assert sha256_bytes(b"abc") == hashlib.sha256(b"abc").hexdigest()


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
    entries = {k.name: {"symbol": k.symbol} for k in reversed(manifest.kernels)}
    index = build_index(manifest, entries, TOOLKIT)
    assert index["schema"] == SCHEMA and index["aotc_version"] == __version__
    assert index["library"] == "mini"
    assert index["toolkit"] == TOOLKIT
    assert list(index["kernels"]) == [k.name for k in manifest.kernels]
    assert index["semirings"] == {"maxplus": {"add": "max", "mul": "add", "zero": "-inf", "one": "0", "counting": False}}


def test_build_index_needs_an_entry_per_kernel(manifest: Manifest) -> None:
    with pytest.raises(KeyError):
        build_index(manifest, {}, TOOLKIT)


def test_dumps_then_read_index_round_trips(manifest: Manifest) -> None:
    index = build_index(manifest, {k.name: {"symbol": k.symbol} for k in manifest.kernels}, TOOLKIT)
    data = dumps(index)
    assert data.endswith(b"}\n")
    assert read_index(data, "index.json") == index


def test_load_index_file(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    path.write_bytes(dumps({"schema": SCHEMA, "kernels": {}}))
    assert load_index_file(path) == {"schema": SCHEMA, "kernels": {}}


def test_toolkit_label() -> None:
    assert toolkit_label({"toolkit": TOOLKIT}) == "nvcc 13.0.88, driver >= 13000"
    assert toolkit_label({"toolkit": {}}) == "? ?, driver >= ?"
    assert toolkit_label({"nvcc_version": "12.8"}) == "nvcc 12.8"  # an index from before the toolkit table
    assert toolkit_label({}) == "nvcc ?"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", r"^lib/index\.json: not a valid index \(Expecting property name"),
        (b"\xff\xfe", r"^lib/index\.json: not a valid index \("),
        (b"[]", r"^lib/index\.json: not an aotc index \(no 'kernels' table\)$"),
        (b'{"kernels": []}', r"^lib/index\.json: not an aotc index \(no 'kernels' table\)$"),
        (b'{"kernels": {}}', r"^lib/index\.json: index schema None, this aotc reads schema 1$"),
        (b'{"kernels": {}, "schema": 2}', r"^lib/index\.json: index schema 2, this aotc reads schema 1$"),
    ],
)
def test_read_index_refuses_in_one_line(data: bytes, message: str) -> None:
    with pytest.raises(IndexFormatError, match=message) as info:
        read_index(data, "lib/index.json")
    assert isinstance(info.value, AotcError)
    assert "\n" not in str(info.value)


def test_load_index_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    path.write_text(json.dumps({"kernels": {}, "schema": 0}))
    with pytest.raises(IndexFormatError, match=f"^{re.escape(str(path))}: index schema 0"):
        load_index_file(path)
