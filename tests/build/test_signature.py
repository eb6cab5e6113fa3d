"""The binary interface of a generated kernel (aotc.build.signature): how a
parameter is packed and declared, the launch geometry's record, and what the
shipped tropical family's declaration resolves to (its kernels' parameters and
launch geometry, which its templates are written against)."""

from __future__ import annotations

import struct

import pytest

from aotc.build.manifest import load_manifest
from aotc.build.signature import LaunchGeometry, Param
from conftest import REPO

KERNELS = {k.name: k for k in load_manifest(REPO / "kernels" / "manifest.yaml").kernels}


def names(kernel: str) -> list[str]:
    return [p.name for p in KERNELS[kernel].params]


def test_param_pack_codes_declaration_and_json() -> None:
    pointer = Param("A", "const float*", "ptr")
    size = Param("M", "int", "i32")
    stride = Param("lda", "long long", "i64")
    assert (pointer.pack, size.pack, stride.pack, Param("alpha", "double", "f64").pack) == ("Q", "i", "q", "d")
    assert pointer.declaration() == "const float* __restrict__ A"
    assert size.declaration() == "int M"
    assert stride.to_json() == {"name": "lda", "ctype": "long long", "kind": "i64", "pack": "q"}


def test_param_of_unknown_kind_has_no_pack_code() -> None:
    with pytest.raises(KeyError):
        _ = Param("x", "__nv_fp8_e4m3", "f8").pack


def test_launch_geometry_json() -> None:
    assert LaunchGeometry((8, 8, 1), (("N", 64), ("M", 32), ("batch", 1)), 1536).to_json() == {
        "block": [8, 8, 1],
        "grid": [{"extent": "N", "tile": 64}, {"extent": "M", "tile": 32}, {"extent": "batch", "tile": 1}],
        "shared_bytes_static": 1536,
        "shared_bytes_dynamic": 0,
    }


def test_tropical_forward_single_parameters() -> None:
    params = KERNELS["gemm_maxplus_f32_forward"].params
    # block_y0: each launch's first block row, where a grid past 65535 on y is launched in parts.
    assert names("gemm_maxplus_f32_forward") == ["A", "B", "C", "M", "N", "K", "lda", "ldb", "ldc", "block_y0"]
    assert [p.ctype for p in params[:3]] == ["const float*", "const float*", "float*"]
    assert [p.kind for p in params] == ["ptr"] * 3 + ["i32"] * 3 + ["i64"] * 3 + ["i32"]


def test_tropical_argmax_adds_the_index_matrix() -> None:
    params = KERNELS["gemm_minplus_i64_argmax"].params
    assert names("gemm_minplus_i64_argmax") == ["A", "B", "C", "Kstar", "M", "N", "K", "lda", "ldb", "ldc", "ldk", "block_y0"]
    assert params[3].ctype == "int*" and params[0].ctype == "const long long*"


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        ("gemm_maxplus_f64_backward_a", ["grad_C", "Kstar", "B", "grad_A", "M", "N", "K", "ldgc", "ldk", "ldb", "ldga"]),
        ("gemm_maxplus_f64_backward_b", ["grad_C", "Kstar", "A", "grad_B", "M", "N", "K", "ldgc", "ldk", "lda", "ldgb"]),
    ],
)
def test_tropical_backward_parameters(kernel: str, expected: list[str]) -> None:
    params = KERNELS[kernel].params
    assert names(kernel) == expected
    assert params[1].ctype == "const int*" and params[3].ctype == "double*"


def test_tropical_batched_appends_batch_and_one_stride_per_pointer() -> None:
    params = KERNELS["gemm_maxplus_f32_argmax_batched"].params
    assert names("gemm_maxplus_f32_argmax_batched")[-7:-2] == ["batch", "batch_stride_A", "batch_stride_B", "batch_stride_C", "batch_stride_Kstar"]
    assert [p.kind for p in params[-7:-2]] == ["i32", "i64", "i64", "i64", "i64"]
    # Then the split offsets: a batch past 65535 (z), or rows past 65535 tiles (y), launch in parts.
    assert names("gemm_maxplus_f32_argmax_batched")[-2:] == ["block_y0", "block_z0"]


def test_every_tropical_kernel_packs_into_one_block() -> None:
    for kernel in KERNELS.values():
        layout = struct.Struct("@" + "".join(p.pack for p in kernel.params))
        assert layout.size >= 8 * sum(p.kind == "ptr" for p in kernel.params)
        assert len({p.name for p in kernel.params}) == len(kernel.params)


def test_tropical_product_geometry_stages_tiles_of_a_and_b() -> None:
    assert KERNELS["gemm_maxplus_f32_forward"].launch == LaunchGeometry((16, 16, 1), (("N", 128), ("M", 128), ("1", 1)), 2 * 16 * (128 + 128) * 4)  # tiles 16 deep
    assert KERNELS["gemm_maxplus_f64_argmax_batched"].launch.shared_bytes_static == 2 * 8 * (64 + 64) * 8
    assert KERNELS["gemm_andor_bool_forward_packed"].launch.shared_bytes_static == 2 * 8 * (64 + 64) * 4  # block_k counts words


@pytest.mark.parametrize(("kernel", "owner"), [("gemm_maxplus_f32_backward_a_batched", "M"), ("gemm_maxplus_f32_backward_b_batched", "N")])
def test_tropical_backward_threads_each_own_a_row_or_column(kernel: str, owner: str) -> None:
    # Deterministic gradients: one thread per row of grad_A (column of grad_B), a 1-D grid over them, no shared memory.
    assert KERNELS[kernel].launch == LaunchGeometry((256, 1, 1), ((owner, 256), ("1", 1), ("batch", 1)), 0)
