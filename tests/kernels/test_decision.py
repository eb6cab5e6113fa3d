"""aotc/kernels/_decision.py through the rowops example: out extents the caller
gives, out arrays filled before the launch, scalars typed by a dtype axis,
and every refusal made before anything is copied or allocated."""

from __future__ import annotations

from fractions import Fraction
from typing import Any
from unittest import mock

import numpy as np
import pytest

from aotc.errors import ArgumentError, ArgumentTypeError
from declared_support import reference, rowops  # noqa: F401 - fixtures

RNG = np.random.default_rng(41)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "bins"), [((3, 500), 10), ((1, 1), 1), ((4, 0), 7), ((2, 300), 0), ((0, 5), 3)])
def test_histogram_matches_the_reference(rowops: Any, dtype: Any, shape: tuple[int, int], bins: int) -> None:  # noqa: F811
    x = (RNG.normal(size=shape) * 1.5).astype(dtype)
    counts = rowops.histogram(x, bins, -2.0, 2.0)
    assert counts.dtype == np.int32 and counts.shape == (shape[0], bins)
    np.testing.assert_array_equal(counts, reference.histogram(x, bins, -2.0, 2.0))


@pytest.mark.parametrize(("lo", "hi", "dtype"), [(-np.inf, np.inf, np.float64), (-np.inf, 0.0, np.float32), (-3.4e38, 3.4e38, np.float32)])
def test_an_infinite_range_counts_nothing(rowops: Any, lo: float, hi: float, dtype: Any) -> None:  # noqa: F811
    """hi - lo infinite (or past f32's range) made every bin index (int)NaN: INT_MIN
    on a CPU, which wrote far outside counts and crashed the emulator."""
    x = RNG.normal(size=(3, 40)).astype(dtype)
    counts = rowops.histogram(x, 4, lo, hi)
    np.testing.assert_array_equal(counts, np.zeros((3, 4), np.int32))
    np.testing.assert_array_equal(counts, reference.histogram(x, 4, lo, hi))


def test_lo_and_hi_take_the_arrays_dtype(rowops: Any) -> None:  # noqa: F811
    # 0.1 is not a float32: a bound given as float64 would move values on the edge.
    x = np.float32([0.1, 0.2, 0.3]).reshape(1, 3)
    np.testing.assert_array_equal(rowops.histogram(x, 2, 0.1, 0.3), reference.histogram(x, 2, 0.1, 0.3))
    assert rowops.layout("histogram").kernels["histogram_f32"].signature[-1].dtype == "f32"
    assert rowops.layout("histogram").kernels["histogram_f64"].signature[-1].dtype == "f64"


def test_an_out_array_with_a_fill_starts_from_it(rowops: Any) -> None:  # noqa: F811
    """counts is filled with 0 before the launch, given or allocated, each call:
    the kernel only adds, so garbage in a given array never reaches the result."""
    x = RNG.normal(size=(2, 100))
    out = np.full((2, 8), 12345, np.int32)
    want = reference.histogram(x, 8, -3.0, 3.0)
    for _ in range(3):  # the full path, then the plan's
        assert rowops.histogram(x, 8, -3.0, 3.0, counts=out) is out
        np.testing.assert_array_equal(out, want)
    assert rowops.histogram(x, 8, -3.0, 3.0).sum() == want.sum()


def test_an_extent_is_an_argument_of_its_own_in_the_plans_key(rowops: Any) -> None:  # noqa: F811
    layout = rowops.layout("histogram")
    layout.plans.clear()
    x = RNG.normal(size=(3, 50))
    for bins in (4, 9, 4):
        np.testing.assert_array_equal(rowops.histogram(x, bins, -1.0, 1.0), reference.histogram(x, bins, -1.0, 1.0))
    assert sorted(key[-3] for key in layout.plans.tagged("numpy")) == [4, 9]  # the extent and its type, before the stream named (None)


def test_a_tensor_call_keys_its_plan_by_the_extent_too(rowops: Any) -> None:  # noqa: F811
    """The op's plans are keyed by the caller's extent, as the NumPy route's are:
    a repeat call with other bins is sized by them, not by the plan an earlier
    call left (which once returned the first call's width for every later one)."""
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(3, 50))
    for bins in (4, 9, 0, 4):
        for call in (rowops.histogram, rowops.torch_ops().histogram):  # the binding, and the op itself
            counts = call(torch.from_numpy(x), bins, -1.0, 1.0)
            np.testing.assert_array_equal(counts.numpy(), reference.histogram(x, bins, -1.0, 1.0))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda k: k.histogram(np.ones((2, 3)), 70000, 0.0, 1.0), ArgumentError, "histogram: bins: 70000 is not from 0 to its bound 65536"),
        (lambda k: k.histogram(np.ones((2, 3)), -1, 0.0, 1.0), ArgumentError, "histogram: bins: -1 is not from 0 to its bound 65536"),
        (lambda k: k.histogram(np.ones((2, 3)), 2.5, 0.0, 1.0), ArgumentTypeError, "histogram: bins: expected an integer extent (i32), got 2.5"),
        (lambda k: k.histogram(np.ones((2, 3)), True, 0.0, 1.0), ArgumentTypeError, "histogram: bins: expected an integer extent (i32), got True"),
        (lambda k: k.histogram(np.ones((2, 3)), 4, "lo", 1.0), ArgumentTypeError, "histogram: lo: expected a number (f64), got 'lo'"),
        (lambda k: k.histogram(np.ones((2, 3)), 4, 0.0, 1.0, counts=np.zeros((2, 5), np.int32)), ArgumentError,
         "histogram: counts: expected shape (2, 4) and dtype i32, got (2, 5) and i32"),  # fmt: skip
        (lambda k: k.histogram(np.ones((2, 3), np.int32), 4, 0.0, 1.0), ArgumentError, "histogram: x: dtype i32, but its kernels take f32 or f64 there"),
        # A dtype axis the caller chose is named: the array is not to blame for it.
        (lambda k: k.histogram(np.ones((2, 3), np.float32), 4, 0.0, 1.0, dtype="f64"), ArgumentError, "histogram: x: dtype f32, but its kernels for dtype=f64 take f64 there"),
    ],
)
def test_each_refusal_is_one_line_naming_the_argument(rowops: Any, call: Any, error: type, message: str) -> None:  # noqa: F811
    with pytest.raises(error) as info:
        call(rowops)
    assert str(info.value) == message


