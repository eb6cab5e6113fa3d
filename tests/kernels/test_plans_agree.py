"""A repeat call's plan answers every call as the full path would.

A plan is found by a key of what the full path's decision read
(``aotc.kernels._keys``). A key that misses one such input replays another
call's plan: a result of the wrong shape or dtype, a write into the wrong
bytes, or a refusal skipped (a caller's size left out of the tensor route's
key gave a second ``topk(x, k)`` the first call's width). So each function's
call here is varied one input at a time, in ways that keep its values
(Fortran order, a stride, a negative stride, another dtype, one more or no
rows, a read-only out, a caller's size, an axis or a stream changed). For
pairs of calls (first, then), the base call before and after each other and
each before the next, the second is made twice: after the first left its
plan, and again with every plan dropped, down the full path. The two
outcomes must agree: the arrays returned and written, or the refusal's class
and line. NumPy arrays, CPU tensors and arrays that offer only DLPack, on the
emulator.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from arrays.arrays_support import DLPackOnly

from aotc.errors import AotcError
from declared_support import axpy, badd, ragged, rowops  # noqa: F401 - the fixtures

torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

RNG = np.random.default_rng(3801)


def normal(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.normal(size=shape).astype(dtype)


# -- the variations: each keeps an array's values, or changes one input -------------


def fortran(a: np.ndarray) -> np.ndarray:
    return np.asfortranarray(a)


def strided(a: np.ndarray) -> np.ndarray:
    """The same values every other element of a wider array (last axis)."""
    return np.repeat(a, 2, axis=-1)[..., ::2]


def reversed_view(a: np.ndarray) -> np.ndarray:
    """The same values, read backwards from the end of a reversed copy (a negative stride)."""
    return np.flip(np.flip(a, -1).copy(), -1)


def other_dtype(a: np.ndarray) -> np.ndarray:
    return a.astype({np.dtype(np.float32): np.float64, np.dtype(np.float64): np.float32}.get(a.dtype, np.int64))


def one_more_row(a: np.ndarray) -> np.ndarray:
    """A last row (or entry) repeated: indices and offsets stay valid."""
    return np.concatenate([a, a[-1:]]) if len(a) else a


def no_rows(a: np.ndarray) -> np.ndarray:
    return a[:0]


def read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


ARRAY_CHANGES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "fortran": fortran, "strided": strided, "reversed": reversed_view, "dtype": other_dtype,
    "one more row": one_more_row, "no rows": no_rows,
}  # fmt: skip


Call = Callable[[], dict[str, Any]]


def made(base: dict[str, Any], **changes: Callable[[Any], Any]) -> Call:
    """A call building ``base``'s arguments anew each time (arrays copied), each
    of ``changes`` applied to its argument: a call's written arrays are its own."""

    def build() -> dict[str, Any]:
        arguments = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in base.items()}
        return {k: changes[k](v) if k in changes else v for k, v in arguments.items()}

    return build


def variations(base: dict[str, Any], sizes: dict[str, list[Any]], written: tuple[str, ...] = ()) -> dict[str, Call]:
    """``base`` (argument name -> value) and each call one change away from it:
    every array changed each way, each written array read-only, and each of
    ``sizes`` (a caller's size or an axis) set to each of its other values."""
    calls = {"base": made(base)}
    for name, value in base.items():
        if isinstance(value, np.ndarray):
            for how, change in ARRAY_CHANGES.items():
                if value.ndim >= 2 or how != "fortran":
                    calls[f"{name} {how}"] = made(base, **{name: change})
            if name in written:
                calls[f"{name} read-only"] = made(base, **{name: read_only})
    for name, values in sizes.items():
        for value in values:
            calls[f"{name}={value!r}"] = made({**base, name: value})
    return calls


# -- one call's outcome ----------------------------------------------------------------


def as_numpy(value: Any) -> Any:
    if type(value).__module__.startswith("jax"):
        return np.asarray(value)
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    if isinstance(value, DLPackOnly) or hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    return value


def tensors(call: dict[str, Any]) -> dict[str, Any] | None:
    """``call`` with CPU tensors for its arrays; None where PyTorch cannot view
    one (a negative stride) or would not keep it read-only."""
    if any(isinstance(v, np.ndarray) and (any(s < 0 for s in v.strides) or not v.flags.writeable) for v in call.values()):
        return None
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in call.items()}


def dlpack(call: dict[str, Any]) -> dict[str, Any] | None:
    """``call`` with arrays that offer only DLPack (as JAX's and TensorFlow's do);
    None where one is read-only (NumPy exports no read-only array)."""
    if any(isinstance(v, np.ndarray) and not v.flags.writeable for v in call.values()):
        return None
    return {k: DLPackOnly(v) if isinstance(v, np.ndarray) else v for k, v in call.items()}


def outcome(function: Any, call: Call, route: str) -> Any:
    """What ``function(**call())`` gives on ``route``: the arrays returned and every
    array argument after it (inout ones written), or the refusal's class and line."""
    arguments = call()
    if route == "jax":
        import jax.numpy as jnp

        arguments = {k: jnp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in arguments.items()}
    elif route != "numpy":
        arguments = tensors(arguments) if route == "tensor" else dlpack(arguments)
        if arguments is None:
            return f"no {route} view"
    try:
        result = function(**arguments)
    except AotcError as error:
        return (type(error).__name__, str(error))
    returned = result if isinstance(result, tuple) else (result,)
    arrays = [as_numpy(v) for v in (*returned, *arguments.values()) if hasattr(v, "shape") or isinstance(v, DLPackOnly)]
    return [(a.shape, a.dtype.str, a.tobytes(order="C")) for a in arrays]


