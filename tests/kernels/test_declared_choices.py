"""What a declared family chooses per point: constants, signature and launch
alternatives, a parameter's ``when``, and the layouts of lanes and packed bits.

The proof that the model is enough is aotc's own tropical GEMM library: its
manifest (``kernels/manifest.yaml``) is one declared family.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aotc.build.codegen import render_kernel
from aotc.build.manifest import DeclaredKernelSpec, load_manifest
from declared_support import REPO, refused, write_project

def test_tropical_is_one_declared_family() -> None:
    declared = load_manifest(REPO / "kernels" / "manifest.yaml")
    assert all(isinstance(k, DeclaredKernelSpec) and k.family == "gemm" for k in declared.kernels)
    assert len(declared.kernels) == 86
    assert [s.name for s in declared.semirings] == ["maxplus", "minplus", "maxmul", "andor", "counting"]


def test_tropical_points_take_their_alternative_and_constants() -> None:
    kernels = {k.name: k for k in load_manifest(REPO / "kernels" / "manifest.yaml").kernels}
    single, batched = kernels["gemm_maxplus_f64_argmax"], kernels["gemm_maxplus_f64_argmax_batched"]
    assert dict(single.constants)["block_m"] == 64 and dict(single.constants)["suffix"] == ""
    a = single.signature.params[0]
    assert (a.name, a.shape, a.optional, a.strides) == ("A", ("M", "K"), (), ("lda", 1))  # batch dropped: no batch parameter
    a = batched.signature.params[0]
    assert (a.shape, a.optional, a.strides) == (("batch", "M", "K"), ("batch",), ("batch_stride_A", "lda", 1))
    assert [p.name for p in kernels["gemm_maxplus_f32_backward_b"].signature.params][:4] == ["grad_C", "Kstar", "A", "grad_B"]
    assert kernels["gemm_counting_f64_forward"].signature.params[0].to_json()["array"]["lanes"] == 2
    packed = kernels["gemm_andor_bool_argmax_packed"].signature.params[0].to_json()["array"]
    assert (packed["dtype"], packed["pack"]) == ("u32", 32)
    assert kernels["gemm_counting_f64_forward"].launch.shared_bytes_static == 2 * 8 * (64 + 32) * 16


FAMILY = """\
library: choices
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  scale:
    template: scale.cu.j2
    axes: {dtype: [f32, f64], mode: [plain, strided]}
    name: "scale_{dtype}_{mode}{tag}"
    constants:
      - {threads: 128, tag: ""}
      - {when: {dtype: f64}, threads: 64}
      - {when: {mode: strided}, tag: _s}
    matrix:
      - {dtype: f32}
      - {dtype: f64, constants: {threads: 32}}
    signature:
      - when: {mode: plain}
        x: {array: dtype, role: in, shape: [batch, n], optional: [batch]}
        y: {array: dtype, role: out, shape: [batch, n], optional: [batch]}
        batch: {scalar: i32, when: {dtype: f64}}
        n: i32
      - x: {array: dtype, role: in, shape: [n], strides: [sx]}
        y: {array: dtype, role: out, shape: [n]}
        n: i32
        sx: i64
    launch:
      - when: {mode: plain}
        grid: ["cdiv(batch * n, threads)"]
        block: [threads]
      - grid: ["cdiv(n, threads)"]
        block: [threads]
