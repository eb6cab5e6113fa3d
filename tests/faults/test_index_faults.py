"""Faults of index.json and of a library's files: each input gives one one-line error, or the right result.

Every case names the input, the error class and a fragment of the message
that names the field (or the value the loader must return). The fuzzer at the
end mutates a valid index at random and holds the loader to two rules: only
aotc's own errors escape, and each is one line under 300 characters.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aotc.build.index_writer import dumps, seal
from aotc.errors import AotcError, DamagedLibraryError, IndexFormatError, LibraryNotFoundError
from aotc.index import MAX_INDEX_BYTES, SCHEMA, LibraryIndex
from index_support import kernel_entry, param

WHERE = "lib/index.json"
FATBIN = b"fatbin bytes of k1"
SOURCE = b"// source of k1\n"


def _entry(name: str, pass_: str) -> dict[str, Any]:
    return kernel_entry(
        name, fatbin=FATBIN, source=SOURCE, pass_=pass_,
        params=[param("A", "ptr", "const float*"), param("C", "ptr"), param("M", "i32"), param("lda", "i64")],
        block=(16, 16, 1), grid=(("M", 128), ("M", 64), ("1", 1)), shared=(16384, 0), sass=("80", "90a"),
    )  # fmt: skip


def valid_document() -> dict[str, Any]:
    """A sealed index of two kernels, as a build writes it."""
    return seal({
        "schema": SCHEMA,
        "aotc_version": "0.1.0",
        "toolkit": {"compiler": "nvcc", "version": "13.0.88", "cuda_major": 13, "min_driver": 13000, "wheel": "aotc"},
        "library": "mini",
        "semirings": {"maxplus": {"add": "max", "mul": "add", "zero": "-inf", "one": "0", "counting": False}},
        "kernels": {"k1": _entry("k1", "forward"), "k2": _entry("k2", "argmax")},
    })  # fmt: skip


def load(document: Any) -> LibraryIndex:
    return LibraryIndex(json.dumps(document).encode(), WHERE)


def k1(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["kernels"]["k1"]


def assert_one_line(error: BaseException) -> None:
    text = str(error)
    assert "\n" not in text and "\r" not in text and len(text) < 300, text


# -- the document: (change, reseal, error class, fragment of the message) ----------------------------
# reseal=True rewrites the checksums after the change, as a build would, so the
# case reaches the field's own check; False leaves them, as a hand edit does.

Change = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Change:
    """A change setting the field at ``path`` (dots and [i]) of the document."""
    keys = [int(index) if index else name for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path)]

    def change(doc: dict[str, Any]) -> None:
        target = doc
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


def _delete(path: str) -> Change:
    keys = path.split(".")

    def change(doc: dict[str, Any]) -> None:
        target = doc
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return change


DOCUMENT_FAULTS = [
    # the examples of the issue
    ("file /dev/zero", _set("kernels.k1.fatbin.file", "/dev/zero"), True, "kernels.k1.fatbin.file: '/dev/zero' is not a plain file name"),
    ("file 5", _set("kernels.k1.fatbin.file", 5), True, "kernels.k1.fatbin.file: is a number, not a string"),
    ("file with NUL", _set("kernels.k1.fatbin.file", "k1\x00.fatbin"), True, "kernels.k1.fatbin.file: 'k1\\x00.fatbin' is not a plain file name"),
    ("file outside", _set("kernels.k1.fatbin.file", "../../elsewhere"), True, "kernels.k1.fatbin.file: '../../elsewhere' is not a plain file name"),
    ("source outside", _set("kernels.k1.source.file", "../x"), True, "kernels.k1.source.file: '../x' is not a plain file name under src/"),
    ("source up and back", _set("kernels.k1.source.file", "src/../k1.fatbin"), True, "kernels.k1.source.file: 'src/../k1.fatbin' is not a plain file name under src/"),
    ("source too deep", _set("kernels.k1.source.file", "src/sub/k1.cu"), True, "kernels.k1.source.file: 'src/sub/k1.cu' is not"),
    ("source absolute", _set("kernels.k1.source.file", "/src/k1.cu"), True, "kernels.k1.source.file: '/src/k1.cu' is not"),
    ("fatbin in a subfolder", _set("kernels.k1.fatbin.file", "src/k1.cu"), True, "kernels.k1.fatbin.file: 'src/k1.cu' is not a plain file name"),
    ("fatbin dot file", _set("kernels.k1.fatbin.file", ".k1"), True, "kernels.k1.fatbin.file: '.k1' is not a plain file name"),
    ("fatbin dot dot", _set("kernels.k1.fatbin.file", ".."), True, "kernels.k1.fatbin.file: '..' is not a plain file name"),
    ("fatbin empty", _set("kernels.k1.fatbin.file", ""), True, "kernels.k1.fatbin.file: '' is not a plain file name"),
    ("fatbin backslash", _set("kernels.k1.fatbin.file", "..\\k1"), True, "kernels.k1.fatbin.file: '..\\\\k1' is not a plain file name"),
    ("sha256 not hex", _set("kernels.k1.fatbin.sha256", "XYZ"), True, "kernels.k1.fatbin.sha256: 'XYZ' is not a sha256 digest"),
    ("size negative", _set("kernels.k1.fatbin.size", -1), True, "kernels.k1.fatbin.size: -1 is outside 0..268435456"),
    ("size boolean", _set("kernels.k1.fatbin.size", True), True, "kernels.k1.fatbin.size: is a boolean, not an integer"),
    ("size huge", _set("kernels.k1.fatbin.size", 2**40), True, "kernels.k1.fatbin.size: 1099511627776 is outside"),
    # launch geometry and parameter kinds: sealed by the checksum
    ("block edited", _set("kernels.k1.launch.block", [32, 8, 1]), False, "kernels.k1.launch: checksum mismatch"),
    ("tile edited", _set("kernels.k1.launch.grid[0].tile", 64), False, "kernels.k1.launch: checksum mismatch"),
    ("shared edited", _set("kernels.k1.launch.shared_bytes_dynamic", 4096), False, "kernels.k1.launch: checksum mismatch"),
    ("kind and pack edited together", lambda d: k1(d)["params"][2].update(kind="i64", pack="q"), False, "kernels.k1.signature[2]: does not describe parameter M (i64) as a scalar"),
    ("kind, pack and signature edited together", lambda d: (k1(d)["params"][2].update(kind="i64", pack="q"), k1(d)["signature"][2].update(scalar="i64")), False, "kernels.k1.signature: checksum mismatch"),
    ("axes edited", _set("kernels.k1.axes.dtype", "f64"), False, "kernels.k1.axes: checksum mismatch"),
    ("backward added", _set("kernels.k1.backward", {"through": "k2"}), False, "kernels.k1.checksum.backward: missing"),
    ("sass edited", _set("kernels.k1.sass", ["80", "86"]), False, "kernels.k1.sass: checksum mismatch"),
    ("fatbin digest edited", _set("kernels.k1.fatbin.sha256", "0" * 64), False, "kernels.k1.fatbin: checksum mismatch"),
    ("semiring zero edited", _set("semirings.maxplus.zero", "+inf"), False, "semirings: checksum mismatch"),
    ("checksum table gone", _delete("kernels.k1.checksum"), False, "kernels.k1.checksum: missing"),
    ("one checksum gone", _delete("kernels.k1.checksum.launch"), False, "kernels.k1.checksum.launch: missing"),
    ("checksum not hex", _set("kernels.k1.checksum.launch", "zz"), False, "kernels.k1.launch checksum: 'zz' is not a sha256 digest"),
    ("top checksum gone", _delete("checksum"), False, "checksum: missing"),
    # types and ranges of what a launch uses
    ("kind unknown", _set("kernels.k1.params[0].kind", "float"), True, "kernels.k1.params[0].kind: 'float' is not one of ptr, f32, f64, i32, i64, u32, f16, bf16, u64"),
    ("pack disagrees", _set("kernels.k1.params[2].pack", "q"), True, "kernels.k1.params[2].pack: 'q' is not the pack code of kind 'i32' ('i')"),
    ("param twice", _set("kernels.k1.params[1].name", "A"), True, "kernels.k1.params[1].name: 'A' names two parameters"),
    ("params not a list", _set("kernels.k1.params", {}), True, "kernels.k1.params: is an object, not a list"),
    # a declared signature's binding fields and the resolved backward
    ("arg a keyword", _set("kernels.k1.signature[0].arg", "class"), True, "kernels.k1.signature[0].arg: 'class' is a name the bindings keep for themselves"),
    ("arg of a dimension", _set("kernels.k1.signature[2].arg", "m"), True, "kernels.k1.signature[2].arg: M is bound from the arrays, never passed"),
    ("fill on an in array", _set("kernels.k1.signature[0].array.fill", 0), True, "kernels.k1.signature[0].array.fill: on an in array"),
    ("fill a name", _set("kernels.k1.signature[1].array.fill", "zero"), True, "kernels.k1.signature[1].array.fill: 'zero' is not a value of a f32 array"),
    ("extent of a dimension", _set("kernels.k1.signature[2].extent", True), True, "kernels.k1.signature[2].extent: True for M; only true, for an integer scalar"),
    ("backward of the old form", _set("kernels.k1.backward", {"family": "gemm", "saves": []}), True, "kernels.k1.backward: unknown key 'family'"),
    ("backward to no kernel", _set("kernels.k1.backward", {"kernels": [{"kernel": "k9", "saves": []}]}), True, "kernels.k1.backward.kernels[0].kernel: 'k9' is not a kernel of this index"),
    ("backward routed to no gradient", _set("kernels.k1.backward", {"through": "k2"}), True, "kernels.k1.backward.through: k2 has no gradient kernels of its own to route to"),
    ("block zero", _set("kernels.k1.launch.block", [0, 16, 1]), True, "kernels.k1.launch.block[0]: 0 is outside 1..1024"),
    ("block too many threads", _set("kernels.k1.launch.block", [64, 64, 1]), True, "kernels.k1.launch.block: [64, 64, 1] is more than 1024 threads"),
    ("block two axes", _set("kernels.k1.launch.block", [16, 16]), True, "kernels.k1.launch.block: needs 3 axes"),
    ("block a string", _set("kernels.k1.launch.block", "16,16,1"), True, "kernels.k1.launch.block: is a string, not a list"),
    ("block a float", _set("kernels.k1.launch.block", [16.0, 16, 1]), True, "kernels.k1.launch.block[0]: is a number, not an integer"),
    ("extent a pointer", _set("kernels.k1.launch.grid[1].extent", "A"), True, "kernels.k1.launch.grid[1].extent: 'A' is neither a size parameter, a number, nor a product of them"),
    ("extent unknown", _set("kernels.k1.launch.grid[1].extent", "N"), True, "kernels.k1.launch.grid[1].extent: 'N' is neither"),
    ("tile zero", _set("kernels.k1.launch.grid[0].tile", 0), True, "kernels.k1.launch.grid[0].tile: 0 is outside 1..2147483647"),
    ("shared negative", _set("kernels.k1.launch.shared_bytes_dynamic", -5), True, "kernels.k1.launch.shared_bytes_dynamic: -5 is outside"),
    ("launch unknown key", _set("kernels.k1.launch.cluster", [2, 1, 1]), True, "kernels.k1.launch: unknown key 'cluster'"),
    ("launch missing", _delete("kernels.k1.launch"), True, "kernels.k1.launch: missing"),
    ("kernel unknown key", _set("kernels.k1.stream", 0), True, "kernels.k1: unknown key 'stream'"),
    ("kernel name a path", lambda d: d["kernels"].update({"../x": d["kernels"].pop("k2")}), True, "kernels: key '../x' is not a name"),
    ("symbol huge", _set("kernels.k1.symbol", "a" * 1_000_000), True, "kernels.k1.symbol: 'aaaa"),
    ("sass arch malformed", _set("kernels.k1.sass", ["8.0"]), True, "kernels.k1.sass[0]: '8.0' is not an arch"),
    ("sass a string", _set("kernels.k1.sass", "80"), True, "kernels.k1.sass: is a string, not a list"),
    ("ptx too long", _set("kernels.k1.ptx", ["80"] * 65), True, "kernels.k1.ptx: has 65 items, more than 64"),
    ("registers negative", _set("kernels.k1.resources.80.registers", -1), True, "kernels.k1.resources.80.registers: -1 is outside"),
    ("semiring counting a string", _set("semirings.maxplus.counting", "no"), True, "semirings.maxplus.counting: is a string, not a boolean"),
    # the top level
    ("schema 1", _set("schema", 1), True, f"index schema 1, this aotc reads schema {SCHEMA}; rebuild the library"),
    ("schema 2", _set("schema", 2), True, f"index schema 2, this aotc reads schema {SCHEMA}; rebuild the library"),
    ("schema missing", _delete("schema"), True, f"index schema None, this aotc reads schema {SCHEMA}"),
    ("schema true", _set("schema", True), True, "index schema True"),
    ("schema a float", _set("schema", 3.0), True, f"index schema 3.0, this aotc reads schema {SCHEMA}"),
    ("unknown top key", _set("extra", 1), True, "(top level): unknown key 'extra'"),
    ("library with a newline", _set("library", "a\nb"), True, "library: 'a\\nb' is not a library name"),
    ("kernels a list", _set("kernels", []), False, "kernels: is a list, not an object"),
    ("toolkit min_driver a string", _set("toolkit.min_driver", "13000"), True, "toolkit.min_driver '13000' is not a cuDriverGetVersion number"),
    ("toolkit unknown key", _set("toolkit.path", "/usr"), True, "toolkit: unknown key 'path'"),
    ("no toolkit version at all", _delete("toolkit"), True, "toolkit: no toolkit version like '13.0.88'"),
]


@pytest.mark.parametrize(("change", "reseal", "fragment"), [c[1:] for c in DOCUMENT_FAULTS], ids=[c[0] for c in DOCUMENT_FAULTS])
def test_a_faulty_document_is_refused_in_one_line_naming_the_field(change: Change, reseal: bool, fragment: str) -> None:
    doc = valid_document()
    change(doc)
    if reseal:
        seal(doc)
    with pytest.raises(IndexFormatError) as info:
        load(doc)
    assert str(info.value).startswith(f"{WHERE}: ")
    assert fragment in str(info.value), str(info.value)
    assert_one_line(info.value)


def test_the_valid_document_loads_with_its_values() -> None:
    index = load(valid_document())
    kernel = index.kernel("k1")
    assert (kernel.launch.block, kernel.launch.grid[0], kernel.pack_format) == ((16, 16, 1), ("M", 128), "@QQiq")
    assert index.kernel("k2").axes["pass"] == "argmax"
    assert index.ptx_toolkit == (13, 0)


@pytest.mark.parametrize(
    ("change", "check"),
    [
        (_delete("kernels.k1.resources"), lambda index: dict(index.kernel("k1").resources) == {}),
        (_set("kernels.k1.resources.80.registers", 255), lambda index: index.kernel("k1").resources["80"]["registers"] == 255),
        (_set("aotc_version", "9.9.9"), lambda index: index["aotc_version"] == "9.9.9"),
        (lambda d: (d.pop("toolkit"), d.update(nvcc_version="12.8.93")), lambda index: (index.toolkit, index.ptx_toolkit) == (None, (12, 8))),
    ],
    ids=["no resources", "resources are not sealed", "aotc_version is not sealed", "an index without a toolkit table"],
)
def test_unsealed_and_optional_fields_load(change: Change, check: Callable[[LibraryIndex], bool]) -> None:
    doc = valid_document()
    change(doc)
    assert check(load(doc))


# -- bytes that are not the JSON of an index ----------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested 100000 deep; an index nests at most 16"),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, "nested 5000 deep"),
        (b"", "not a valid index (Expecting value"),
        (b'{"schema": 2', "not a valid index (Expecting ',' delimiter"),
        (b"\xff\xfe{}", "not a valid index (not UTF-8 at byte 0)"),
        (b'{"schema": NaN}', "not a valid index (NaN is not JSON)"),
        (b'{"schema": 2, "schema": 2}', "not a valid index (key 'schema' appears twice in one object)"),
        (b'{"schema": ' + b"9" * 5000 + b"}", "not a valid index (Exceeds the limit"),
        (b"[]", "not an aotc index (the top level is a list, not an object)"),
        (b'["' + b'\\"' * 100_000 + b"]", "not a valid index (Unterminated string"),
        (b" " * (MAX_INDEX_BYTES + 1), f"more than the {MAX_INDEX_BYTES} an index may have"),
    ],
    ids=[
        "deep arrays", "deep objects", "empty", "truncated", "not utf-8", "NaN", "duplicate key", "huge integer", "a list",
        "escaped quotes never closed", "too big",
    ],  # fmt: skip
)
def test_bytes_that_are_not_an_index_are_refused_in_one_line(data: bytes, fragment: str) -> None:
    with pytest.raises(IndexFormatError) as info:
        LibraryIndex(data, WHERE)
    assert str(info.value).startswith(f"{WHERE}: ") and fragment in str(info.value), str(info.value)
    assert_one_line(info.value)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    doc = valid_document()
    doc["aotc_version"] = "0.1.0"
    data = json.dumps(doc).replace('"0.1.0"', '"0.1.0", "x": "' + "[" * 100 + '"').encode()
    with pytest.raises(IndexFormatError, match=r"\(top level\): unknown key 'x'$"):  # parsed, then refused by key
        LibraryIndex(data, WHERE)


# -- the library folder -------------------------------------------------------------------------------


def write_library(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    for name in ("k1", "k2"):
        (root / f"{name}.fatbin").write_bytes(FATBIN)
        (root / "src" / f"{name}.cu").write_bytes(SOURCE)
    (root / "index.json").write_bytes(dumps(valid_document()))
    return root


def test_a_library_folder_reads_verified_files(tmp_path: Path) -> None:
    index = LibraryIndex.open(write_library(tmp_path / "lib"))
    assert (index.read_verified("k1", "fatbin"), index.read_verified("k2", "source")) == (FATBIN, SOURCE)


def _replace(path: Path, how: Callable[[Path], Any]) -> None:
    path.unlink()
    how(path)


FILE_FAULTS = [
    ("index.json a symlink", "index.json", lambda p: p.symlink_to(p.parent / "k1.fatbin"), IndexFormatError, "index.json: is a symbolic link, not a regular file"),
    ("index.json a FIFO", "index.json", lambda p: os.mkfifo(p), IndexFormatError, "index.json: is a FIFO, not a regular file"),
    ("index.json a folder", "index.json", lambda p: p.mkdir(), IndexFormatError, "index.json: is a directory, not a regular file"),
    ("index.json too big", "index.json", lambda p: os.truncate(os.open(p, os.O_CREAT | os.O_WRONLY), MAX_INDEX_BYTES + 1), IndexFormatError, "index.json: 8388609 bytes, over the limit of 8388608"),
    ("index.json missing", "index.json", lambda p: None, LibraryNotFoundError, "index.json: no such file"),
]
KERNEL_FILE_FAULTS = [
    ("fatbin a symlink to /dev/zero", "k1.fatbin", lambda p: p.symlink_to("/dev/zero"), "k1.fatbin: is a symbolic link, not a regular file"),
    ("fatbin a FIFO", "k1.fatbin", lambda p: os.mkfifo(p), "k1.fatbin: is a FIFO, not a regular file"),
    ("fatbin a folder", "k1.fatbin", lambda p: p.mkdir(), "k1.fatbin: is a directory, not a regular file"),
    ("fatbin missing", "k1.fatbin", lambda p: None, "k1.fatbin: missing; the library is damaged (reinstall it)"),
    ("fatbin flipped", "k1.fatbin", lambda p: p.write_bytes(FATBIN.upper()), "k1.fatbin: sha256 "),
    ("fatbin grown", "k1.fatbin", lambda p: p.write_bytes(FATBIN + b"!"), f"k1.fatbin: size {len(FATBIN) + 1} bytes, index.json says {len(FATBIN)}"),
    ("src a symlink out", "src", lambda p: p.symlink_to(p.parent.parent / "outside", target_is_directory=True), "src: not a folder (a symlink?)"),
]


@pytest.mark.parametrize(("name", "how", "error", "fragment"), [c[1:] for c in FILE_FAULTS], ids=[c[0] for c in FILE_FAULTS])
def test_a_faulty_index_file_is_refused_in_one_line(tmp_path: Path, name: str, how: Any, error: type, fragment: str) -> None:
    library = write_library(tmp_path / "lib")
    _replace(library / name, how)
    with pytest.raises(error) as info:
        LibraryIndex.open(library)
    assert str(info.value).startswith(str(library)) and fragment in str(info.value), str(info.value)
    assert_one_line(info.value)


@pytest.mark.parametrize(("name", "how", "fragment"), [c[1:] for c in KERNEL_FILE_FAULTS], ids=[c[0] for c in KERNEL_FILE_FAULTS])
def test_a_faulty_kernel_file_is_refused_in_one_line(tmp_path: Path, name: str, how: Any, fragment: str) -> None:
    library = write_library(tmp_path / "lib")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "k1.cu").write_bytes(SOURCE)  # what a symlinked src/ would serve
    target = library / name
    if target.is_dir():
        for child in target.iterdir():
            child.unlink()
        target.rmdir()
        how(target)
    else:
        _replace(target, how)
    index = LibraryIndex.open(library)
    part = "source" if name == "src" else "fatbin"
    with pytest.raises(DamagedLibraryError) as info:
        index.read_verified("k1", part)
    assert str(info.value).startswith(str(library)) and fragment in str(info.value), str(info.value)
    assert_one_line(info.value)
    assert index.read_verified("k2", "fatbin") == FATBIN  # the other kernel is unharmed


# -- the fuzzer ---------------------------------------------------------------------------------------

# Any code point but lone surrogates (JSON text cannot hold them). Named without
# a codec: hypothesis 6.170's utf-8 codec check warns about characters that do
# round-trip, and the suite runs with warnings as errors.
_TEXT = st.characters(exclude_categories=("Cs",))
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(_TEXT, max_size=40),
    st.just("x" * 100_000),
    st.just("../" * 20 + "etc/passwd"),
    st.just("a\nb\x00c\x1b[2J"),
)
_VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(_TEXT, max_size=8), inner, max_size=4), max_leaves=12)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in the document, the root excluded."""
    found = []
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key)))
    return found


