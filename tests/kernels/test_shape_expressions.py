"""Shapes as sparse and ragged kernels need them (aotc/kernels/_decision.py):
an extent written as an expression of others (a CSR matrix's ``indptr`` of
``rows + 1``), and a caller's size tied to an array's (``cols`` equal to x's
length), through the ragged test package (tests/packages/ragged). A call that
breaks either is refused in one line naming the argument, before anything is
allocated or launched, on every route: NumPy, tensors, the ops' fake
implementation (meta tensors, torch.compile) and JAX."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from aotc.errors import ArgumentError
from conftest import aotc_env
from declared_support import ragged  # noqa: F401 - the fixture

RNG = np.random.default_rng(38)


def csr(rows: int, cols: int, dtype: Any = np.float64, density: float = 0.3) -> tuple[np.ndarray, ...]:
    """A random CSR matrix (indptr, indices, data) and its dense form."""
    dense = np.where(RNG.random((rows, cols)) < density, RNG.normal(size=(rows, cols)), 0).astype(dtype)
    nonzero = [np.flatnonzero(row) for row in dense]
    indptr = np.concatenate([[0], np.cumsum([len(n) for n in nonzero])]).astype(np.int32)
    indices = np.concatenate([*nonzero, np.zeros(0, np.int64)]).astype(np.int32)
    return indptr, indices, dense[dense != 0], dense


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("rows", "cols"), [(7, 5), (300, 41), (1, 1), (0, 3), (4, 0)])
def test_spmv_matches_the_dense_product(ragged: Any, dtype: Any, rows: int, cols: int) -> None:  # noqa: F811
    indptr, indices, data, dense = csr(rows, cols, dtype)
    x = RNG.normal(size=cols).astype(dtype)
    for _ in range(2):  # the full path, then the plan's
        y = ragged.spmv(indptr, indices, data, x, rows, cols)
        assert y.shape == (rows,) and y.dtype == dtype
        np.testing.assert_allclose(y, dense @ x, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


INDPTR, INDICES, DATA, DENSE = csr(3, 4)
X = np.arange(1.0, 5.0)

# (family, arrays, the caller's sizes, the one line it is refused with)
REFUSALS = [
    # indptr one entry short: before, the last row silently came back as its fill.
    ("spmv", (INDPTR[:3], INDICES, DATA, X), (3, 4), "spmv: indptr: shape (3,), but it needs rows + 1 = 4 (rows=3) where it has 3"),
    ("spmv", (INDPTR, INDICES, DATA, X), (2, 4), "spmv: indptr: shape (4,), but it needs rows + 1 = 3 (rows=2) where it has 4"),
    # x shorter (or longer) than the matrix's columns: before, its terms were silently dropped.
    ("spmv", (INDPTR, INDICES, DATA, X[:3]), (3, 4), "spmv: x: shape (3,) gives n=3, but cols is 4, which it must equal"),
    ("spmv", (INDPTR, INDICES, DATA, np.ones(5)), (3, 4), "spmv: x: shape (5,) gives n=5, but cols is 4, which it must equal"),
    ("spmv", (INDPTR, INDICES[:-1], DATA, X), (3, 4), f"spmv: data: shape ({len(DATA)},) gives nnz={len(DATA)}, but indices gave nnz={len(DATA) - 1}"),
    # Two arrays of one fixed dtype (i32): the second is refused for its own, never for "not matching" the first.
    ("spmv", (INDPTR, INDICES.astype(np.int64), DATA, X), (3, 4), "spmv: indices: dtype i64, but its kernels take i32 there"),
    ("segment_sum", (np.ones((5, 2)), np.zeros(3, np.int32)), (3,), "segment_sum: offsets: shape (3,), but it needs segments + 1 = 4 (segments=3) where it has 3"),
]
IDS = [f"{case[0]}-{i}" for i, case in enumerate(REFUSALS)]


@pytest.mark.parametrize(("family", "arrays", "sizes", "message"), REFUSALS, ids=IDS)
def test_numpy_calls_are_refused_naming_the_argument(ragged: Any, family: str, arrays: tuple[Any, ...], sizes: tuple[int, ...], message: str) -> None:  # noqa: F811
    with pytest.raises(ArgumentError) as info:
        getattr(ragged, family)(*arrays, *sizes)
    assert str(info.value) == message


def test_a_repeat_call_checks_the_tie_again(ragged: Any) -> None:  # noqa: F811
    """The caller's tied sizes are in the plan's key: a plan made with cols=4
    never answers a call with x of 4 and cols=3."""
    np.testing.assert_allclose(ragged.spmv(INDPTR, INDICES, DATA, X, 3, 4), DENSE @ X)
    np.testing.assert_allclose(ragged.spmv(INDPTR, INDICES, DATA, X, 3, 4), DENSE @ X)
    with pytest.raises(ArgumentError, match=r"^spmv: x: shape \(4,\) gives n=4, but cols is 3, which it must equal$"):
        ragged.spmv(INDPTR, INDICES, DATA, X, 3, 3)


@pytest.mark.parametrize(("family", "arrays", "sizes", "message"), REFUSALS, ids=IDS)
def test_tensor_calls_are_refused_naming_the_argument(ragged: Any, family: str, arrays: tuple[Any, ...], sizes: tuple[int, ...], message: str) -> None:  # noqa: F811
    torch = pytest.importorskip("torch")
    with pytest.raises(ArgumentError) as info:
        getattr(ragged, family)(*map(torch.from_numpy, arrays), *sizes)
    assert str(info.value) == message


@pytest.mark.parametrize(("family", "arrays", "sizes", "message"), REFUSALS, ids=IDS)
def test_the_fake_implementation_refuses_as_the_call_would(ragged: Any, family: str, arrays: tuple[Any, ...], sizes: tuple[int, ...], message: str) -> None:  # noqa: F811
    """The ops' fake implementation decides from the same declaration: the op
    on meta tensors is refused in the same line, and so is a compiled call."""
    torch = pytest.importorskip("torch")
    ragged.torch_ops()
    tensors = [torch.from_numpy(a) for a in arrays]
    with pytest.raises(ArgumentError) as info:
        getattr(torch.ops.ragged, family)(*(t.to("meta") for t in tensors), *sizes)
    assert str(info.value) == message
    compiled = torch.compile(lambda *t: getattr(ragged, family)(*t, *sizes), fullgraph=True, backend="aot_eager", dynamic=False)
    with pytest.raises(Exception) as traced:  # dynamo raises its own error, naming ours
        compiled(*tensors)
    assert message in str(traced.value), str(traced.value)[:3000]


def test_a_compiled_call_runs_the_kernel(ragged: Any) -> None:  # noqa: F811
    torch = pytest.importorskip("torch")
    step = torch.compile(lambda *t: ragged.spmv(*t, 3, 4) * 2, fullgraph=True, backend="aot_eager")
    got = step(*(torch.from_numpy(a) for a in (INDPTR, INDICES, DATA, X)))
    np.testing.assert_allclose(got.numpy(), 2 * (DENSE @ X))


@pytest.mark.parametrize(("family", "arrays", "sizes", "message"), REFUSALS, ids=IDS)
def test_jax_calls_are_refused_eagerly_and_under_jit(ragged: Any, family: str, arrays: tuple[Any, ...], sizes: tuple[int, ...], message: str) -> None:  # noqa: F811
    jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
    jax.config.update("jax_enable_x64", True)
    try:
        given = [jax.numpy.asarray(a) for a in arrays]
        with pytest.raises(ArgumentError) as eager:
            getattr(ragged, family)(*given, *sizes)
        assert str(eager.value) == message
        with pytest.raises(ArgumentError) as jitted:
            jax.jit(lambda *t: getattr(ragged, family)(*t, *sizes))(*given)
        assert str(jitted.value).splitlines()[0] == message
        y = jax.jit(lambda *t: ragged.spmv(*t, 3, 4))(*(jax.numpy.asarray(a) for a in (INDPTR, INDICES, DATA, X)))
        np.testing.assert_allclose(np.asarray(y), DENSE @ X)
    finally:
        jax.config.update("jax_enable_x64", False)


def test_segment_sums_and_an_empty_call_still_fills(ragged: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """segment_sum's grid runs over the values: with none it launches nothing,
    and the sums are still their declared fill, zeros."""
    values = RNG.normal(size=(6, 3))
    offsets = np.array([0, 2, 2, 5], np.int32)  # row 5 is in no segment
    want = np.stack([values[0:2].sum(0), np.zeros(3), values[2:5].sum(0)])
    np.testing.assert_allclose(ragged.segment_sum(values, offsets, 3), want, rtol=1e-12)
    from aotc.runtime.launcher import Launcher

    launches: list[Any] = []
    launch_at = Launcher.launch_at
    monkeypatch.setattr(Launcher, "launch_at", lambda self, grid, *args, **kwargs: launches.append(grid) or launch_at(self, grid, *args, **kwargs))
    for out in (None, np.full((3, 3), np.nan)):
        got = ragged.segment_sum(np.zeros((0, 3)), np.zeros(4, np.int32), 3, sums=out)
        np.testing.assert_array_equal(got, np.zeros((3, 3)))
    assert launches == []
    ragged.layout("segment_sum").plans.clear()  # the full path again: it launches once
    np.testing.assert_allclose(ragged.segment_sum(values, offsets, 3), want, rtol=1e-12)
    assert launches == [(1, 1, 1)]


def test_an_out_array_sized_by_an_expression(ragged: Any) -> None:  # noqa: F811
    """offsets' result holds lengths + 1 entries; its grid is one block whatever
    the lengths (the declaration says so), so even no lengths launch it."""
    np.testing.assert_array_equal(ragged.offsets(np.array([2, 0, 3], np.int32)), [0, 2, 2, 5])
    np.testing.assert_array_equal(ragged.offsets(np.zeros(0, np.int32)), [0])
    with pytest.raises(ArgumentError, match=r"^offsets: starts: expected shape \(4,\) and dtype i32, got \(3,\) and i32$"):
        ragged.offsets(np.array([2, 0, 3], np.int32), starts=np.zeros(3, np.int32))


CHECKED = """
import numpy as np, aotc, aotc.kernels
kernels = aotc.kernels.over(aotc.load({lib!r}, backend="emulator"))
indptr, indices, data = np.array([0, 2, 3, 5], np.int32), np.array([0, 2, 1, 0, 3], np.int32), np.arange(1.0, 6.0)
print(kernels.spmv(indptr, indices, data, np.array([1.0, 10, 100, 1000]), 3, 4).tolist())
print(kernels.segment_sum(np.arange(12.0).reshape(6, 2), np.array([0, 2, 2, 5], np.int32), 3).tolist())
print(kernels.offsets(np.array([2, 0, 3], np.int32)).tolist())
"""


def test_the_kernels_pass_every_emulator_check(ragged: Any, tmp_path: Any) -> None:  # noqa: F811
    """Under AOTC_EMULATOR_CHECK=all (its memory check with AddressSanitizer
    loaded first): every access of the sparse and ragged kernels stays in bounds."""
    from aotc.runtime.emulator.checks import asan_environment

    lib = ragged.layout("spmv").library.folder
    env = aotc_env({**asan_environment(), "AOTC_EMULATOR_CHECK": "all", "AOTC_BACKEND": "emulator", "AOTC_CACHE_DIR": str(tmp_path / "cache")})
    done = subprocess.run([sys.executable, "-c", CHECKED.format(lib=str(lib))], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["[201.0, 30.0, 5004.0]", "[[2.0, 4.0], [0.0, 0.0], [18.0, 21.0]]", "[0, 2, 2, 5]"]
