"""What a declared parameter says about its binding (aotc.build._binding_fields):
argument names, out arrays filled before the launch, extents the caller
passes, scalars typed by a dtype axis; from the manifest to the index's views,
and each misuse refused by `aotc list` in one line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from aotc.build.manifest import load_manifest
from aotc.index import LibraryIndex
from declared_support import declared_library, refused, write_project

# Per row: the first k values of x (k given by the caller, at most n), a count per bin, and a scale c0 of x's dtype.
PICK = {
    "manifest.yaml": """\
library: picks
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  pick:
    template: pick.cu.j2
    axes: {dtype: [f32, i32]}
    name: "pick_{dtype}"
    constants:
      - {low: -inf}
      - {when: {dtype: i32}, low: -2147483648}
    signature:
      x: {array: dtype, role: in, shape: [rows, n], arg: values}
      y: {array: dtype, role: out, shape: [rows, k], fill: low}
      counts: {array: i32, role: out, shape: [bins], fill: 0, arg: histogram}
      rows: i32
      n: i32
      k: {scalar: i32, max: n}
      bins: i64
      c0: dtype
    launch:
      grid: [rows, k]
      block: [32]
""",
    "templates/pick.cu.j2": 'extern "C" __global__ void {{ kernel_name }}({{ params }}) {}\n',
}
TEXT = PICK["manifest.yaml"]


def pick(tmp_path: Path, old: str | tuple[str, ...] = "", new: str | tuple[str, ...] = "") -> Path:
    """PICK with ``old`` replaced by ``new`` (or each of several pairs)."""
    text = TEXT
    for before, after in zip(*((old, new) if isinstance(old, tuple) else ((old,), (new,)))):
        assert before in text, before
        text = text.replace(before, after, 1)
    return write_project(tmp_path, {**PICK, "manifest.yaml": text})


def test_each_new_key_reaches_the_kernel_spec(tmp_path: Path) -> None:
    f32, i32 = load_manifest(pick(tmp_path)).kernels
    x, y, counts, rows, _, k, bins, c0 = f32.signature.params
    assert (x.arg, y.arg, counts.arg, k.arg) == ("values", "", "histogram", "")
    assert (y.fill, counts.fill, x.fill) == (float("-inf"), 0, None)
    assert (i32.signature.params[1].fill, type(counts.fill)) == (-(2**31), int)  # the constant, per point
    assert (k.dim, k.extent, k.max, bins.extent, bins.max, rows.dim, rows.extent) == (False, True, "n", True, None, True, False)
    assert (c0.type, i32.signature.params[7].type) == ("f32", "i32")
    assert f32.launch.grid[1] == ("k", 1)  # a grid over the caller's extent
    assert [p.kind for p in f32.params][-2:] == ["i64", "f32"]


def test_each_new_key_reads_back_from_the_index(tmp_path: Path) -> None:
    lib = declared_library(tmp_path, pick(tmp_path / "project"))
    x, y, counts, rows, _, k, bins, c0 = LibraryIndex.open(lib).kernel("pick_f32").signature
    assert (x.arg, y.arg, counts.arg, rows.arg, k.arg) == ("values", "y", "histogram", "rows", "k")
    assert (y.fill, counts.fill, x.fill) == (float("-inf"), 0, None)
    assert (k.scalar, k.dim, k.extent, k.max) == (True, False, True, "n")
    assert (bins.extent, bins.max, rows.extent, c0.dtype, c0.extent) == (True, None, False, "f32", False)
    entry = (lib / "index.json").read_text()
    assert '{"name": "k", "scalar": "i32", "dim": false, "extent": true, "max": "n"}' in entry
    assert '{"name": "x", "arg": "values", "array": {"dtype": "f32", "role": "in", "shape": ["rows", "n"]}}' in entry
    assert '"fill": "-inf"' in entry


def test_a_numeric_max_bounds_an_extent(tmp_path: Path) -> None:
    k = load_manifest(pick(tmp_path, "k: {scalar: i32, max: n}", "k: {scalar: i32, max: 16}")).kernels[0].signature.params[5]
    assert (k.extent, k.max) == (True, 16)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # arg:
        ("arg: values}", "arg: lambda}", "signature.x.arg: 'lambda' is a Python keyword or a name the bindings keep"),
        ("arg: values}", "arg: stream}", "signature.x.arg: 'stream' is a Python keyword or a name the bindings keep"),
        ("arg: values}", "arg: _aotc_values}", "signature.x.arg: '_aotc_values' is a Python keyword or a name the bindings keep"),
        ("arg: values}", "arg: 2x}", "signature.x.arg: '2x' is not a C identifier"),
        ("arg: values}", "arg: y}", "signature.y: at dtype=f32, y is also x's name in the bindings"),
        ("arg: values}", "arg: dtype}", "signature.x.arg: at dtype=f32, dtype is also an axis, which the bindings take by keyword"),
        ("      rows: i32\n", "      rows: {scalar: i32, arg: r}\n", "signature.rows.arg: at dtype=f32, rows is bound from the arrays, never passed: it takes no arg"),
        # a scalar typed by an axis or constant
        (("axes: {dtype: [f32, i32]}", "c0: dtype"), ("axes: {dtype: [f32, i32], kind: [f64, bool]}", "c0: kind"), "signature.c0: at dtype=f32, kind=bool, kind is 'bool', which is not a scalar type (f32, f64, i32, i64, u32, f16, bf16, u64)"),
        ("      c0: dtype\n", "      c0: low\n", "signature.c0: at dtype=f32, low is '-inf', which is not a scalar type"),
        ("      c0: dtype\n", "      c0: {scalar: kind}\n", "signature.c0: unknown scalar type 'kind' (known: f32, f64, i32, i64, u32, f16, bf16, u64, or an axis or constant naming one)"),
        # fill:
        ("shape: [rows, n], arg: values}", "shape: [rows, n], arg: values, fill: 0}", "signature.x.fill: only an out array is filled before the launch; this one is 'in'"),
        ("fill: low}", "fill: inf}", "signature.y.fill: expected a number, -inf, +inf, true or false, or a constant naming one (low), got str 'inf'"),
        ("fill: low}", "fill: [0]}", "signature.y.fill: expected a number, -inf, +inf, true or false, or a constant naming one (low), got a list"),
        ("fill: low}", "fill: 1.5}", "signature.y.fill: at dtype=i32, 1.5, which a i32 array cannot hold"),
        ("fill: low}", "fill: true}", "signature.y.fill: at dtype=f32, True, which a f32 array cannot hold"),
        ("fill: 0, arg: histogram}", "fill: 2147483648, arg: histogram}", "signature.counts.fill: at dtype=f32, 2147483648, which a i32 array cannot hold"),
        ("fill: 0, arg: histogram}", "fill: true, arg: histogram}", "signature.counts.fill: at dtype=f32, True, which a i32 array cannot hold"),
        ("      - {when: {dtype: i32}, low: -2147483648}", "      - {when: {dtype: i32}, low: -2147483649}", "signature.y.fill: at dtype=i32, low is -2147483649, which a i32 array cannot hold"),
        # extents and max:
        ("k: {scalar: i32, max: n}", "k: {scalar: i32, max: bins}", "signature.k.max: at dtype=f32, bins is not a dimension the in or inout arrays bind"),
        ("k: {scalar: i32, max: n}", "k: {scalar: i32, max: 0}", "signature.k.max: 0 is not a positive 64-bit integer"),
        ("k: {scalar: i32, max: n}", "k: {scalar: i32, max: [n]}", "signature.k.max: ['n'] is not a C identifier"),
        ("      rows: i32\n", "      rows: {scalar: i32, max: 4}\n", "signature.rows.max: at dtype=f32, rows is bound from the arrays, never passed"),
        ("      c0: dtype\n", "      c0: {scalar: f32, max: n}\n", "signature.c0.max: at dtype=f32, c0 is f32; a tied scalar is i32 or i64"),
        ("shape: [rows, k], fill: low}", "shape: [k, rows], optional: [k], fill: low}", "signature.y.optional: k is named by no in or inout array, so the caller passes it"),
        ("      k: {scalar: i32, max: n}\n", "      k: {array: i32, role: in, shape: [k]}\n", "signature.y.shape: 'k' is neither an integer scalar"),
        # what the bindings cannot bind
        ("{array: dtype, role: in, shape: [rows, n], arg: values}", "{array: u32, role: in, shape: [rows, 4], pack: 32}", "signature.x.pack: the packed (last) dimension 4 is not a size scalar of the signature"),
        ("{array: dtype, role: in, shape: [rows, n], arg: values}", "{array: dtype, role: in, shape: [rows, n], pack: 32}", "signature.x.pack: at dtype=f32, 32 bits do not pack into a f32 word (an unsigned integer type of at least 32 bits)"),
        ("{array: dtype, role: in, shape: [rows, n], arg: values}", "{array: u32, role: in, shape: [rows, n], pack: 64}", "signature.x.pack: at dtype=f32, 64 bits do not pack into a u32 word"),
        ("{array: dtype, role: in, shape: [rows, n], arg: values}", "{array: u32, role: in, shape: [rows, n], pack: 32}", ""),
    ],
)
def test_each_misuse_is_one_line_naming_the_key(tmp_path: Path, old: str | tuple[str, ...], new: str | tuple[str, ...], expected: str) -> None:
    if not expected:  # packed along a dimension the caller gives: accepted
        assert load_manifest(pick(tmp_path, old, new)).kernels[0].signature.params[0].pack == 32
        return
    message = refused(pick(tmp_path, old, new))
    assert message.startswith(f"{tmp_path / 'manifest.yaml'}:")
    assert f"families.pick.{expected}" in message, message


def test_a_constant_may_hold_a_fill(tmp_path: Path) -> None:
    path = pick(tmp_path, "      - {low: -inf}\n", "      - {low: +inf, flag: true, neg: -1}\n")
    f32, i32 = load_manifest(path).kernels
    assert (f32.signature.params[1].fill, i32.signature.params[1].fill) == (float("inf"), -(2**31))
    assert dict(f32.constants)["flag"] is True and dict(f32.constants)["neg"] == -1


def test_a_bool_constant_is_no_launch_number(tmp_path: Path) -> None:
    path = pick(tmp_path, "      - {low: -inf}\n", "      - {low: -inf, width: true}\n").parent
    (path / "manifest.yaml").write_text((path / "manifest.yaml").read_text().replace("block: [32]", "block: [width]"))
    assert "launch.block[0]: width is True here, not a number" in refused(path / "manifest.yaml")


def test_an_infinite_fill_is_an_integer_types_end(tmp_path: Path) -> None:
    """``fill: -inf`` / ``+inf`` on an integer array is its type's lowest / highest
    value, as the vocabulary says (and as a semiring's zero and one read them):
    no per-dtype constant is needed, and a bool array still refuses it."""
    import numpy as np

    import aotc
    import aotc.kernels

    path = pick(tmp_path / "project", ("fill: low}", "fill: 0, arg: histogram}"), ("fill: -inf}", "fill: +inf, arg: histogram}"))
    f32, i32 = load_manifest(path).kernels
    assert (f32.signature.params[1].fill, i32.signature.params[1].fill) == (float("-inf"), -(2**31))
    assert f32.signature.params[2].fill == i32.signature.params[2].fill == 2**31 - 1
    ops = aotc.kernels.over(aotc.load(declared_library(tmp_path, path), backend="emulator"))
    y, counts = ops.pick(np.zeros((2, 5), np.int32), 3, 4, 0, dtype="i32")  # the kernel writes nothing: the fills show
    assert y.tolist() == [[-(2**31)] * 3] * 2 and counts.tolist() == [2**31 - 1] * 4
    message = refused(pick(tmp_path / "bool", "counts: {array: i32, role: out, shape: [bins], fill: 0,", "counts: {array: bool, role: out, shape: [bins], fill: -inf,"))
    assert "families.pick.signature.counts.fill: at dtype=f32, '-inf', which a bool array cannot hold" in message, message


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_a_negative_zero_fill_keeps_its_sign(tmp_path: Path, framework: str) -> None:
    """``fill: -0.0`` equals 0 but is not the all-zero bits a library's ``zeros``
    writes: the allocation keeps the sign bit, on the first call and the plan's."""
    import numpy as np

    import aotc
    import aotc.kernels

    path = pick(tmp_path, ("dtype: [f32, i32]", "      - {when: {dtype: i32}, low: -2147483648}\n", "fill: low}"), ("dtype: [f32]", "", "fill: -0.0}"))
    ops = aotc.kernels.over(aotc.load(declared_library(tmp_path, path), backend="emulator"))
    values = np.zeros((2, 5), np.float32)
    if framework == "torch":
        torch = pytest.importorskip("torch")
        values = torch.from_numpy(values)
    for _ in range(3):  # the full path, then the plan it left
        y, _ = ops.pick(values, 3, 4, 0.0)
        y = np.asarray(y)
        assert y.tolist() == [[0.0] * 3] * 2 and np.signbit(y).all(), y
