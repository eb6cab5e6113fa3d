"""``aotc.index.LibraryIndex``: the one reader of index.json. Faults of every
field are in tests/faults/test_index_faults.py; the writer is tested in
tests/build/test_index_writer.py."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from aotc.build.index_writer import dumps, seal
from aotc.errors import DamagedLibraryError, IndexFormatError, LibraryNotFoundError, UnknownKernelError
from aotc.index import SCHEMA, LibraryIndex, sha256_bytes
from aotc.index.files import MemberFiles
from aotc.index.schema import canonical_json, field_checksums
from index_support import TOOLKIT, kernel_entry, param

FATBIN = b"fatbin"
SOURCE = b"// source\n"


def _entry(name: str, semiring: str, pass_: str) -> dict[str, Any]:
    return kernel_entry(
        name, fatbin=FATBIN, source=SOURCE, semiring=semiring, pass_=pass_,
        params=[param("A", "ptr", "const float*"), param("M", "i32"), param("lda", "i64")],
        block=(8, 4, 1), grid=(("M", 32), ("7", 2), ("1", 1)), shared=(1024, 16),
        sass=("80", "90a"), ptx=("75",), spill_stores=2,
    )  # fmt: skip


def document(toolkit: dict[str, Any] | None = TOOLKIT) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "aotc_version": "0.1.0",
        "library": "mini",
        "semirings": {
            "maxplus": {"add": "max", "mul": "add", "zero": "-inf", "one": "0", "counting": False},
            "minplus": {"add": "min", "mul": "add", "zero": "+inf", "one": "0", "counting": False},
        },
        "kernels": {
            "gemm_maxplus_forward": _entry("gemm_maxplus_forward", "maxplus", "forward"),
            "gemm_maxplus_argmax": _entry("gemm_maxplus_argmax", "maxplus", "argmax"),
            "gemm_minplus_forward": _entry("gemm_minplus_forward", "minplus", "forward"),
        },
    }
    if toolkit is not None:
        doc["toolkit"] = toolkit
    else:
        doc["nvcc_version"] = "12.8.93"
    return seal(doc)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    (lib / "src").mkdir(parents=True)
    doc = document()
    for name in doc["kernels"]:
        (lib / f"{name}.fatbin").write_bytes(FATBIN)
        (lib / "src" / f"{name}.cu").write_bytes(SOURCE)
    (lib / "index.json").write_bytes(dumps(doc))
    return lib


def test_open_reads_a_folder(folder: Path) -> None:
    index = LibraryIndex.open(folder)
    assert (index.name, index.where, index.directory) == ("mini", str(folder / "index.json"), folder)
    assert list(index.kernels) == ["gemm_maxplus_forward", "gemm_maxplus_argmax", "gemm_minplus_forward"]
    assert repr(index) == f"<LibraryIndex 'mini' at {folder / 'index.json'}: 3 kernels>"


def test_a_kernel_view_holds_params_geometry_images_and_resources() -> None:
    kernel = LibraryIndex(dumps(document()), "index.json").kernel("gemm_maxplus_forward")
    assert (kernel.symbol, kernel.family) == ("gemm_maxplus_forward", "gemm")
    assert dict(kernel.axes) == {"semiring": "maxplus", "dtype": "f32", "pass": "forward", "variant": "single"}
    assert [(p.name, p.arg, p.scalar, p.dim) for p in kernel.signature] == [("A", "A", False, False), ("M", "M", True, True), ("lda", "lda", True, True)]
    assert kernel.backward is None
    assert (kernel.param_names, kernel.kinds, kernel.pack_format) == (("A", "M", "lda"), ("ptr", "i32", "i64"), "@Qiq")
    assert kernel.params[0].ctype == "const float*"
    assert kernel.launch.block == (8, 4, 1)
    assert kernel.launch.grid == (("M", 32), ("7", 2), ("1", 1))
    assert (kernel.launch.shared_bytes_static, kernel.launch.shared_bytes_dynamic) == (1024, 16)
    assert (kernel.sass, kernel.ptx) == (("80", "90a"), ("75",))
    assert kernel.fatbin.file == "gemm_maxplus_forward.fatbin" and kernel.fatbin.size == len(FATBIN)
    assert kernel.file("source").file == "src/gemm_maxplus_forward.cu"
    assert dict(kernel.resources["80"]) == {"registers": 40, "spill_stores": 2}


def test_an_unknown_kernel_name_suggests_near_ones() -> None:
    index = LibraryIndex(dumps(document()), "index.json")
    with pytest.raises(UnknownKernelError, match=r"^library 'mini' has no kernel 'maxplus' \(did you mean: gemm_maxplus_forward, gemm_maxplus_argmax\)$"):
        index.kernel("maxplus")
    with pytest.raises(KeyError):  # UnknownKernelError is a KeyError too
        index.kernel("nothing")


def test_the_toolkit_table_and_the_ptx_toolkit() -> None:
    index = LibraryIndex(dumps(document()), "index.json")
    assert index.toolkit is not None
    assert (index.toolkit.version, index.toolkit.cuda_major, index.toolkit.min_driver, index.toolkit.wheel) == ("13.0.88", 13, 13000, "aotc")
    assert (index.ptx_toolkit, index.toolkit_label()) == ((13, 0), "nvcc 13.0.88, driver >= 13000")


def test_an_index_without_a_toolkit_table_reads_nvcc_version() -> None:
    index = LibraryIndex(dumps(document(toolkit=None)), "index.json")
    assert (index.toolkit, index.ptx_toolkit, index.toolkit_label()) == (None, (12, 8), "nvcc 12.8.93")


def test_archs_lists_every_kernels_archs() -> None:
    index = LibraryIndex(dumps(document()), "index.json")
    assert (index.archs("sass"), index.archs("ptx")) == (["80", "90a"], ["75"])


def test_the_document_and_the_views_are_read_only() -> None:
    index = LibraryIndex(dumps(document()), "index.json")
    assert index["semirings"]["maxplus"]["zero"] == "-inf"  # the document, as a mapping
    assert index["kernels"]["gemm_maxplus_forward"]["sass"] == ("80", "90a")
    with pytest.raises(TypeError):
        index["semirings"]["maxplus"]["zero"] = "+inf"  # type: ignore[index]
    with pytest.raises(TypeError):
        index.kernels["new"] = index.kernel("gemm_maxplus_forward")  # type: ignore[index]
    with pytest.raises(AttributeError, match=r"^Launch is immutable: cannot set 'block'$"):
        index.kernel("gemm_maxplus_forward").launch.block = (1, 1, 1)  # type: ignore[misc]


def test_read_verified_returns_checked_bytes(folder: Path) -> None:
    index = LibraryIndex.open(folder)
    assert index.read_verified("gemm_maxplus_forward", "fatbin") == FATBIN
    assert index.read_verified(index.kernel("gemm_minplus_forward"), "source") == SOURCE
    assert index.file_label("gemm_maxplus_forward", "source") == str(folder / "src" / "gemm_maxplus_forward.cu")


def test_read_verified_refuses_a_flipped_byte_naming_the_file(folder: Path) -> None:
    (folder / "gemm_maxplus_argmax.fatbin").write_bytes(b"fatbiN")
    index = LibraryIndex.open(folder)
    expected = sha256_bytes(FATBIN)[:12]
    with pytest.raises(DamagedLibraryError) as info:
        index.read_verified("gemm_maxplus_argmax", "fatbin")
    assert str(info.value) == (
        f"{folder}/gemm_maxplus_argmax.fatbin: sha256 {sha256_bytes(b'fatbiN')[:12]}... does not match index.json "
        f"({expected}...); the library is damaged (reinstall it)"
    )


def test_read_verified_knows_only_fatbin_and_source(folder: Path) -> None:
    with pytest.raises(IndexFormatError, match=r"^'ptx' is not a kernel file \(fatbin or source\)$"):
        LibraryIndex.open(folder).read_verified("gemm_maxplus_forward", "ptx")


def test_an_index_from_bytes_alone_reads_no_files() -> None:
    index = LibraryIndex(dumps(document()), "label/index.json")
    assert index.directory is None
    with pytest.raises(IndexFormatError, match=r"^label/index\.json: an index read from bytes alone has no files to read$"):
        index.read_verified("gemm_maxplus_forward", "fatbin")


def test_open_of_a_folder_without_an_index(tmp_path: Path) -> None:
    with pytest.raises(LibraryNotFoundError, match=rf"^{tmp_path}/index\.json: no such file$"):
        LibraryIndex.open(tmp_path)


def test_members_of_an_archive_are_read_capped_and_verified(tmp_path: Path) -> None:
    wheel = tmp_path / "lib.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("lib/gemm_maxplus_forward.fatbin", FATBIN)
        archive.writestr("lib/gemm_maxplus_argmax.fatbin", FATBIN * 1000)  # far bigger than recorded
    asked: list[tuple[str, int]] = []
    with zipfile.ZipFile(wheel) as archive:

        def read(name: str, limit: int) -> bytes | None:
            asked.append((name, limit))
            full = f"lib/{name}"
            return archive.open(full).read(limit + 1) if full in archive.namelist() else None

        index = LibraryIndex(dumps(document()), "w.whl!lib/index.json", MemberFiles(read, "w.whl!lib"))
        assert index.read_verified("gemm_maxplus_forward", "fatbin") == FATBIN
        with pytest.raises(DamagedLibraryError, match=r"^w\.whl!lib/gemm_maxplus_argmax\.fatbin: size 7 bytes, index\.json says 6"):
            index.read_verified("gemm_maxplus_argmax", "fatbin")
        with pytest.raises(DamagedLibraryError, match=r"^w\.whl!lib/src/gemm_maxplus_forward\.cu: missing"):
            index.read_verified("gemm_maxplus_forward", "source")
    assert asked[1] == ("gemm_maxplus_argmax.fatbin", len(FATBIN))  # asked for no more than the recorded size


def test_field_checksums_are_of_canonical_json() -> None:
    entry = {"launch": {"block": [1, 2, 3], "grid": []}, "other": 1}
    assert canonical_json(entry["launch"]) == b'{"block":[1,2,3],"grid":[]}'
    assert field_checksums(entry, ("launch", "absent")) == {"launch": sha256_bytes(b'{"block":[1,2,3],"grid":[]}')}


def test_key_order_and_whitespace_do_not_change_the_checksums() -> None:
    doc = document()
    shuffled = json.loads(json.dumps(doc))
    launch = shuffled["kernels"]["gemm_maxplus_forward"]["launch"]
    shuffled["kernels"]["gemm_maxplus_forward"]["launch"] = dict(reversed(list(launch.items())))
    data = json.dumps(shuffled, indent=4, sort_keys=True).encode()
    assert LibraryIndex(data, "index.json").kernel("gemm_maxplus_forward").launch.block == (8, 4, 1)


# -- lazy: the library-wide fields at open, each kernel at its first use --------


def test_a_lazy_index_checks_each_kernel_at_its_first_use() -> None:
    index = LibraryIndex(dumps(document()), "index.json", lazy=True)
    assert (len(index.kernels), list(index.kernels)) == (3, ["gemm_maxplus_forward", "gemm_maxplus_argmax", "gemm_minplus_forward"])
    assert repr(index.kernels) == "<KernelTable index.json: 3 kernels, 0 checked>"
    assert index.kernel("gemm_maxplus_argmax") == LibraryIndex(dumps(document()), "index.json").kernel("gemm_maxplus_argmax")
    assert repr(index.kernels) == "<KernelTable index.json: 3 kernels, 1 checked>"
    assert index["semirings"]["maxplus"]["zero"] == "-inf"  # the top level checks no kernel
    assert repr(index.kernels) == "<KernelTable index.json: 3 kernels, 1 checked>"
    whole = LibraryIndex(dumps(document()), "index.json").document
    assert dict(index.document) == dict(whole)  # every kernel
    assert repr(index.kernels) == "<KernelTable index.json: 3 kernels, 3 checked>"


def test_a_lazy_index_refuses_a_bad_library_wide_field_at_open() -> None:
    doc = document()
    doc["semirings"]["maxplus"]["zero"] = "+inf"  # sealed: the library seal no longer holds
    with pytest.raises(IndexFormatError, match=r"^index\.json: semirings: checksum mismatch"):
        LibraryIndex(dumps(doc), "index.json", lazy=True)


def test_an_index_in_another_layout_is_checked_whole_even_when_lazy() -> None:
    doc = document()
    doc["kernels"]["gemm_minplus_forward"]["launch"]["block"] = [64, 1, 1]  # not resealed
    with pytest.raises(IndexFormatError, match=r"kernels\.gemm_minplus_forward\.launch: checksum mismatch"):
        LibraryIndex(json.dumps(doc, indent=2).encode(), "index.json", lazy=True)
    index = LibraryIndex(dumps(doc), "index.json", lazy=True)  # the build's layout: only that kernel fails
    assert index.kernel("gemm_maxplus_forward").name == "gemm_maxplus_forward"
    with pytest.raises(IndexFormatError, match=r"^index\.json: kernels\.gemm_minplus_forward\.launch: checksum mismatch"):
        index.kernel("gemm_minplus_forward")


def test_a_directory_pointing_at_another_kernels_line_is_refused() -> None:
    data = dumps(document())
    second, third = b'"gemm_maxplus_argmax":[', b'"gemm_minplus_forward":['
    offsets = [data[data.index(key) + len(key) :].split(b",", 1)[0] for key in (second, third)]
    assert len(offsets[0]) == len(offsets[1])  # swapped, the directory keeps its length
    data = data.replace(second + offsets[0], second + offsets[1], 1)
    lazy = LibraryIndex(data, "index.json", lazy=True)
    assert lazy.kernel("gemm_minplus_forward").name == "gemm_minplus_forward"  # its own line is intact
    with pytest.raises(IndexFormatError, match=r"^index\.json: kernels\.gemm_maxplus_argmax: the directory \(kernel_lines\) points at no line of this kernel"):
        lazy.kernel("gemm_maxplus_argmax")
    with pytest.raises(IndexFormatError, match=r"^index\.json: kernels\.gemm_maxplus_argmax: the directory \(kernel_lines\) points at no line"):
        LibraryIndex(data, "index.json")  # read whole (aotc inspect): every kernel is checked


def test_axes_its_line_gives_but_its_entry_does_not_are_refused() -> None:
    data = dumps(document())
    edited = b'"semiring": "minplus", "dtype": "f32", "pass": "argmax"'  # the same length: the directory still points at it
    data = data.replace(b'"semiring": "maxplus", "dtype": "f32", "pass": "argmax"', edited, 1)
    index = LibraryIndex(data, "index.json", lazy=True)
    with pytest.raises(IndexFormatError, match=r"^index\.json: kernels\.gemm_maxplus_argmax\.axes: checksum mismatch"):
        index.kernel("gemm_maxplus_argmax")  # its axes are checked before a family groups it by them


# -- size: a library past 10,000 kernels and 8 MiB loads, reading its top level alone --


def test_a_library_of_many_kernels_loads_and_a_load_reads_its_top_level_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    doc = document()
    first = doc["kernels"]["gemm_maxplus_forward"]
    kernels = {}
    for i in range(12_000):  # past the 10,000 kernels and the 8 MiB an index could hold
        entry = {**first, "symbol": f"k{i}", "axes": {**first["axes"], "variant": f"v{i}"}}
        entry["checksum"] = {**first["checksum"], **field_checksums(entry, ("symbol", "axes"))}
        kernels[f"k{i}"] = entry
    doc["kernels"] = kernels
    lib = tmp_path / "lib"
    (lib / "src").mkdir(parents=True)
    (lib / "gemm_maxplus_forward.fatbin").write_bytes(FATBIN)
    (lib / "src" / "gemm_maxplus_forward.cu").write_bytes(SOURCE)
    (lib / "index.json").write_bytes(dumps(doc))
    assert (lib / "index.json").stat().st_size > 8 * 1024 * 1024
    read = []
    pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, size, at: read.append(size) or pread(fd, size, at))
    index = LibraryIndex.open(lib, lazy=True)
    assert (len(index.kernels), sum(read)) == (12_000, 8192 + len(b"\n }\n}\n"))  # its first 8 KiB, and its last bytes
    assert index.kernel("k11999").axes["variant"] == "v11999"  # the directory, then that kernel's line
    family = index.family("gemm")
    assert (family.count, len(family.forms), family.find({"variant": "v7000"})[0][0]) == (12_000, 1, "k7000")
    assert index.read_verified("k11999", "fatbin") == FATBIN
