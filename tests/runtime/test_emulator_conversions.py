"""The emulator's float-to-integer intrinsics (``__float2int_rn`` and kin) bit
for bit against CUDA's table on their boundaries: rounded as asked, clamped to
the destination's range, NaN to 0, as PTX's cvt does (conversion_support.py).
tests/kernels/test_family_gpu.py checks a lent GPU against the same table."""

from __future__ import annotations

from typing import Any

import pytest

import aotc
import aotc.kernels
from runtime.conversion_support import CONVERSIONS, boundaries, mismatches


@pytest.fixture(scope="module")
def conversions(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from kernels.declared_support import declared_library, write_project

    root = tmp_path_factory.mktemp("conversions")
    manifest = write_project(root / "project", CONVERSIONS)
    return aotc.kernels.over(aotc.load(declared_library(root, manifest), backend="emulator"))


@pytest.mark.parametrize("source", ["f32", "f64"])
def test_conversions_saturate_and_round_as_cuda_does(conversions: Any, source: str) -> None:
    values = boundaries(source)
    results = dict(zip(("i32", "u32", "i64", "u64"), conversions.convert(values)))
    assert mismatches(source, values, results) == []


def test_the_table_covers_each_boundary() -> None:
    """Both sides of each range's ends, ties, NaN and the infinities: a table a
    wrong conversion cannot pass by luck."""
    for source in ("f32", "f64"):
        values = set(boundaries(source).tolist())
        assert {2.0**31, -(2.0**31), 2.0**32, 2.0**63, 2.0**64, 0.5, -0.5, 2.5} <= values
        assert any(v != v for v in values) and float("inf") in values and float("-inf") in values
    assert {2147483647.5, -2147483648.5, 4294967295.5} <= set(boundaries("f64").tolist())