def drop_plans(bound: Any) -> None:
    """Drop every plan of ``bound``'s layouts: a library's bindings, or tropical's API over one."""
    layouts = bound._layouts if hasattr(bound, "_layouts") else bound.family.layouts  # noqa: SLF001 - every layout made so far
    for layout in layouts.values():
        layout.plans.clear()


def pairs(names: list[str]) -> list[tuple[str, str]]:
    """The ordered pairs of calls to try: the base call before and after each
    other (one input apart), and each call before the next (two apart)."""
    others = names[1:]
    return [*((names[0], n) for n in others), *((n, names[0]) for n in others), *pairwise(others)]


def disagreements(bound: Any, function: Any, calls: dict[str, Call], route: str) -> list[str]:
    """Each pair (first, then) of ``calls`` whose second call answers otherwise
    after the first left its plan than down the full path."""
    wrong = []
    full = {}
    for name, call in calls.items():
        drop_plans(bound)
        full[name] = outcome(function, call, route)
    for first, then in pairs(list(calls)):
        drop_plans(bound)
        outcome(function, calls[first], route)
        planned = outcome(function, calls[then], route)
        if planned != full[then]:
            shown = planned if isinstance(planned, tuple) else [(s, d) for s, d, _ in planned]
            wrong.append(f"{first} -> {then}: {shown!r}")
    return wrong


# -- the functions ---------------------------------------------------------------------------

ROUTES = ["numpy", "tensor", "dlpack", "jax"]


@pytest.fixture(autouse=True)
def jax_x64(request: pytest.FixtureRequest) -> Any:
    """JAX with 64-bit types, for the tests of its route (f64 arrays stay f64)."""
    if request.node.callspec.params.get("route") != "jax":
        yield
        return
    jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("route", ROUTES)
def test_rowops_histogram_a_callers_size_and_dtype_typed_scalars(rowops: Any, route: str) -> None:  # noqa: F811
    base = {"x": normal(3, 40), "bins": 4, "lo": -1.0, "hi": 1.0}
    calls = variations(base, {"bins": [5, 1], "lo": [-2, 0.5], "stream": [0]})
    assert disagreements(rowops, rowops.histogram, calls, route) == []


@pytest.mark.parametrize("route", ROUTES)
def test_rowops_softmax_an_optional_batch_and_an_out(rowops: Any, route: str) -> None:  # noqa: F811
    x = normal(2, 3, 5)
    base = {"x": x, "out": np.empty_like(x)} if route == "numpy" else {"x": x}
    calls = variations(base, {}, written=("out",))
    calls["batch left out"] = made({"x": x[0]})
    assert disagreements(rowops, rowops.softmax, calls, route) == []


@pytest.mark.parametrize("route", ROUTES)
def test_ragged_spmv_an_expression_and_a_tied_size(ragged: Any, route: str) -> None:  # noqa: F811
    dense = np.where(RNG.random((4, 5)) < 0.4, RNG.normal(size=(4, 5)), 0)
    rows = [np.flatnonzero(row) for row in dense]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int32)
    base = {"indptr": indptr, "indices": np.concatenate(rows).astype(np.int32), "data": dense[dense != 0], "x": normal(5, dtype=np.float64), "rows": 4, "cols": 5}
    calls = variations(base, {"rows": [3, 5], "cols": [4, 6]})
    assert disagreements(ragged, ragged.spmv, calls, route) == []


@pytest.mark.parametrize("route", ROUTES)
def test_ragged_segment_sum_offsets_and_an_empty_input(ragged: Any, route: str) -> None:  # noqa: F811
    base = {"values": normal(6, 3, dtype=np.float64), "offsets": np.array([0, 2, 2, 6], np.int32), "segments": 3}
    calls = variations(base, {"segments": [2, 4]})
    assert disagreements(ragged, ragged.segment_sum, calls, route) == []


@pytest.mark.parametrize("route", ROUTES)
def test_axpy_an_inout_array_an_axis_and_a_float_scalar(axpy: Any, route: str) -> None:  # noqa: F811
    base = {"x": normal(3, 4), "y": normal(3, 4), "alpha": 0.5}
    calls = variations(base, {"alpha": [2, -1.5], "threads": [64, 128]}, written=("y",))
    assert disagreements(axpy, axpy.axpy, calls, route) == []


@pytest.mark.parametrize("route", ROUTES)
def test_badd_declared_strides_and_a_broadcast_bias(badd: Any, route: str) -> None:  # noqa: F811
    base = {"x": normal(2, 3, 4, dtype=np.float64), "bias": normal(2, 4, dtype=np.float64)}
    calls = variations(base, {})
    calls["bias broadcast"] = made({**base, "bias": normal(4, dtype=np.float64)})
    assert disagreements(badd, badd.badd, calls, route) == []


@pytest.mark.parametrize("route", ROUTES)
def test_tropical_matmul_semirings_dtypes_and_an_out(tropical_on_emulator: None, route: str) -> None:
    """The module's function, whose repeat call asks the forward guard itself."""
    from aotc import tropical

    api = tropical._api()  # noqa: SLF001 - the handle the module's functions use
    a, b = normal(4, 3), normal(3, 5)
    base = {"a": a, "b": b, "out": np.empty((4, 5), np.float32)} if route == "numpy" else {"a": a, "b": b}
    calls = variations(base, {"semiring": ["minplus", "maxmul"], "stream": [0]}, written=("out",))
    calls["batched"] = made({"a": normal(2, 4, 3), "b": normal(2, 3, 5)})
    assert disagreements(api, tropical.matmul, calls, route) == []