@pytest.mark.parametrize("bins", [3.0, np.float64(3.0), Fraction(3), np.array([3])], ids=repr)
def test_a_repeat_call_refuses_what_a_first_call_refuses(rowops: Any, bins: Any) -> None:  # noqa: F811
    """Plans and decisions are keyed by each size's type too: 3.0, np.float64(3.0)
    and Fraction(3) equal 3 and hash alike, so once bins=3 had left a plan, each
    was taken where a first call refuses it (and an array raised NumPy's TypeError)."""
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(3, 50))
    message = r"^histogram: bins: expected an integer extent \(i32\), got "
    for array in (x, torch.from_numpy(x)):
        for _ in range(2):  # a first call and a repeat, each after bins=3 made its plan
            rowops.histogram(array, 3, -1.0, 1.0)
            with pytest.raises(ArgumentTypeError, match=message):
                rowops.histogram(array, bins, -1.0, 1.0)


@pytest.mark.parametrize("lo", [np.array([-1.0]), np.array([-1.0, 0.0])], ids=repr)
def test_an_array_given_for_a_scalar_is_refused_in_one_line(rowops: Any, lo: Any) -> None:  # noqa: F811
    """NumPy's own TypeError ("only 0-dimensional arrays ...") named neither the call nor the argument."""
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(3, 50))
    for array in (x, torch.from_numpy(x)):
        with pytest.raises(ArgumentTypeError, match=rf"^histogram: lo: expected a number \(f64\), got an array of shape \({lo.size},\)$"):
            rowops.histogram(array, 4, lo, 1.0)
    with pytest.raises(ArgumentTypeError, match=r"^histogram: bins: expected an integer extent \(i32\), got \[4\]$"):
        rowops.histogram(torch.from_numpy(x), [4], -1.0, 1.0)  # the op's plans' key cannot hold a list
    np.testing.assert_array_equal(rowops.histogram(x, 4, np.array(-1.0), 1.0), reference.histogram(x, 4, -1.0, 1.0))


def test_every_check_runs_before_any_copy_or_allocation(rowops: Any) -> None:  # noqa: F811
    """A call refused for its sizes copies no input and allocates no result: a
    strided x (which would be copied) and a bins past the bound (which would
    size the result) are refused with nothing made."""
    from aotc.arrays.kinds.numpy import NumpyKind

    x = RNG.normal(size=(4, 60))[:, ::2]
    made = AssertionError("an array was copied or allocated before the refusal")
    with mock.patch.object(NumpyKind, "contiguous", side_effect=made), mock.patch.object(NumpyKind, "allocate", side_effect=made):
        with pytest.raises(ArgumentError, match=r"^histogram: bins: 100000 is not from 0 to its bound 65536$"):
            rowops.histogram(x, 100000, 0.0, 1.0)
        with pytest.raises(ArgumentError, match=r"^histogram: x: expected a 2-D array \(rows, n\), got shape \(2, 2, 3\)$"):
            rowops.histogram(np.ones((2, 2, 3)), 4, 0.0, 1.0)


def test_a_grid_past_the_limit_is_refused_before_allocating(rowops: Any) -> None:  # noqa: F811
    """histogram's grid is one block a row: 2**31 rows would need a grid of 2**31
    blocks. A broadcast view that large costs no memory; the refusal makes none."""
    from aotc.arrays.kinds.numpy import NumpyKind

    x = np.broadcast_to(np.zeros((1, 1)), (2**31, 1))
    with mock.patch.object(NumpyKind, "allocate", side_effect=AssertionError("allocated before the refusal")):
        with pytest.raises(ArgumentError, match=r"^histogram: x: rows=2147483648 is past the kernel's i32 limit of 2147483647$"):
            rowops.histogram(x, 4, 0.0, 1.0)
    x = np.broadcast_to(np.zeros((1, 1, 1)), (2**16, 2**15 + 1, 1))  # softmax's grid: batch * rows blocks
    with mock.patch.object(NumpyKind, "allocate", side_effect=AssertionError("allocated before the refusal")):
        with pytest.raises(ArgumentError, match=r"^softmax: x: batch=65536 makes a grid of \(2147549184, 1, 1\) blocks, 2147549184 on x, past CUDA's limit of 2147483647 there; family softmax declares no split of x"):
            rowops.softmax(x)
