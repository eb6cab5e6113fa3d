"""A declared library's index: the one-kernel-a-line layout, so loading checks no
kernel and a family's first use checks that family's kernels alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aotc
import aotc.kernels
from aotc.errors import IndexFormatError
from aotc.index import LibraryIndex
from aotc.index.views import Backward
from declared_support import ROWOPS, declared_library


@pytest.fixture
def lib(tmp_path: Path) -> Path:
    return declared_library(tmp_path, ROWOPS / "manifest.yaml")


def test_a_declared_library_is_laid_out_a_kernel_a_line(lib: Path) -> None:
    text = (lib / "index.json").read_text()
    assert '"kernel_lines": {"softmax_f32":[0,"softmax",["f32",256],0],' in text
    assert '\n"scan_i64": {"family": "scan", ' in text
    assert '\n"scan": {"axes": {"dtype": ["f32", "f64", "i32", "i64"], ' in text  # its catalog, a line of its own
    scan = LibraryIndex.open(lib).family("scan")  # read whole: the catalogs and the directory held to the table
    assert [f.kernel for f in scan.forms] == ["scan_f32", "scan_f64", "scan_i32", "scan_i64"]
    assert scan.find({"dtype": "i64"}) == [("scan_i64", {"dtype": "i64", "threads": 256, "items": 4}, 3)]


def test_a_familys_first_use_checks_the_kernel_it_calls_alone(lib: Path) -> None:
    library = aotc.load(lib, backend="emulator")
    kernels = aotc.kernels.over(library)
    assert kernels.names == ("softmax", "softmax_backward", "scan", "histogram", "scale_shift", "scale_shift_grad_x", "scale_shift_grad_params")
    assert repr(library.index.kernels) == f"<KernelTable {lib / 'index.json'}: 16 kernels, 0 checked>"
    kernels.softmax(np.ones((2, 3)))
    assert repr(library.index.kernels) == f"<KernelTable {lib / 'index.json'}: 16 kernels, 1 checked>"
    assert list(kernels.layout("softmax").kernels) == ["softmax_f64"]  # the one kernel the call chose


def _lie(lib: Path, old: bytes, new: bytes, count: int = 1) -> None:
    path = lib / "index.json"
    data = path.read_bytes()
    assert old in data and len(old) == len(new)  # the parts of the layout keep their places
    path.write_bytes(data.replace(old, new, count))


def test_a_directory_row_that_files_a_kernel_under_another_family_is_refused(lib: Path) -> None:
    _lie(lib, b'"scan_f32":[9319,"scan",', b'"scan_f32":[9319,"sca1",')
    library = aotc.load(lib, backend="emulator")
    kernels = aotc.kernels.over(library)
    assert kernels.scan(np.ones((2, 3))).shape == (2, 3)  # the other kernels of scan are unaffected
    with pytest.raises(IndexFormatError, match=r"kernels\.scan_f32: the directory \(kernel_lines\) points at no line of this kernel"):
        library.kernel("scan_f32")
    with pytest.raises(IndexFormatError, match=r"kernels\.scan_f32: the directory \(kernel_lines\) points at no line of this kernel"):
        LibraryIndex.open(lib)  # read whole (aotc inspect): every kernel is checked


def test_a_directory_row_that_sends_a_call_to_another_kernel_is_refused(lib: Path) -> None:
    # softmax_f32's row claims softmax_f64's axis values and form: an f64 call would find it.
    _lie(lib, b'"softmax_f32":[0,"softmax",["f32",256],0]', b'"softmax_f32":[0,"softmax",["f64",256],1]')
    _lie(lib, b'"softmax_f64":[2284,"softmax",["f64",256],1]', b'"softmax_f64":[2284,"softmax",["f32",256],0]')
    kernels = aotc.kernels.over(aotc.load(lib, backend="emulator"))
    with pytest.raises(IndexFormatError, match=r"kernels\.softmax_f32\.axes: not what the directory and its family's catalog \(kernel_families\.softmax\) say"):
        kernels.softmax(np.ones((2, 3)))
    with pytest.raises(IndexFormatError, match=r"kernel_lines\.softmax_f32: does not give the kernel's family, axis values and form$"):
        LibraryIndex.open(lib)  # read whole: the directory is held to the kernels


def test_a_catalog_that_is_not_its_familys_is_refused_read_whole(lib: Path) -> None:
    _lie(lib, b'"scan": {"axes": {"dtype": ["f32", "f64", "i32", "i64"]', b'"scan": {"axes": {"dtype": ["f64", "f32", "i32", "i64"]')
    kernels = aotc.kernels.over(aotc.load(lib, backend="emulator"))
    assert kernels.scan(np.ones((2, 3))).shape == (2, 3)  # the same values: a call is unaffected
    with pytest.raises(IndexFormatError, match=r"kernel_families\.scan: is not the catalog of the family's kernels; rebuild or reinstall the library$"):
        LibraryIndex.open(lib)


def _rewrite(lib: Path, change: Any) -> None:
    """Edit a kernel entry of ``lib``'s index and reseal it, as a careless tool might."""
    import json

    from aotc.build.index_writer import dumps, seal

    path = lib / "index.json"
    index = json.loads(path.read_text())
    change(index["kernels"]["softmax_f32"])
    path.write_bytes(dumps(seal(index)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e["signature"][0]["array"].update(dtype="f8"), r"kernels\.softmax_f32\.signature\[0\]\.array\.dtype: 'f8' is not one of f32, f64, i32, i64, bool, u32, f16, bf16, i8, u8, i16, u16, u64$"),
        (lambda e: e["signature"][3].update(dim=False), r"kernels\.softmax_f32\.signature\[3\]\.dim: False for rows, which an array's shape names$"),
        (lambda e: e["signature"][0]["array"].update(optional=["rows"]), r"signature\[0\]\.array\.optional: \['rows'\] is not a run of the shape's leading dimensions$"),
        (lambda e: e["signature"][0]["array"].update(optional="batch"), r"signature\[0\]\.array\.optional: is "),
        (lambda e: e["signature"][1]["array"].update(shape=["rows", "x"]), r"signature\[1\]\.array\.shape\[1\]: 'x' is neither an integer size parameter, a positive number nor an expression$"),
        (lambda e: e["signature"][0]["array"].update(role="out"), r"kernels\.softmax_f32\.signature: has no in or inout array$"),
        (lambda e: e["launch"]["grid"][0].update(extent="rows*y"), r"launch\.grid\[0\]\.extent: 'rows\*y' is neither a size parameter, a number, nor a product of them$"),
        # The new declarations: argument names, fills, caller-given extents, resolved backwards.
        (lambda e: e["signature"][0].update(arg="lambda"), r"signature\[0\]\.arg: 'lambda' is a name the bindings keep for themselves$"),
        (lambda e: e["signature"][0].update(arg="stream"), r"signature\[0\]\.arg: 'stream' is a name the bindings keep"),
        (lambda e: e["signature"][0].update(arg="_aotc_x"), r"signature\[0\]\.arg: '_aotc_x' is a name the bindings keep"),
        (lambda e: e["signature"][0].update(arg="x y"), r"signature\[0\]\.arg: 'x y' is not an argument name$"),
        (lambda e: e["signature"][0].update(arg="y"), r"kernels\.softmax_f32\.signature\[1\]: argument name y is also another parameter's$"),
        (lambda e: e["signature"][0].update(arg="dtype"), r"kernels\.softmax_f32\.signature\[0\]: argument name dtype is also an axis's$"),
        (lambda e: e["signature"][3].update(arg="r"), r"signature\[3\]\.arg: rows is bound from the arrays, never passed: it has no argument name$"),
        (lambda e: e["signature"][0]["array"].update(fill=0), r"signature\[0\]\.array\.fill: on an in array; only an out array is filled before the launch$"),
        (lambda e: e["signature"][1]["array"].update(fill="inf"), r"signature\[1\]\.array\.fill: 'inf' is not a value of a f32 array$"),
        (lambda e: e["signature"][1]["array"].update(fill=True), r"signature\[1\]\.array\.fill: True is not a value of a f32 array$"),
        (lambda e: e["signature"][2].update(dim=False, extent=True), r"signature\[2\]\.extent: batch is bound by an array, optional in one, or neither named by a shape nor tied$"),
        (lambda e: e["signature"][3].update(extent=True), r"signature\[3\]\.extent: True for rows; only true, for an integer scalar no in or inout array binds$"),
        (lambda e: e["signature"][3].update(max=4), r"signature\[3\]\.max: 4 is not a dimension's name or a positive number bounding an extent$"),
        # Shape expressions, ties and split offsets (issue 38).
        (lambda e: e["signature"][1]["array"].update(shape=["batch", {"terms": [[1, "rows"], [1, "q"]]}, "cols"]), r"shape\[1\]\.terms\[1\]: \[1, 'q'\] is not a nonzero coefficient and the integer size parameters it multiplies$"),
        (lambda e: e["signature"][1]["array"].update(shape=["batch", {"terms": [[0, "rows"]]}, "cols"]), r"shape\[1\]\.terms\[0\]: \[0, 'rows'\] is not a nonzero coefficient"),
        (lambda e: e["signature"][1]["array"].update(shape=["batch", {"terms": [[2]]}, "cols"]), r"shape\[1\]\.terms: names no size parameter$"),
        (lambda e: e["signature"][1]["array"].update(shape=["batch", {"terms": [[1, "rows"]], "div": 0}, "cols"]), r"shape\[1\]\.div: 0 is outside 1\.\.2147483647$"),
        (lambda e: e["signature"][1]["array"].update(shape=["batch", {"terms": [[1, "rows"]], "mod": 2}, "cols"]), r"shape\[1\]: unknown key 'mod'$"),
        (lambda e: e["signature"][3].update(equals="cols"), r"signature\[3\]\.equals: 'cols' is not a dimension's name an extent \(with no max\) equals$"),
        (lambda e: e["signature"][3].update(split="y"), r"signature\[3\]\.split: rows is named by a shape or a stride, or axis y is split twice$"),
        (lambda e: e["signature"][3].update(split="w"), r"signature\[3\]\.split: 'w' for rows; only x, y or z, on an integer scalar the binder sets \(dim, no arg\)$"),
        (lambda e: e.update(backward={"family": "softmax_backward", "saves": ["y"]}), r"kernels\.softmax_f32\.backward: unknown key 'family'$"),
        (lambda e: e.update(backward={"kernels": []}), r"kernels\.softmax_f32\.backward\.kernels: is empty"),
        (lambda e: e.update(backward={"kernels": [{"kernel": "softmax_backward_f32"}]}), r"backward\.kernels\[0\]\.saves: missing$"),
        (lambda e: e.update(backward={"kernels": [{"kernel": "nope", "saves": []}]}), r"backward\.kernels\[0\]\.kernel: 'nope' is not a kernel of this index$"),
        (lambda e: e.update(backward={"through": "softmax_f32"}), r"kernels\.softmax_f32\.backward\.through: is the kernel itself$"),
        (lambda e: e.update(backward={"through": "scan_f32", "kernels": []}), r"kernels\.softmax_f32\.backward: needs exactly one of kernels"),
    ],
)
def test_an_index_entry_the_bindings_could_not_trust_is_refused(tmp_path: Path, change: Any, message: str) -> None:
    from aotc.errors import IndexFormatError

    lib = declared_library(tmp_path, ROWOPS / "manifest.yaml")
    _rewrite(lib, change)
    with pytest.raises(IndexFormatError, match=message):
        aotc.kernels.over(aotc.load(lib, backend="emulator")).softmax(np.ones((2, 2), np.float32))  # softmax_f32's call


