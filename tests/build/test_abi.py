from __future__ import annotations

import struct

import pytest

from aotc.build.abi import PASSES, VARIANTS, LaunchGeometry, Param, Tile, kernel_params, launch_geometry, product_shared_bytes
from aotc.semiring import DTYPES

TILE = Tile(block_m=32, block_n=64, block_k=8, thread_m=4, thread_n=8)


def names(params: tuple[Param, ...]) -> list[str]:
    return [p.name for p in params]


def test_tile_threads_is_the_thread_grid_of_one_block() -> None:
    assert TILE.threads == (32 // 4) * (64 // 8) == 64
    assert TILE.stages == 2


def test_param_pack_codes_declaration_and_json() -> None:
    pointer = Param("A", "const float*", "ptr")
    size = Param("M", "int", "i32")
    stride = Param("lda", "long long", "i64")
    assert (pointer.pack, size.pack, stride.pack) == ("Q", "i", "q")
    assert pointer.declaration() == "const float* __restrict__ A"
    assert size.declaration() == "int M"
    assert stride.to_json() == {"name": "lda", "ctype": "long long", "kind": "i64", "pack": "q"}


def test_param_of_unknown_kind_has_no_pack_code() -> None:
    with pytest.raises(KeyError):
        _ = Param("x", "__half", "f16").pack


def test_forward_single_parameters() -> None:
    params = kernel_params("forward", "single", DTYPES["f32"])
    assert names(params) == ["A", "B", "C", "M", "N", "K", "lda", "ldb", "ldc"]
    assert [p.ctype for p in params[:3]] == ["const float*", "const float*", "float*"]
    assert [p.kind for p in params] == ["ptr"] * 3 + ["i32"] * 3 + ["i64"] * 3


def test_argmax_adds_the_index_matrix() -> None:
    params = kernel_params("argmax", "single", DTYPES["i64"])
    assert names(params) == ["A", "B", "C", "Kstar", "M", "N", "K", "lda", "ldb", "ldc", "ldk"]
    assert params[3].ctype == "int*" and params[0].ctype == "const long long*"


@pytest.mark.parametrize(
    ("pass_name", "expected"),
    [
        ("backward_a", ["grad_C", "Kstar", "B", "grad_A", "M", "N", "K", "ldgc", "ldk", "ldb", "ldga"]),
        ("backward_b", ["grad_C", "Kstar", "A", "grad_B", "M", "N", "K", "ldgc", "ldk", "lda", "ldgb"]),
    ],
)
def test_backward_parameters(pass_name: str, expected: list[str]) -> None:
    params = kernel_params(pass_name, "single", DTYPES["f64"])
    assert names(params) == expected
    assert params[1].ctype == "const int*" and params[3].ctype == "double*"


def test_batched_appends_batch_and_one_stride_per_pointer() -> None:
    params = kernel_params("argmax", "batched", DTYPES["f32"])
    assert names(params)[-5:] == ["batch", "batch_stride_A", "batch_stride_B", "batch_stride_C", "batch_stride_Kstar"]
    assert [p.kind for p in params[-5:]] == ["i32", "i64", "i64", "i64", "i64"]


def test_every_pass_and_variant_packs_into_one_block() -> None:
    for pass_name in PASSES:
        for variant in VARIANTS:
            params = kernel_params(pass_name, variant, DTYPES["bool"])
            layout = struct.Struct("@" + "".join(p.pack for p in params))
            assert layout.size >= 8 * sum(p.kind == "ptr" for p in params)
            assert len({p.name for p in params}) == len(params)


def test_unknown_pass_and_variant_name_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"^unknown pass 'sideways' \(known: forward, argmax, backward_a, backward_b\)$"):
        kernel_params("sideways", "single", DTYPES["f32"])
    with pytest.raises(ValueError, match=r"^unknown variant 'ragged' \(known: single, batched, packed\)$"):
        kernel_params("forward", "ragged", DTYPES["f32"])


def test_product_shared_bytes_stages_tiles_of_a_and_b() -> None:
    assert product_shared_bytes(TILE, 4) == 2 * 8 * (32 + 64) * 4
    assert product_shared_bytes(Tile(16, 16, 4, 2, 2, stages=3), 8) == 3 * 4 * 32 * 8


def test_launch_geometry_of_a_single_product_pass() -> None:
    geometry = launch_geometry(TILE, 4, "forward", "single")
    assert geometry == LaunchGeometry((8, 8, 1), (("N", 64), ("M", 32), ("1", 1)), 2 * 8 * 96 * 4, 0)


def test_launch_geometry_of_batched_backward_uses_no_shared_memory() -> None:
    geometry = launch_geometry(TILE, 4, "backward_b", "batched")
    assert geometry.grid[2] == ("batch", 1)
    assert geometry.shared_bytes_static == 0


@pytest.mark.parametrize(("pass_name", "owner"), [("backward_a", "M"), ("backward_b", "N")])
def test_backward_threads_each_own_a_row_or_column(pass_name: str, owner: str) -> None:
    # Deterministic gradients: one thread per row of grad_A (column of grad_B), a 1-D grid over them.
    geometry = launch_geometry(TILE, 4, pass_name, "single")
    assert geometry == LaunchGeometry((TILE.threads, 1, 1), ((owner, TILE.threads), ("1", 1), ("1", 1)), 0, 0)


def test_launch_geometry_json() -> None:
    assert launch_geometry(TILE, 1, "argmax", "batched").to_json() == {
        "block": [8, 8, 1],
        "grid": [{"extent": "N", "tile": 64}, {"extent": "M", "tile": 32}, {"extent": "batch", "tile": 1}],
        "shared_bytes_static": 2 * 8 * 96,
        "shared_bytes_dynamic": 0,
    }