_PATHS = _paths(valid_document())


def _mutate(doc: dict[str, Any], path: tuple[Any, ...], how: str, value: Any, depth: int) -> None:
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if how == "replace":
        parent[key] = value
    elif how == "delete":
        del parent[key]
    elif how == "nest":
        for _ in range(depth):
            parent[key] = [parent[key]]
    elif how == "add key" and isinstance(parent, dict):
        parent[f"{key}_extra"] = value
    elif how == "huge":
        # Past the reader's caps, but a few MB of JSON at most: repeating a value
        # that is already large (a kernel entry, an earlier huge value) would build gigabytes.
        if isinstance(parent[key], str):
            parent[key] = "\u00e9" * 300_000
        else:
            small = len(json.dumps(parent[key])) <= 256
            parent[key] = [parent[key] if small else 0] * 2_000


def test_fuzz_index_loader(record_fuzz: Callable[[str, str], None]) -> None:
    examples = 0

    @settings(derandomize=True, max_examples=300, deadline=None, database=None)
    @given(
        mutations=st.lists(
            st.tuples(
                st.sampled_from(_PATHS),
                st.sampled_from(["replace", "delete", "nest", "add key", "huge"]),
                _VALUES,
                st.integers(min_value=1, max_value=40),
            ),
            min_size=1,
            max_size=3,
        ),
        reseal=st.booleans(),
    )
    def run(mutations: list[tuple[tuple[Any, ...], str, Any, int]], reseal: bool) -> None:
        nonlocal examples
        examples += 1
        doc = valid_document()
        for path, how, value, depth in mutations:
            try:
                _mutate(doc, path, how, copy.deepcopy(value), depth)
            except (KeyError, IndexError, TypeError):
                pass  # an earlier mutation removed or retyped the path
        if reseal:
            try:
                seal(doc)
            except (AttributeError, TypeError, ValueError):
                pass  # the writer only seals documents of the right shape
        try:
            index = LibraryIndex(json.dumps(doc).encode(), WHERE)
        except AotcError as error:
            assert_one_line(error)
        else:
            assert set(index.kernels) <= {"k1", "k2"}
            for kernel in index.kernels.values():
                assert len(kernel.launch.block) == 3 and all(p.pack for p in kernel.params)

    run()
    record_fuzz("index", f"{examples} examples")
    assert examples == 300
