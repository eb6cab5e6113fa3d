"""Declared strides: arrays read where they lie (views, broadcasts), copied only
where the kernel needs a dimension dense, on the emulator, from NumPy and torch."""

from __future__ import annotations

import contextlib

from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

from aotc.build.manifest import load_manifest
from aotc.errors import ArgumentError, ManifestError
from aotc.arrays.kinds.numpy import NumpyKind
from declared_support import BADD, badd, write_project  # noqa: F401 - fixtures

RNG = np.random.default_rng(5)


def _expected(x: Any, bias: Any) -> Any:
    return np.asarray(x) + np.asarray(bias)[..., None, :]


@contextlib.contextmanager
def _no_copy() -> Any:
    """Patches that fail the test if the binding copies an input, of any kind."""
    from aotc.arrays.kinds.torch import TorchKind

    copied = AssertionError("an input was copied")
    with mock.patch.object(NumpyKind, "contiguous", side_effect=copied), mock.patch.object(TorchKind, "contiguous", side_effect=copied):
        yield


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a,  # row-major
        lambda a: a.transpose(0, 2, 1).copy().transpose(0, 2, 1),  # column-major matrices
        lambda a: a[:, ::2, 1::3],  # every other row, every third column
        lambda a: a[::-1, :, ::-1],  # negative strides
        lambda a: np.broadcast_to(a[:, :1, :], a.shape),  # a row broadcast down the matrix (stride 0)
    ],
)
def test_views_are_read_in_place(badd: Any, view: Any) -> None:  # noqa: F811 - the fixture imported above
    x = view(RNG.normal(size=(3, 8, 12)))
    bias = RNG.normal(size=(3, x.shape[2]))
    with _no_copy():
        y = badd.badd(x, bias)
        again = badd.badd(x, bias)  # the call plan, keyed by the strides too
    assert y.shape == x.shape and y.flags.c_contiguous
    np.testing.assert_array_equal(y, _expected(x, bias))
    np.testing.assert_array_equal(again, y)


def test_a_left_out_batch_is_broadcast_where_a_stride_is_declared(badd: Any) -> None:  # noqa: F811 - the fixture imported above
    x = RNG.normal(size=(4, 5, 6))
    bias = RNG.normal(size=6)  # no batch: one bias for every matrix, batch stride 0
    matrix, biases = x[0], RNG.normal(size=(4, 6))  # no batch: one matrix for every bias
    with _no_copy():
        np.testing.assert_array_equal(badd.badd(x, bias), _expected(x, bias))
        np.testing.assert_array_equal(badd.badd(matrix, biases), matrix[None] + biases[:, None, :])


def test_a_dimension_declared_dense_is_copied_when_it_is_not(badd: Any) -> None:  # noqa: F811 - the fixture imported above
    x = RNG.normal(size=(2, 3, 5))
    wide = RNG.normal(size=(2, 10))
    with mock.patch.object(NumpyKind, "contiguous", autospec=True, side_effect=NumpyKind.contiguous) as copied:
        y = badd.badd(x, wide[:, ::2])  # bias's columns two apart; its kernel reads them one apart
    assert [call.args[2] for call in copied.call_args_list] == ["bias"]
    np.testing.assert_array_equal(y, _expected(x, wide[:, ::2]))


def test_torch_views_and_expands(badd: Any) -> None:  # noqa: F811 - the fixture imported above
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")
    x = torch.randn(2, 6, 4, dtype=torch.float64).transpose(1, 2)  # (2, 4, 6), columns of stride 6
    bias = torch.randn(6, dtype=torch.float64).expand(2, 6)  # batch stride 0
    with _no_copy():
        y = badd.badd(x, bias)
    torch.testing.assert_close(y, x + bias[:, None, :])
    results = torch.library.opcheck(badd.torch_ops().badd.default, (x, bias))
    assert set(results.values()) == {"SUCCESS"}


