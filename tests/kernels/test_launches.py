"""A declared family's grid past CUDA's limits (aotc/kernels/_decision.py,
``Decision.launches``): a family that declares a split offset for an axis
(``y0: {scalar: i32, split: y}``, added to ``blockIdx.y`` by its template) is
launched in parts along it, each part's first block index in the offset; a
family that declares none is refused in one line saying what to declare. The
emulator refuses a grid past the limits as a GPU does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aotc
import aotc.kernels
from aotc.errors import ArgumentError
from aotc.runtime.launcher import Launcher
from declared_support import axpy, declared_library, rowops, write_project  # noqa: F401 - axpy and rowops are fixtures

# One block a row, along y: rows past 65535 need parts, or a refusal.
ROWS = {
    "manifest.yaml": """\
library: gridrows
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  twice:
    template: twice.cu.j2
    axes: {dtype: [i32]}
    name: "twice_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [rows]}
      y: {array: dtype, role: out, shape: [rows]}
      rows: i32
      y0: {scalar: i32, split: y}   # the part's first block on y, set by the binder
    launch:
      grid: [1, rows]
      block: [1]
  unsplit:
    template: unsplit.cu.j2
    axes: {dtype: [i32]}
    name: "unsplit_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [rows]}
      y: {array: dtype, role: out, shape: [rows]}
      rows: i32
    launch:
      grid: [1, rows]
      block: [1]
""",
    "templates/twice.cu.j2": """\
extern "C" __global__ void {{ kernel_name }}({{ params }})
{
    const int row = blockIdx.y + {{ split.y }};  // y0: each part starts where the last ended
    y[row] = 2 * x[row] + row;
}
""",
    "templates/unsplit.cu.j2": """\
extern "C" __global__ void {{ kernel_name }}({{ params }})
{
    y[blockIdx.y] = 2 * x[blockIdx.y];
}
""",
}


@pytest.fixture(scope="module")
def gridrows(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("gridrows")
    lib = declared_library(root, write_project(root / "project", ROWS))
    return aotc.kernels.over(aotc.load(lib, backend="emulator"))


def test_rows_past_the_limit_launch_in_parts(gridrows: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    grids: list[Any] = []
    launch_at = Launcher.launch_at
    monkeypatch.setattr(Launcher, "launch_at", lambda self, grid, args, stream=0: grids.append((grid, args[-1])) or launch_at(self, grid, args, stream))
    x = np.arange(140_000, dtype=np.int32)
    np.testing.assert_array_equal(gridrows.twice(x), 2 * x + np.arange(140_000))
    assert grids == [((1, 65535, 1), 0), ((1, 65535, 1), 65535), ((1, 8930, 1), 131070)]
    grids.clear()
    np.testing.assert_array_equal(gridrows.twice(x[:7]), 2 * x[:7] + np.arange(7))
    assert grids == [((1, 7, 1), 0)]  # one launch: its offset 0


def test_a_grid_in_parts_is_replayed_whole_by_its_plan(gridrows: Any, full_path: list[str]) -> None:
    """The repeat of a call launched in parts takes the plan its first call left
    (no second trip through the full path), and the plan launches every part
    at its own offset: each row's result holds its own index. So do tensors,
    through the op's kernel and past the dispatcher."""
    layout = gridrows.layout("twice")
    layout.plans.clear()
    x = np.arange(140_000, dtype=np.int32)
    for shift in range(3):
        np.testing.assert_array_equal(gridrows.twice(x + shift), 2 * (x + shift) + np.arange(140_000))
    y = np.empty_like(x)
    for shift in range(3):
        assert gridrows.twice(x - shift, y=y) is y
        np.testing.assert_array_equal(y, 2 * (x - shift) + np.arange(140_000))
    assert full_path == ["twice", "twice"]  # one plan allocating, one writing y=
    torch = pytest.importorskip("torch")
    full_path.clear()
    for shift in range(3):
        got = gridrows.twice(torch.from_numpy(x + shift))
        np.testing.assert_array_equal(got.numpy(), 2 * (x + shift) + np.arange(140_000))
    assert full_path == ["twice"]


def test_a_family_that_declares_no_split_is_refused_saying_what_to_declare(gridrows: Any) -> None:
    x = np.zeros(65_536, np.int32)
    with pytest.raises(ArgumentError) as info:
        gridrows.unsplit(x)
    assert str(info.value) == (
        "unsplit: x: rows=65536 makes a grid of (1, 65536, 1) blocks, 65536 on y, past CUDA's limit of 65535 there; "
        "family unsplit declares no split of y (an integer scalar with split: y, added to blockIdx.y)"
    )
    np.testing.assert_array_equal(gridrows.unsplit(x[:65_535] + 1), np.full(65_535, 2))


def test_the_split_offset_is_no_argument_of_the_call(gridrows: Any) -> None:
    layout = gridrows.layout("twice")
    assert layout.positional == ("x",) and "y0" not in layout.arguments
    param = layout.kernels["twice_i32"].signature[-1]
    assert (param.name, param.split, param.dim) == ("y0", "y", True)


def test_the_template_sees_each_axis_split_offset(tmp_path: Path) -> None:
    from aotc.build.codegen import render_kernel
    from aotc.build.manifest import load_manifest

    manifest = load_manifest(write_project(tmp_path, ROWS))
    twice, unsplit = manifest.kernels
    assert "const int row = blockIdx.y + y0;" in render_kernel(manifest, twice)
    assert twice.params[-1].declaration() == "int y0" and [p.name for p in unsplit.params] == ["x", "y", "rows"]


# ---- an extent of 0: nothing to launch, never refused for its strides ----------------------------


def test_an_empty_inout_or_out_array_is_never_refused_for_its_strides(axpy: Any, rowops: Any) -> None:  # noqa: F811
    """NumPy reports a (0, 4) array's strides as (0, 0), and a tensor may have
    any: no element, so nothing to be contiguous about. Before, each was
    refused as "must be a contiguous row-major array"."""
    y = np.zeros((0, 4))
    assert y.strides == (0, 0)
    assert axpy.axpy(np.ones((0, 4)), y, 2.0, threads=64) is y
    out = np.zeros((0, 5))
    assert rowops.softmax(np.ones((0, 5)), y=out) is out
    torch = pytest.importorskip("torch")
    given = torch.empty_strided((0, 5), (0, 0), dtype=torch.float64)
    assert rowops.softmax(torch.ones(0, 5, dtype=torch.float64), y=given) is given
    inout = torch.empty_strided((0, 4), (1, 7), dtype=torch.float32)
    assert axpy.axpy(torch.ones(0, 4), inout, 2.0, threads=64) is inout