def _with_extent(entry: dict[str, Any]) -> None:
    """softmax_f32 with x named a, y filled with -inf and sized by a caller's k up to cols."""
    entry["params"].append({"name": "k", "ctype": "int", "kind": "i32", "pack": "i"})
    entry["signature"].append({"name": "k", "scalar": "i32", "dim": False, "extent": True, "max": "cols"})
    entry["signature"][0]["arg"] = "a"
    entry["signature"][1]["array"].update(shape=["batch", "rows", "k"], fill="-inf")


def test_the_new_declarations_read_back_as_the_views_say(tmp_path: Path) -> None:
    lib = declared_library(tmp_path, ROWOPS / "manifest.yaml")
    _rewrite(lib, _with_extent)
    index = LibraryIndex.open(lib)
    x, y, batch, _, _, k = index.kernel("softmax_f32").signature
    assert (x.arg, y.arg, batch.arg, k.arg) == ("a", "y", "batch", "k")  # the name where no arg is written
    assert (x.fill, y.fill) == (None, float("-inf"))
    assert (k.scalar, k.dim, k.extent, k.max) == (True, False, True, "cols")
    assert (batch.extent, batch.max) == (False, None)
    assert index.kernel("softmax_f32").backward == Backward((("softmax_backward_f32", ("y",)),), "")
    assert index.kernel("softmax_backward_f32").backward is None