def test_an_out_array_never_broadcasts(badd: Any) -> None:  # noqa: F811 - the fixture imported above
    with pytest.raises(ArgumentError, match=r"y: expected shape \(3, 2, 4\) and dtype f64, got \(2, 4\)"):
        badd.badd(np.ones((3, 2, 4)), np.ones(4), y=np.empty((2, 4)))


def _manifest(tmp_path: Path, old: str, new: str) -> str:
    files = dict(BADD)
    assert old in files["manifest.yaml"]
    files["manifest.yaml"] = files["manifest.yaml"].replace(old, new)
    with pytest.raises(ManifestError) as info:
        load_manifest(write_project(tmp_path, files))
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("strides: [sbb, 1]", "strides: [sbb]", "signature.bias.strides: has 1 entries for a shape of 2; one stride a dimension"),
        ("strides: [sbb, 1]", "strides: [sbb, 2]", "signature.bias.strides: 2 is neither an integer scalar of the signature nor 1"),
        ("strides: [sbb, 1]", "strides: [sbb, alpha]", "signature.bias.strides: 'alpha' is neither an integer scalar"),
        ("strides: [sbb, 1]", "strides: [sxb, 1]", "signature.bias.strides: sxb is also named in x's strides"),
        ("strides: [sbb, 1]", "strides: [rows, 1]", "signature.bias.strides: rows is also named in a shape"),
        ('grid: ["cdiv(batch * rows * cols, 128)"]', 'grid: ["cdiv(batch * rows * sxc, 128)"]', "'sxc' is not an integer scalar of the signature"),
    ],
)
def test_each_stride_mistake_is_one_line_naming_the_key(tmp_path: Path, old: str, new: str, expected: str) -> None:
    message = _manifest(tmp_path, old, new)
    assert "families.badd" in message and expected in message


def test_the_strides_reach_the_index_and_the_parameters(tmp_path: Path) -> None:
    kernel = load_manifest(write_project(tmp_path, BADD)).kernels[0]
    x = kernel.signature.params[0]
    assert x.to_json()["array"]["strides"] == ["sxb", "sxr", "sxc"]
    assert [(p.name, p.ctype) for p in kernel.params][-4:] == [("sxb", "long long"), ("sxr", "long long"), ("sxc", "long long"), ("sbb", "long long")]
    assert all(p.dim for p in kernel.signature.params[-4:])  # bound from the arrays, not the caller's


@pytest.mark.parametrize(
    ("strides", "message"),
    [
        (["sbb"], r"signature\[1\]\.array\.strides: \['sbb'\] is not one integer size parameter or 1 for each of the shape's 2 dimensions$"),
        (["sbb", 2], r"signature\[1\]\.array\.strides: \['sbb', 2\] is not one"),
        (["sbb", "alpha"], r"signature\[1\]\.array\.strides: \['sbb', 'alpha'\] is not one"),
        (["cols", 1], r"kernels\.badd_f64\.signature: stride cols is named twice, or also in a shape"),
        (["sxb", 1], r"kernels\.badd_f64\.signature: stride sxb is named twice, or also in a shape"),
    ],
)
def test_an_index_entry_with_strides_the_bindings_could_not_trust_is_refused(tmp_path: Path, strides: list[Any], message: str) -> None:
    import json

    import aotc
    import aotc.kernels
    from aotc.build.index_writer import dumps, seal
    from aotc.errors import IndexFormatError
    from declared_support import declared_library

    lib = declared_library(tmp_path, write_project(tmp_path / "project", BADD))
    index = json.loads((lib / "index.json").read_text())
    index["kernels"]["badd_f64"]["signature"][1]["array"]["strides"] = strides
    (lib / "index.json").write_bytes(dumps(seal(index)))
    with pytest.raises(IndexFormatError, match=message):
        aotc.kernels.over(aotc.load(lib, backend="emulator")).badd(np.ones((2, 2)), np.ones(2))
