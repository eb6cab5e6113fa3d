"""Generated bindings (aotc.kernels) on the emulator: the rowops example's
families and an inout family, from NumPy, against the references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aotc
import aotc.kernels
from aotc.errors import ArgumentError, ArgumentTypeError
from declared_support import AXPY, ROWOPS, axpy, declared_library, reference, rowops, write_project  # noqa: F401 - fixtures

RNG = np.random.default_rng(23)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 1000), (1, 1), (3, 257), (2, 0), (0, 5)])
def test_softmax_matches_the_reference(rowops: Any, dtype: Any, shape: tuple[int, int]) -> None:  # noqa: F811 - the fixture imported above
    x = (RNG.normal(size=shape) * 300).astype(dtype)
    y = rowops.softmax(x)
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_allclose(y, reference.softmax(x), rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-30)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_scan_matches_the_reference(rowops: Any, dtype: Any) -> None:  # noqa: F811 - the fixture imported above
    x = (RNG.normal(size=(5, 2049)) * 100).astype(dtype)
    y = rowops.scan(x)
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(y, reference.scan(x))
    else:
        scale = np.cumsum(np.abs(x.astype(np.float64)), axis=-1)
        assert np.all(np.abs(y - reference.scan(x.astype(np.float64))) <= scale * (1e-5 if dtype == np.float32 else 1e-13))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_optional_batch_dimension_may_lead_or_be_left_out(rowops: Any, dtype: Any) -> None:  # noqa: F811 - the fixture imported above
    x = (RNG.normal(size=(3, 5, 70)) * 3).astype(dtype)
    y = rowops.softmax(x)  # one kernel: batch 3, or batch 1 where x is 2-D
    assert y.shape == (3, 5, 70) and y.dtype == dtype
    np.testing.assert_allclose(y, reference.softmax(x), rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-30)
    assert rowops.softmax(x[1]).shape == (5, 70)
    np.testing.assert_array_equal(rowops.softmax(x[1]), y[1])
    grad_x = rowops.softmax_backward(np.ones_like(y), y)  # the batch in one array and given as 1 in the other both bind
    assert grad_x.shape == (3, 5, 70)
    assert rowops.softmax_backward(np.ones((1, 5, 70), dtype), y[0]).shape == (1, 5, 70)
    assert rowops.softmax(np.zeros((0, 5, 70), dtype)).shape == (0, 5, 70)


def test_strided_inputs_are_copied_and_out_is_written_in_place(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    base = RNG.normal(size=(6, 40))
    x = base[::2, ::3]  # neither rows nor columns adjacent
    out = np.empty(x.shape)
    assert rowops.softmax(x, y=out) is out
    np.testing.assert_allclose(out, reference.softmax(np.ascontiguousarray(x)), rtol=1e-13)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda k: k.softmax(np.zeros((2, 3), np.int32)), ArgumentError, "softmax: x: dtype i32, but its kernels take f32 or f64 there"),
        (lambda k: k.softmax(np.zeros(3, np.float32)), ArgumentError, "softmax: x: expected a 2-D or 3-D array ([batch], rows, cols), got shape (3,)"),
        (lambda k: k.scan(np.zeros((2, 3, 4))), ArgumentError, "scan: x: expected a 2-D array (rows, n), got shape (2, 3, 4)"),
        (lambda k: k.softmax(np.zeros((2, 3, 4)), y=np.zeros((3, 4))), ArgumentError, "softmax: y: expected shape (2, 3, 4) and dtype f64, got (3, 4) and f64"),
        (
            lambda k: k.softmax_backward(np.zeros((2, 3, 4)), np.zeros((3, 4))), ArgumentError,
            "softmax_backward: y: shape (3, 4) leaves out batch, but grad_y gives batch=2",
        ),  # fmt: skip
        (lambda k: k.softmax(np.zeros((2, 3)), y=np.zeros((2, 4))), ArgumentError, "softmax: y: expected shape (2, 3) and dtype f64, got (2, 4) and f64"),
        (lambda k: k.softmax(np.zeros((2, 3)), y=np.zeros((2, 3), np.float32)), ArgumentError, "softmax: y: expected shape (2, 3) and dtype f64, got (2, 3) and f32"),
        (lambda k: k.softmax(np.zeros((2, 3)), z=1), ArgumentTypeError, "softmax: unknown argument 'z' (known: x, y, dtype, threads, stream)"),
        (lambda k: k.softmax(), TypeError, "softmax() missing 1 required positional argument: 'x'"),
        (lambda k: k.softmax(np.zeros((2, 3)), np.zeros((2, 3))), TypeError, "softmax() takes 1 positional argument but 2 were given"),
        (lambda k: k.family("softmax")(), ArgumentTypeError, "softmax: missing argument x"),
        (lambda k: k.family("softmax")(np.zeros((2, 3)), np.zeros((2, 3))), ArgumentTypeError, "softmax: takes 1 positional arguments (x), got 2"),
        (lambda k: k.softmax(np.zeros((2, 3)), dtype="f16"), ArgumentError, "softmax: dtype: 'f16' is not one of its values (f32, f64)"),
        (lambda k: k.family("gemm"), AttributeError, "rowops has no declared family 'gemm' (families: softmax, softmax_backward, scan, histogram, scale_shift, scale_shift_grad_x, scale_shift_grad_params)"),
    ],
)
def test_each_refusal_is_one_line_naming_the_argument(rowops: Any, call: Any, error: type, message: str) -> None:  # noqa: F811 - the fixture imported above
    with pytest.raises(error) as info:
        call(rowops)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_an_inout_array_is_updated_in_place_and_returned(axpy: Any) -> None:  # noqa: F811 - the fixture imported above
    x = RNG.normal(size=(3, 50))
    y = RNG.normal(size=(3, 50))
    expected = y + 2.5 * x
    assert axpy.axpy(x, y, 2.5, threads=128) is y
    np.testing.assert_allclose(y, expected, rtol=1e-15)
    assert axpy.axpy(x.astype(np.float32), y.astype(np.float32), 1, threads=64).dtype == np.float32


def test_an_axis_the_arrays_do_not_decide_must_be_given(axpy: Any) -> None:  # noqa: F811 - the fixture imported above
    x = np.ones((2, 2))
    with pytest.raises(ArgumentError, match=r"^axpy: 2 kernels fit these arrays; choose one with threads= \(128, 64\)$"):
        axpy.axpy(x, x.copy(), 1.0)
    with pytest.raises(ArgumentTypeError, match=r"alpha: expected a number \(f64\), got 'two'"):
        axpy.axpy(x, x.copy(), "two", threads=64)
    with pytest.raises(ArgumentError, match="y: is read-only; pass a writable array"):
        readonly = x.copy()
        readonly.flags.writeable = False
        axpy.axpy(x, readonly, 1.0, threads=64)


def test_a_repeat_call_with_alike_arrays_takes_its_plan(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    layout = rowops.layout("softmax")
    layout.plans.clear()
    layout.plans.clear()
    x = RNG.normal(size=(4, 9))
    first = rowops.softmax(x)
    assert len(layout.plans.tagged("numpy")) == 1 and len(layout.plans.tagged("decision")) == 1
    second = rowops.softmax(x + 1)  # through the generated entry's plan
    assert len(layout.plans.tagged("decision")) == 1
    np.testing.assert_allclose(first, second, rtol=1e-13)  # softmax is shift-invariant
    out = np.empty_like(x)
    assert rowops.softmax(x + 2, y=out) is out
    np.testing.assert_allclose(out, first, rtol=1e-13)
    rowops.softmax(x.astype(np.float32))
    assert len(layout.plans.tagged("decision")) == 3


def test_a_plan_refuses_what_the_full_path_must_name(axpy: Any) -> None:  # noqa: F811 - the fixture imported above
    """A plan never vouches for a call it cannot check: a read-only, aliased or
    overlapping inout array, or an odd scalar, goes the full way and gets its error."""
    x, y = RNG.normal(size=(3, 8)), RNG.normal(size=(3, 8))
    entry = axpy.layout("axpy")
    entry.plans.clear()
    axpy.axpy(x, y, 1.0, threads=64)  # the axis chosen by keyword ends the plan's key
    axpy.axpy(x, y, 1.0, threads=128)
    assert [key[-3] for key in entry.plans.tagged("numpy")] == [64, 128]  # the axis and its type, before the stream named (None)
    expected = y + 2.0 * x
    assert axpy.axpy(x, y, 2.0, threads=64) is y  # the plan's call
    np.testing.assert_allclose(y, expected, rtol=1e-15)
    kernels = aotc.kernels.over(axpy.library)
    assert kernels.axpy is entry.entry
    with pytest.raises(ArgumentError, match="y: shares memory with x; pass a separate array"):
        axpy.axpy(x, x, 1.0, threads=64)
    with pytest.raises(ArgumentTypeError, match=r"alpha: expected a number \(f64\), got None"):
        axpy.axpy(x, y, None, threads=64)


def _routes() -> dict[str, Any]:
    """Each route's way of making (x, y) from NumPy arrays, and of calling: the
    direct one, tensors through the plans, tensors through the op's schema (a
    mode the dispatcher must see), JAX arrays through XLA."""
    routes: dict[str, Any] = {"numpy": (lambda x, y: (x, y), lambda call: call())}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        routes["tensors"] = (lambda x, y: (torch.from_numpy(x), torch.from_numpy(y)), lambda call: call())

        def op(call: Any) -> Any:
            with torch.inference_mode():
                return call()

        routes["the op"] = (lambda x, y: (torch.from_numpy(x), torch.from_numpy(y)), op)
    try:
        import jax.numpy as jnp
    except ImportError:
        jnp = None
    if jnp is not None:
        routes["jax"] = (lambda x, y: (jnp.asarray(x), jnp.asarray(y)), lambda call: call())
    return routes


@pytest.mark.parametrize("route", list(_routes()))
def test_an_integer_axis_takes_numpy_integers_on_every_route(axpy: Any, rowops: Any, route: str) -> None:  # noqa: F811 - the fixtures imported above
    """threads=np.int64(64), as array arithmetic gives it, is threads=64: before, the
    NumPy and tensor routes refused it as not one of the axis's values (JAX took it),
    and the op's schema refused 64.0 in PyTorch's words. A first call and a repeat
    (after 64 left its plan) agree, each with the int's result; a float or a bool
    that equals a value stays refused, first and repeat alike. A size (an extent)
    takes them as well."""
    make, run = _routes()[route]
    x = RNG.normal(size=(3, 50))
    want = np.asarray(run(lambda: axpy.axpy(*make(x, np.zeros((3, 50))), 2.0, threads=64)))
    for threads in (np.int64(64), np.int32(64), np.array(64), 64):
        for _ in range(2):
            got = run(lambda threads=threads: axpy.axpy(*make(x, np.zeros((3, 50))), 2.0, threads=threads))
            np.testing.assert_array_equal(np.asarray(got), want)
    for threads in (64.0, np.float64(64.0), True, np.array([64])):
        for _ in range(2):
            with pytest.raises((ArgumentError, ArgumentTypeError), match=r"^axpy: threads: "):
                run(lambda threads=threads: axpy.axpy(*make(x, np.zeros((3, 50))), 2.0, threads=threads))
    x = make(x, x)[0]
    counts = np.asarray(run(lambda: rowops.histogram(x, 6, -1.0, 1.0)))
    for bins in (np.int64(6), np.array(6), 6):
        for _ in range(2):
            np.testing.assert_array_equal(np.asarray(run(lambda bins=bins: rowops.histogram(x, bins, -1.0, 1.0))), counts)


def test_a_plan_checks_the_objects_every_call(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    x = RNG.normal(size=(2, 16))
    out = np.empty_like(x)
    rowops.softmax(x, y=out)
    rowops.softmax(x, y=out)  # the plan's call
    out.flags.writeable = False
    with pytest.raises(ArgumentError, match="y: is read-only"):
        rowops.softmax(x, y=out)
    out.flags.writeable = True
    with pytest.raises(ArgumentError, match="y: shares memory with x"):
        rowops.softmax(out, y=out)  # the same key: the plan sees the overlap and hands the call on


def test_families_are_listed_and_kept_with_the_library(rowops: Any) -> None:  # noqa: F811 - the fixture imported above
    assert rowops.names == ("softmax", "softmax_backward", "scan", "histogram", "scale_shift", "scale_shift_grad_x", "scale_shift_grad_params")
    assert aotc.kernels.over(rowops.library) is rowops
    assert "softmax(x, *, y=None, dtype=None, stream=None)" in repr(rowops.layout("softmax"))
    assert rowops.softmax.layout is rowops.family("softmax").only is rowops.layout("softmax")
    assert {"softmax", "scan"} <= set(dir(rowops))


def test_names_python_reserves_get_no_generated_entry(tmp_path: Path) -> None:
    """C takes `lambda` as a parameter name and Python does not: that family is
    called through its Layout itself, with the same results and errors."""
    files = {
        "manifest.yaml": AXPY["manifest.yaml"].replace("alpha", "lambda"),
        "templates/axpy.cu.j2": AXPY["templates/axpy.cu.j2"].replace("alpha", "lambda"),
    }
    lib = declared_library(tmp_path, write_project(tmp_path / "project", files))
    kernels = aotc.kernels.over(aotc.load(lib, backend="emulator"))
    assert kernels.layout("axpy").entry is None
    x, y = np.ones((2, 3)), np.zeros((2, 3))
    kernels.axpy(x, y, **{"lambda": 3.0, "threads": 64})
    np.testing.assert_array_equal(y, np.full((2, 3), 3.0))
