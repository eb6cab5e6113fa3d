"""Declared families in the manifest: free axes, signatures, launch expressions,
and the one-line errors for each way to get them wrong."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aotc.build.codegen import render_kernel
from aotc.build.manifest import DeclaredKernelSpec, load_manifest
from declared_support import AXPY, ROWOPS, refused, write_project


def axpy(tmp_path: Path, old: str = "", new: str = "") -> Path:
    files = dict(AXPY)
    if old:
        assert old in files["manifest.yaml"], old
        files["manifest.yaml"] = files["manifest.yaml"].replace(old, new)
    return write_project(tmp_path, files)


def test_rowops_expands_its_own_axes() -> None:
    manifest = load_manifest(ROWOPS / "manifest.yaml")
    assert [k.name for k in manifest.kernels] == [
        "softmax_f32", "softmax_f64", "softmax_backward_f32", "softmax_backward_f64", "scan_f32", "scan_f64", "scan_i32", "scan_i64",
        "histogram_f32", "histogram_f64", "scale_shift_f32", "scale_shift_f64", "scale_shift_grad_x_f32", "scale_shift_grad_x_f64",
        "scale_shift_grad_params_f32", "scale_shift_grad_params_f64",
    ]  # fmt: skip
    softmax = manifest.kernels[0]
    assert isinstance(softmax, DeclaredKernelSpec)
    assert softmax.axes == (("dtype", "f32"), ("threads", 256))
    assert [(p.name, p.ctype, p.kind) for p in softmax.params] == [
        ("x", "const float*", "ptr"), ("y", "float*", "ptr"), ("batch", "int", "i32"), ("rows", "int", "i32"), ("cols", "int", "i32"),
    ]  # fmt: skip
    assert softmax.signature.params[0].optional == ("batch",)
    assert softmax.launch.block == (256, 1, 1)
    assert softmax.launch.grid == (("batch*rows", 1), ("1", 1), ("1", 1))
    assert manifest.semirings == ()


def test_launch_expressions_reduce_to_a_product_and_a_tile(tmp_path: Path) -> None:
    manifest = load_manifest(axpy(tmp_path))
    by_name = {k.name: k for k in manifest.kernels}
    assert list(by_name) == ["axpy_f32_64", "axpy_f32_128", "axpy_f64_64", "axpy_f64_128"]
    assert by_name["axpy_f32_128"].launch.grid[0] == ("rows*n", 128)
    assert [p.kind for p in by_name["axpy_f64_64"].params] == ["ptr", "ptr", "i32", "i32", "f64"]
    source = render_kernel(manifest, by_name["axpy_f32_64"])
    assert "axpy_f32_64(const float* __restrict__ x, float* __restrict__ y, int rows, int n, double alpha)" in source
    assert "y[i] += (float)alpha * x[i]" in source
    assert "parameter alpha (5 of 5) must be double" in source  # the compiled check (test_signature_check)


@pytest.mark.parametrize(
    ("expression", "grid"),
    [
        ("rows", ("rows", 1)),
        ("4 * rows * n", ("4*rows*n", 1)),
        ("cdiv(n, 32)", ("n", 32)),
        ("cdiv(2 * n, threads)", ("2*n", 64)),
        ("cdiv(n * 64, threads)", ("n", 1)),
        ("cdiv(1000, 3) + 1", ("335", 1)),
        ("sizeof(dtype) * 2", ("8", 1)),
    ],
)
def test_grid_expressions(tmp_path: Path, expression: str, grid: tuple[str, int]) -> None:
    path = axpy(tmp_path, '["cdiv(rows * n, threads)"]', f'["{expression}"]')
    assert load_manifest(path).kernels[0].launch.grid[0] == grid


XIN = "{array: dtype, role: in, shape: [rows, n]}"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('["cdiv(rows * n, threads)"]', '["rows + n"]', "launch.grid[0]: sizes combine only by * and cdiv"),
        ('["cdiv(rows * n, threads)"]', '["cdiv(rows, n)"]', "cdiv(a, b) divides a product by a constant"),
        ('["cdiv(rows * n, threads)"]', '["cols"]', "'cols' is not an integer scalar of the signature or an integer axis"),
        ('["cdiv(rows * n, threads)"]', '["rows ** 2"]', "is not allowed"),
        ('["cdiv(rows * n, threads)"]', '["rows("]', "is not an expression"),
        ('["cdiv(rows * n, threads)"]', "[cdiv(rows * n, threads)]", "grid[0]: 'cdiv(rows * n' is not an expression; a YAML [...] list splits at commas: quote"),
        ("block: [threads]", "block: [rows]", "launch.block[0]: 'rows' is not an integer axis or constant (sizes are known only at a call)"),
        ("block: [threads]", "block: [2048]", "launch.block: [2048, 1, 1] at dtype=f32, threads=64 is not a block CUDA launches"),
        ("block: [threads]", "block: [threads]\n      shared: 65536", "launch.shared: 65536 bytes"),
        ("alpha: f64", "alpha: f8", "signature.alpha: unknown scalar type 'f8' (known: f32, f64, i32, i64, u32, f16, bf16, u64, or an axis or constant naming one)"),
        ("role: inout", "role: both", "signature.y.role: expected one of in, out, inout, got str 'both'"),
        ("{array: dtype, role: in, shape: [rows, n]}", "{array: dtype, role: in, shape: [rows, m]}", "signature.x.shape: 'm' is neither"),
        ("{array: dtype, role: in, shape: [rows, n]}", "{array: f8, role: in, shape: [rows, n]}", "signature.x.array: expected a dtype"),
        ("{array: dtype, role: inout, shape: [rows, n]}", "{array: dtype, role: out, shape: [k, rows, n], optional: [k]}\n      k: i32", "signature.y.optional: k is named by no in or inout array, so the caller passes it"),
        ('name: "axpy_{dtype}_{threads}"', 'name: "axpy_{dtype}_{block}"', "names {block}, which is not an axis"),
        ('name: "axpy_{dtype}_{threads}"', 'name: "axpy_{dtype}"', "name: kernel axpy_f32 is produced at threads=64 and at threads=128: the name must tell the points apart (add {threads})"),
        ("threads: [64, 128]", "threads: [64, 64]", "axes.threads: value 64 is listed twice"),
        ("    launch:\n", "    matrix: {dtype: [f16]}\n    launch:\n", "matrix.dtype: 'f16' is not a value of this axis (declared: f32, f64)"),
        ("      rows: i32\n", "      rows: i32\n      dtype: i32\n", "signature.dtype: dtype is also an axis"),
        (XIN, "{array: dtype, role: in, shape: [rows, n], optional: [n]}", "signature.x.optional: 'n' must be the shape's leading dimensions"),
        (XIN, "{array: dtype, role: in, shape: [rows, n], optional: [rows, n]}", "before at least one other (shape: ['rows', 'n']"),
        (XIN, "{array: dtype, role: in, shape: [4, rows, n], optional: [4]}", "signature.x.optional: expected dimension names, got int 4"),
        (XIN, "{array: dtype, role: in, shape: [threads, rows, n], optional: [threads]}", "signature.x.optional: threads is an axis, fixed per kernel"),
        (XIN, "{array: dtype, role: in, shape: [rows, n], optional: []}", "signature.x.optional: must not be empty"),
        (XIN, "{array: dtype, role: in, shape: [rows, n], leading: [rows]}", "signature.x.leading: unknown key (known: array, role, shape, optional, strides, when, lanes, pack, arg, fill)"),
        (XIN, "{array: dtype, role: in, shape: rows, n}", "signature.x.n: unknown key (known: array, role, shape, optional, strides, when, lanes, pack, arg, fill); it has no value: inside { }, a list needs its brackets ([a, b])"),
    ],
)
def test_each_mistake_is_one_line_naming_the_key(tmp_path: Path, old: str, new: str, expected: str) -> None:
    message = refused(axpy(tmp_path, old, new))
    assert str(tmp_path / "manifest.yaml") in message
    assert "families.axpy" in message
    assert expected in message


def test_optional_leading_dimensions_reach_the_index(tmp_path: Path) -> None:
    path = axpy(tmp_path, XIN, "{array: dtype, role: in, shape: [rows, n], optional: rows}")
    x = load_manifest(path).kernels[0].signature.params[0]
    assert x.optional == ("rows",)
    assert x.to_json() == {"name": "x", "array": {"dtype": "f32", "role": "in", "shape": ["rows", "n"], "optional": ["rows"]}}
    assert "optional" not in load_manifest(axpy(tmp_path / "plain")).kernels[0].signature.params[0].to_json()["array"]


def test_matrix_blocks_excludes_and_launch_overrides(tmp_path: Path) -> None:
    path = axpy(
        tmp_path,
        "    launch:\n",
        "    matrix:\n      - {dtype: f32}\n      - {dtype: f64, threads: 128, launch: {block: [128], shared: 256}}\n"
        "    exclude: [{dtype: f32, threads: 128}]\n    launch:\n",
    )
    kernels = load_manifest(path).kernels
    assert [k.name for k in kernels] == ["axpy_f32_64", "axpy_f64_128"]
    assert kernels[1].launch.shared_bytes_dynamic == 256


def test_a_family_in_the_retired_gemm_form_is_refused(tmp_path: Path) -> None:
    text = AXPY["manifest.yaml"] + "  gemm:\n    template: axpy.cu.j2\n    matrix: {semiring: [maxplus], dtype: [f32], pass: [forward]}\n"
    message = refused(write_project(tmp_path, {**AXPY, "manifest.yaml": text}))
    assert "families.gemm: the GEMM form (a matrix of semirings, dtypes, passes and variants with tiles) is retired; declare axes" in message


ROWOPS_TEXT = (ROWOPS / "manifest.yaml").read_text()
PAIRING = "    backward: {family: softmax_backward, saves: [y]}\n"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (PAIRING, "    backward: {family: gemm}\n", "softmax.backward.family: 'gemm' is not a declared family of this manifest (declared: softmax, softmax_backward, scan, histogram, scale_shift, scale_shift_grad_x, scale_shift_grad_params)"),
        (PAIRING, "    backward: {family: softmax_backward, saves: [z]}\n", "softmax.backward.saves: 'z' is not an array of softmax_f32 (arrays: x, y)"),
        (PAIRING, "    backward: {family: softmax_backward}\n", "softmax.backward: at softmax_f32, softmax_backward_f32's parameter y is neither the gradient of a result (grad_y) nor a saved array (saves: none)"),
        ("      grad_x: {array: dtype, role: out", "      grad_z: {array: dtype, role: out", "softmax_backward_f32's parameter grad_z is an out array, so it must be the gradient of an in array (grad_x)"),
        (PAIRING, "    backward: {family: scan}\n", "at softmax_f32, scan_f32's parameter x is neither the gradient of a result (grad_y) nor a saved array"),
        (PAIRING, "    backward: [softmax_backward]\n", "softmax.backward[0]: expected a mapping, got str 'softmax_backward'"),
        (PAIRING, "    backward: {saves: [y]}\n", "softmax.backward: at softmax_f32, names the kernel itself (its own axes)"),
        (PAIRING, "    backward: {family: softmax_backward, axes: {dtype: f16}}\n", "softmax.backward: at softmax_f32, names no kernel of softmax_backward (dtype=f16)"),
        (PAIRING, "    backward: {family: softmax_backward, axes: {size: 4}}\n", "softmax.backward.axes.size: softmax_backward has no axis size (axes: dtype, threads)"),
        (PAIRING, "    backward: {family: softmax_backward, saves: [y], through: {dtype: f64}}\n", "softmax.backward.family: a route (through:) takes only when"),
    ],
)
def test_a_backward_pairing_is_held_to_the_convention(tmp_path: Path, old: str, new: str, expected: str) -> None:
    shutil.copytree(ROWOPS / "templates", tmp_path / "templates")
    assert old in ROWOPS_TEXT
    message = refused(write_project(tmp_path, {"manifest.yaml": ROWOPS_TEXT.replace(old, new, 1)}))
    assert f"families.{expected}" in message or expected in message, message


def test_a_matrix_blocks_launch_override_is_named_by_its_own_key(tmp_path: Path) -> None:
    path = axpy(tmp_path, "    launch:\n", "    matrix:\n      - {dtype: f64, launch: {block: [2048]}}\n    launch:\n")
    assert "families.axpy.matrix[0].launch.block: [2048, 1, 1] at dtype=f64, threads=64 is not a block" in refused(path)