@pytest.mark.parametrize(
    ("dtype", "fill", "view"),
    [("f32", 0, 0.0), ("f32", "+inf", float("inf")), ("f64", -2.5, -2.5), ("i32", -(2**31), -(2**31)), ("i64", 2**63 - 1, 2**63 - 1), ("u32", 2**32 - 1, 2**32 - 1), ("bool", False, False)],
)
def test_a_fill_reads_back_as_its_dtype_holds_it(tmp_path: Path, dtype: str, fill: Any, view: Any) -> None:
    lib = declared_library(tmp_path, ROWOPS / "manifest.yaml")
    _rewrite(lib, lambda e: e["signature"][1]["array"].update(dtype=dtype, fill=fill))
    found = LibraryIndex.open(lib).kernel("softmax_f32").signature[1].fill
    assert (found, type(found)) == (view, type(view))


@pytest.mark.parametrize(("dtype", "fill"), [("i32", 2**31), ("u32", -1), ("i64", 1.0), ("bool", 1), ("f32", "0"), ("f32", "1e400")])
def test_a_fill_its_dtype_cannot_hold_is_refused(tmp_path: Path, dtype: str, fill: Any) -> None:
    lib = declared_library(tmp_path, ROWOPS / "manifest.yaml")
    _rewrite(lib, lambda e: e["signature"][1]["array"].update(dtype=dtype, fill=fill))
    if fill == "1e400":  # a number JSON reads as infinity: the index spells that "+inf"
        _lie(lib, b'"fill": "1e400"', b'"fill":   1e400', count=-1)  # in its line and in its family's catalog
    with pytest.raises(IndexFormatError, match=rf"signature\[1\]\.array\.fill: .* is not a value of a {dtype} array$"):
        LibraryIndex.open(lib)


def test_a_route_must_lead_to_gradient_kernels(tmp_path: Path) -> None:
    lib = declared_library(tmp_path, ROWOPS / "manifest.yaml")
    _rewrite(lib, lambda e: e.update(backward={"through": "scan_f32"}))
    with pytest.raises(IndexFormatError, match=r"kernels\.softmax_f32\.backward\.through: scan_f32 has no gradient kernels of its own to route to$"):
        LibraryIndex.open(lib)  # read whole: the target is checked too
    _rewrite(lib, lambda e: e.update(backward={"through": "softmax_f64"}))
    assert LibraryIndex.open(lib).kernel("softmax_f32").backward == Backward((), "softmax_f64")  # softmax_f64 has gradient kernels