"""
TEMPLATE = """\
extern "C" __global__ void {{ kernel_name }}({{ params }}) { /* {{ threads }} {{ tag }} {{ shared_bytes_static }} */ }
"""


def project(tmp_path: Path, old: str = "", new: str = "") -> Path:
    assert old in FAMILY, old
    return write_project(tmp_path, {"manifest.yaml": FAMILY.replace(old, new, 1), "templates/scale.cu.j2": TEMPLATE})


def test_constants_alternatives_and_conditional_parameters(tmp_path: Path) -> None:
    manifest = load_manifest(project(tmp_path))
    kernels = {k.name: k for k in manifest.kernels}
    assert list(kernels) == ["scale_f32_plain", "scale_f32_strided_s", "scale_f64_plain", "scale_f64_strided_s"]
    # Later entries win where they match; a matrix block's constants come last.
    assert [dict(k.constants)["threads"] for k in kernels.values()] == [128, 128, 32, 32]
    assert "/* 32 _s 0 */" in render_kernel(manifest, kernels["scale_f64_strided_s"])
    # batch is a parameter of the f64 plain kernel alone; elsewhere its dimension drops out, and the grid counts it 1.
    assert [p.name for p in kernels["scale_f64_plain"].params] == ["x", "y", "batch", "n"]
    assert kernels["scale_f64_plain"].launch.grid[0] == ("batch*n", 32)
    assert [p.name for p in kernels["scale_f32_plain"].params] == ["x", "y", "n"]
    assert kernels["scale_f32_plain"].signature.params[0].shape == ("n",)
    assert kernels["scale_f32_plain"].launch.grid[0] == ("n", 128)
    assert [p.name for p in kernels["scale_f32_strided_s"].params] == ["x", "y", "n", "sx"]


def test_static_shared_memory_is_declared_per_point(tmp_path: Path) -> None:
    manifest = load_manifest(project(tmp_path, "        block: [threads]\n      - grid", "        block: [threads]\n        static_shared: threads * sizeof(dtype)\n      - grid"))
    assert [k.launch.shared_bytes_static for k in manifest.kernels] == [512, 0, 256, 0]
    assert "/* 32  256 */" in render_kernel(manifest, manifest.kernels[2])


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("{when: {dtype: f64}, threads: 64}", "{when: {dtype: f16}, threads: 64}", "constants[1].when.dtype: 'f16' is not a value of axis dtype (declared: f32, f64)"),
        ("{when: {dtype: f64}, threads: 64}", "{when: {size: 4}, threads: 64}", "constants[1].when.size: unknown key"),
        ("{when: {dtype: f64}, threads: 64}", "{when: {dtype: f64}, mode: 64}", "constants[1].mode: mode is also an axis"),
        ("{when: {dtype: f64}, threads: 64}", "{when: {dtype: f64}, threads: 1.5}", "constants[1].threads: expected an integer, true, false, -inf, +inf or a name, got float"),
        ("{when: {dtype: f64}, threads: 64}", "{when: {dtype: f64}}", "constants[1]: sets no constant"),
        ("      - x: {array: dtype, role: in, shape: [n], strides: [sx]}", "      - when: {mode: plain}\n        x: {array: dtype, role: in, shape: [n], strides: [sx]}",
         "signature: no alternative's `when` matches dtype=f32, mode=strided"),
        ("      - when: {mode: plain}\n", "      - dummy: i32\n        n2: i32\n      - when: {mode: plain}\n", "signature[0]: needs a `when`; only the last alternative may leave it out"),
        ("        batch: {scalar: i32, when: {dtype: f64}}", "        batch: {scalar: i32, when: {dtype: f64}}\n        tag: i32", "signature[0].tag: tag is also a constant"),
        ("shape: [n], strides: [sx]}", "shape: [n], strides: [sx], lanes: 0}", "signature[1].x.lanes: expected 1 to 16 values an element"),
        ("shape: [n], strides: [sx]}", "shape: [n], strides: [sx], pack: 1}", "signature[1].x.pack: expected 2 to 64 one-bit values a word"),
        ("{array: dtype, role: in, shape: [n], strides: [sx]}", "{array: tag, role: in, shape: [n], strides: [sx]}", "signature[1].x.array: at dtype=f32, mode=strided, tag is '_s', not a dtype"),
        ("        block: [threads]\n      - grid", "        block: [threads]\n        static_shared: threads * 1024\n      - grid", "launch[0].static_shared: 131072 bytes at dtype=f32, mode=plain; shared memory is 0 to 49152 bytes"),
        ("        block: [threads]\n      - grid", "        block: [tag]\n      - grid", "launch[0].block[0]: tag is '' here, not a number"),
        ('name: "scale_{dtype}_{mode}{tag}"', 'name: "scale_{dtype}"', "name: kernel scale_f32 is produced at mode=plain and at mode=strided: the name must tell the points apart (add {mode})"),
        # Lists where a name belongs (the manifest fuzzer's finds): refused, never a TypeError.
        ("        n: i32\n        sx: i64", "        n: {scalar: [i32]}\n        sx: i64", "signature[1].n: unknown scalar type ['i32']"),
        ("{array: dtype, role: in, shape: [n], strides: [sx]}", "{array: [f32], role: in, shape: [n], strides: [sx]}", "signature[1].x.array: expected a dtype"),
        ("shape: [n], strides: [sx]}", "shape: [n], strides: [sx], lanes: [2]}", "signature[1].x.lanes: expected 1 to 16 values an element"),
        ("{when: {dtype: f64}, threads: 64}", "{when: [dtype], threads: 64}", "constants[1].when: expected a mapping"),
    ],
)
def test_each_mistake_is_one_line_naming_the_key(tmp_path: Path, old: str, new: str, expected: str) -> None:
    message = refused(project(tmp_path, old, new))
    assert str(tmp_path / "manifest.yaml") in message
    assert "families.scale" in message
    assert expected in message, message


def test_a_stride_cannot_be_left_out_where_its_dimension_is_kept(tmp_path: Path) -> None:
    old = "        x: {array: dtype, role: in, shape: [batch, n], optional: [batch]}\n"
    new = "        x: {array: dtype, role: in, shape: [batch, n], optional: [batch], strides: [1, sxn]}\n        sxn: {scalar: i64, when: {dtype: f64}}\n"
    message = refused(project(tmp_path, old, new))
    assert "families.scale.signature[0].x.strides: at dtype=f32, mode=plain, stride sxn is left out but dimension n is not" in message


def _tropical_library(tmp_path: Path) -> Path:
    from declared_support import declared_library

    return declared_library(tmp_path, REPO / "kernels" / "manifest.yaml")


def test_tropical_entries_are_laid_out_as_every_declared_kernels(tmp_path: Path) -> None:
    import json

    import aotc
    import aotc.kernels
    from aotc.index.views import Backward

    lib_dir = _tropical_library(tmp_path)
    text = (lib_dir / "index.json").read_text()
    # The layout of every declared kernel: the directory gives the family, each line opens with it.
    assert '"gemm_maxplus_f32_argmax":[' in text and '\n"gemm_maxplus_f32_argmax": {"family": "gemm", ' in text
    entry = json.loads(text)["kernels"]["gemm_maxplus_f32_argmax_batched"]
    assert entry["axes"] == {"semiring": "maxplus", "dtype": "f32", "pass": "argmax", "variant": "batched"}
    assert not {"semiring", "dtype", "pass", "variant"} & set(entry)
    assert [p["name"] for p in entry["signature"]][:4] == ["A", "B", "C", "Kstar"]
    assert {"axes", "signature", "backward"} <= set(entry["checksum"])
    lib = aotc.load(lib_dir, backend="noop")
    kernel = lib.index.kernel("gemm_maxplus_f32_argmax_batched")
    assert kernel.axes == {"semiring": "maxplus", "dtype": "f32", "pass": "argmax", "variant": "batched"}
    assert [(p.name, p.arg) for p in kernel.signature][:4] == [("A", "a"), ("B", "b"), ("C", "out"), ("Kstar", "k_out")]
    assert kernel.backward == Backward((("gemm_maxplus_f32_backward_a_batched", ("Kstar", "B")), ("gemm_maxplus_f32_backward_b_batched", ("Kstar", "A"))), "")
    assert lib.index.kernel("gemm_maxplus_f32_forward_batched").backward == Backward((), "gemm_maxplus_f32_argmax_batched")
    assert lib.index.kernel("gemm_andor_bool_forward_packed").axes == {"semiring": "andor", "dtype": "bool", "pass": "forward", "variant": "packed"}
    # Not hidden from the declared families any more: the bindings group its kernels by family.
    assert aotc.kernels.over(lib).names == ("gemm",)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e["signature"][0]["array"].update(lanes=1), r"signature\[0\]\.array\.lanes: 1 is not 2 to 16 values an element$"),
        (lambda e: e["signature"][0]["array"].update(pack=True), r"signature\[0\]\.array\.pack: True is not 2 to 64 one-bit values a word$"),
        (lambda e: e["signature"][4].update(scalar="i64"), r"signature\[4\]: does not describe parameter N \(i32\) as a scalar$"),
    ],
)
def test_a_whole_index_check_holds_a_tropical_signature(tmp_path: Path, change: Any, message: str) -> None:
    import json

    from aotc.build.index_writer import seal
    from aotc.errors import IndexFormatError
    from aotc.index._validate import validate

    index = json.loads((_tropical_library(tmp_path) / "index.json").read_text())
    change(index["kernels"]["gemm_maxplus_f32_forward"])
    with pytest.raises(IndexFormatError, match=message):
        validate("index.json", seal(index))
