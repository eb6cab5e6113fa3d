"""Tests for aotc/reference.py: every expected array below was worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from aotc.reference import (
    KSTAR_DTYPE,
    SEMIRINGS,
    Semiring,
    matmul,
    matmul_argmax,
    matmul_backward,
    matmul_backward_a,
    matmul_backward_b,
    semiring_from_ops,
)

INF, NAN = np.inf, np.nan
NUMERIC = ["float32", "float64", "int32", "int64"]
FLOATS = ["float32", "float64"]
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
BOTTLENECK = semiring_from_ops("max", "min", "-inf", "+inf")


def check(actual: np.ndarray, expected: object, dtype: str) -> None:
    """Same dtype and same values, NaN matching NaN."""
    assert actual.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(actual, np.asarray(expected, dtype=dtype), strict=True)


def run(a: object, b: object, semiring: str | Semiring, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    return matmul_argmax(np.asarray(a, dtype=dtype), np.asarray(b, dtype=dtype), semiring)


# --- every semiring on plain values -------------------------------------------------


@pytest.mark.parametrize("dtype", NUMERIC)
def test_maxplus(dtype: str) -> None:
    c, kstar = run([[1, 2], [3, 0]], [[0, 5], [4, -1]], "maxplus", dtype)
    check(c, [[6, 6], [4, 8]], dtype)
    check(kstar, [[1, 0], [1, 0]], "int32")


@pytest.mark.parametrize("dtype", NUMERIC)
def test_minplus(dtype: str) -> None:
    c, kstar = run([[1, 2], [3, 0]], [[0, 5], [4, -1]], "minplus", dtype)
    check(c, [[1, 1], [3, -1]], dtype)
    check(kstar, [[0, 1], [0, 1]], "int32")


@pytest.mark.parametrize("dtype", NUMERIC)
def test_maxmul_with_negative_inputs(dtype: str) -> None:
    c, kstar = run([[-2, 3]], [[-4, 1], [1, -1]], "maxmul", dtype)
    check(c, [[8, -2]], dtype)
    check(kstar, [[0, 0]], "int32")


def test_andor() -> None:
    t, f = True, False
    c, kstar = run([[t, f], [f, f], [t, t]], [[f, t], [t, t]], "andor", "bool")
    check(c, [[f, t], [f, f], [t, t]], "bool")
    check(kstar, [[-1, 0], [-1, -1], [1, 0]], "int32")


@pytest.mark.parametrize("dtype", NUMERIC)
def test_counting_adds_counts_on_a_tie(dtype: str) -> None:
    a = [[(1, 2), (2, 3)]]
    b = [[(2, 1), (0, 1)], [(1, 5), (3, 1)]]
    c, kstar = run(a, b, "counting", dtype)
    check(c, [[(3, 17), (5, 3)]], dtype)
    check(kstar, [[0, 1]], "int32")


@pytest.mark.parametrize("dtype", NUMERIC)
def test_bottleneck_from_ops(dtype: str) -> None:
    c, kstar = run([[3, 7], [5, 2]], [[5, 1], [4, 9]], BOTTLENECK, dtype)
    check(c, [[4, 7], [5, 2]], dtype)
    check(kstar, [[1, 1], [0, 1]], "int32")


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_minmax_from_ops(dtype: str) -> None:
    minmax = semiring_from_ops("min", "max", "+inf", "-inf")
    c, kstar = run([[3, 7], [5, 2]], [[5, 1], [4, 9]], minmax, dtype)
    check(c, [[5, 3], [4, 5]], dtype)
    check(kstar, [[0, 0], [1, 0]], "int32")


def test_min_plus_counting_from_ops() -> None:
    minplus_counting = semiring_from_ops("min", "add", "+inf", "0", counting=True)
    c, kstar = run([[(1, 2), (2, 3)]], [[(2, 1), (0, 1)], [(1, 5), (3, 1)]], minplus_counting, "float64")
    check(c, [[(3, 17), (1, 2)]], "float64")
    check(kstar, [[0, 0]], "int32")


def test_boolean_from_ops_matches_andor() -> None:
    boolean = semiring_from_ops("or", "and", "false", "true")
    c, kstar = run([[False, True]], [[True], [True]], boolean, "bool")
    check(c, [[True]], "bool")
    check(kstar, [[1]], "int32")


def test_builtin_semirings_equal_their_descriptions() -> None:
    assert set(SEMIRINGS) == {"maxplus", "minplus", "maxmul", "andor", "counting"}
    assert SEMIRINGS["maxplus"] == semiring_from_ops("max", "add", "-inf", "0", name="maxplus")
    assert BOTTLENECK.name == "max-min"
    assert hash(BOTTLENECK) == hash(semiring_from_ops("max", "min", "-inf", "+inf"))


def test_semiring_object_is_accepted() -> None:
    check(matmul(np.array([[1.0]]), np.array([[2.0]]), SEMIRINGS["maxmul"]), [[2.0]], "float64")


# --- K = 0, K = 1, odd shapes and layouts -----------------------------------------


@pytest.mark.parametrize(
    ("semiring", "dtype", "zero"),
    [
        ("maxplus", "float32", -INF),
        ("maxplus", "int32", I32_MIN),
        ("maxplus", "int64", I64_MIN),
        ("minplus", "float64", INF),
        ("minplus", "int32", I32_MAX),
        ("minplus", "int64", I64_MAX),
        ("maxmul", "float64", -INF),
        ("maxmul", "int64", I64_MIN),
        ("andor", "bool", False),
        (BOTTLENECK, "int32", I32_MIN),
    ],
)
def test_k0_gives_zero_and_no_kstar(semiring: str | Semiring, dtype: str, zero: object) -> None:
    c, kstar = matmul_argmax(np.zeros((2, 0), dtype=dtype), np.zeros((0, 3), dtype=dtype), semiring)
    check(c, [[zero, zero, zero], [zero, zero, zero]], dtype)
    check(kstar, [[-1, -1, -1], [-1, -1, -1]], "int32")


@pytest.mark.parametrize(("dtype", "zero"), [("float32", -INF), ("int64", I64_MIN)])
def test_counting_k0_gives_zero(dtype: str, zero: object) -> None:
    c, kstar = matmul_argmax(np.zeros((1, 0, 2), dtype=dtype), np.zeros((0, 2, 2), dtype=dtype), "counting")
    check(c, [[(zero, 0), (zero, 0)]], dtype)
    check(kstar, [[-1, -1]], "int32")


def test_k1() -> None:
    c, kstar = run([[1], [2]], [[10, 20]], "maxplus", "float32")
    check(c, [[11, 21], [12, 22]], "float32")
    check(kstar, [[0, 0], [0, 0]], "int32")


def test_m_and_n_of_one_with_ragged_k() -> None:
    c, kstar = run([[0, 1, 2], [5, -5, 0]], [[1], [1], [-3]], "maxplus", "int32")
    check(c, [[2], [6]], "int32")
    check(kstar, [[1], [0]], "int32")


def test_transposed_and_strided_inputs() -> None:
    a = np.array([[1.0, 3.0], [2.0, 0.0]]).T
    b = np.array([[0.0, 99.0, 5.0], [4.0, 99.0, -1.0]])[:, ::2]
    c, kstar = matmul_argmax(a, b, "maxplus")
    check(c, [[6, 6], [4, 8]], "float64")
    check(kstar, [[1, 0], [1, 0]], "int32")


def test_nested_lists_are_accepted() -> None:
    check(matmul([[1.0, 2.0]], [[3.0], [0.5]], "maxplus"), [[4.0]], "float64")


# --- ties, infinities and NaN -----------------------------------------------------


@pytest.mark.parametrize(
    ("semiring", "a", "b", "c", "kstar"),
    [
        ("maxplus", [[1, 2, 0]], [[2], [1], [3]], [[3]], [[0]]),
        ("maxplus", [[0, 1, 1]], [[0], [2], [2]], [[3]], [[1]]),
        ("minplus", [[5, 1, 0]], [[-4], [0], [1]], [[1]], [[0]]),
        ("maxmul", [[-2, 2, 1]], [[-2], [2], [4]], [[4]], [[0]]),
    ],
)
def test_ties_go_to_the_smallest_k(semiring: str, a: list, b: list, c: list, kstar: list) -> None:
    got_c, got_kstar = run(a, b, semiring, "float64")
    check(got_c, c, "float64")
    check(got_kstar, kstar, "int32")


def test_counting_tie_sums_three_terms() -> None:
    c, kstar = run([[(1, 1), (0, 2), (2, 3)]], [[(1, 4)], [(2, 5)], [(0, 6)]], "counting", "int32")
    check(c, [[(2, 32)]], "int32")
    check(kstar, [[0]], "int32")


@pytest.mark.parametrize("semiring", ["maxplus", "minplus", "maxmul", BOTTLENECK])
@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_propagates_and_kstar_is_the_first_nan(semiring: str | Semiring, dtype: str) -> None:
    c, kstar = run([[1, NAN, 5, NAN], [NAN, 2, 3, 4]], [[1], [1], [1], [1]], semiring, dtype)
    check(c, [[NAN], [NAN]], dtype)
    check(kstar, [[1], [0]], "int32")


@pytest.mark.parametrize(
    ("semiring", "a", "b", "c", "kstar"),
    [
        ("maxplus", [[-INF, 3]], [[INF], [1]], [[NAN]], [[0]]),  # -inf + inf = nan
        ("minplus", [[2, INF]], [[0], [-INF]], [[NAN]], [[1]]),
        ("maxmul", [[0, 2]], [[INF], [1]], [[NAN]], [[0]]),  # 0 * inf = nan
        ("maxmul", [[-INF, 100]], [[-2], [1]], [[INF]], [[0]]),  # -inf * -2 = inf
        ("maxmul", [[-INF]], [[2]], [[-INF]], [[-1]]),
        ("maxplus", [[-INF, -INF]], [[1], [-INF]], [[-INF]], [[-1]]),
        ("maxplus", [[INF, 0]], [[1], [5]], [[INF]], [[0]]),
        ("minplus", [[INF, 1]], [[0], [INF]], [[INF]], [[-1]]),
        ("minplus", [[5, -INF]], [[0], [-INF]], [[-INF]], [[1]]),
        ("maxplus", [[3e38, 0]], [[3e38], [1]], [[INF]], [[0]]),  # float32 overflow
    ],
)
def test_float_infinities(semiring: str, a: list, b: list, c: list, kstar: list) -> None:
    got_c, got_kstar = run(a, b, semiring, "float32")
    check(got_c, c, "float32")
    check(got_kstar, kstar, "int32")


def test_counting_float_specials() -> None:
    nan_c, nan_k = run([[(NAN, 1), (1, 1)]], [[(0, 1)], [(5, 1)]], "counting", "float64")
    check(nan_c, [[(NAN, NAN)]], "float64")
    check(nan_k, [[0]], "int32")
    # A value of -inf is the zero whatever count it carries.
    zero_c, zero_k = run([[(-INF, 4), (1, 1)]], [[(2, 3)], [(-INF, 0)]], "counting", "float64")
    check(zero_c, [[(-INF, 0)]], "float64")
    check(zero_k, [[-1]], "int32")


# --- integers: extremes, absorption, saturation -----------------------------------


@pytest.mark.parametrize(
    ("semiring", "dtype", "a", "b", "c", "kstar"),
    [
        ("maxplus", "int32", [[2**31 - 10]], [[100]], [[I32_MAX]], [[0]]),
        ("maxplus", "int32", [[I32_MIN]], [[I32_MAX]], [[I32_MIN]], [[-1]]),  # lowest absorbs
        ("maxplus", "int32", [[I32_MIN, 0]], [[I32_MAX], [-5]], [[-5]], [[1]]),
        ("maxplus", "int32", [[I32_MIN + 5]], [[-100]], [[I32_MIN]], [[-1]]),  # saturates onto zero
        ("maxplus", "int32", [[I32_MAX]], [[I32_MAX]], [[I32_MAX]], [[0]]),
        ("maxplus", "int64", [[I64_MAX]], [[1]], [[I64_MAX]], [[0]]),
        ("maxplus", "int64", [[I64_MIN]], [[I64_MAX]], [[I64_MIN]], [[-1]]),
        ("maxplus", "int64", [[2**62 + 1]], [[2**62]], [[I64_MAX]], [[0]]),
        ("maxplus", "int64", [[2**53 + 1]], [[0]], [[2**53 + 1]], [[0]]),  # no float round trip
        ("minplus", "int32", [[I32_MAX, 3]], [[-100], [4]], [[7]], [[1]]),  # highest absorbs
        ("minplus", "int32", [[I32_MAX]], [[-100]], [[I32_MAX]], [[-1]]),
        ("minplus", "int32", [[I32_MIN]], [[10]], [[I32_MIN + 10]], [[0]]),  # lowest is no zero here
        ("minplus", "int32", [[I32_MIN + 1]], [[-5]], [[I32_MIN]], [[0]]),
        ("minplus", "int64", [[I64_MAX - 1]], [[5]], [[I64_MAX]], [[-1]]),
        ("maxmul", "int32", [[65536]], [[65536]], [[I32_MAX]], [[0]]),
        ("maxmul", "int32", [[65536]], [[-65536]], [[I32_MIN]], [[-1]]),
        ("maxmul", "int32", [[I32_MIN, 3]], [[-1], [-2]], [[-6]], [[1]]),  # not -lowest
        ("maxmul", "int32", [[0, -1]], [[I32_MAX], [5]], [[0]], [[0]]),
        ("maxmul", "int64", [[2**31]], [[2**31]], [[2**62]], [[0]]),
        ("maxmul", "int64", [[2**62 + 1]], [[1]], [[2**62 + 1]], [[0]]),
        ("maxmul", "int64", [[2**32]], [[2**32]], [[I64_MAX]], [[0]]),
        ("maxmul", "int64", [[2**32]], [[-(2**32)]], [[I64_MIN]], [[-1]]),
        ("maxmul", "int64", [[I64_MIN]], [[-1]], [[I64_MIN]], [[-1]]),
        (BOTTLENECK, "int32", [[I32_MIN, 4]], [[9], [2]], [[2]], [[1]]),
    ],
)
def test_integer_extremes(semiring: str, dtype: str, a: list, b: list, c: list, kstar: list) -> None:
    got_c, got_kstar = run(a, b, semiring, dtype)
    check(got_c, c, dtype)
    check(got_kstar, kstar, "int32")


@pytest.mark.parametrize(
    ("a", "b", "c", "kstar"),
    [
        ([[(0, 70000)]], [[(0, 70000)]], [[(0, I32_MAX)]], [[0]]),  # count product saturates
        ([[(0, I32_MAX), (0, 1)]], [[(0, 1)], [(0, 1)]], [[(0, I32_MAX)]], [[0]]),  # tie sum saturates
        ([[(2**31 - 10, 1)]], [[(100, 3)]], [[(I32_MAX, 3)]], [[0]]),
        ([[(I32_MIN, 5)]], [[(100, 1)]], [[(I32_MIN, 0)]], [[-1]]),  # lowest value absorbs
    ],
)
def test_counting_int32_extremes(a: list, b: list, c: list, kstar: list) -> None:
    got_c, got_kstar = run(a, b, "counting", "int32")
    check(got_c, c, "int32")
    check(got_kstar, kstar, "int32")


# --- batches ----------------------------------------------------------------------


def test_batched_a_with_broadcast_b() -> None:
    c, kstar = run([[[0, 1]], [[5, 0]]], [[0, 10], [3, 0]], "maxplus", "float64")
    check(c, [[[4, 10]], [[5, 15]]], "float64")
    check(kstar, [[[1, 0]], [[0, 0]]], "int32")


def test_broadcast_a_with_batched_b() -> None:
    c, kstar = run([[0, 1]], [[[0], [3]], [[2], [-5]]], "maxplus", "int64")
    check(c, [[[4]], [[2]]], "int64")
    check(kstar, [[[1]], [[0]]], "int32")


def test_both_batched() -> None:
    c, kstar = run([[[1, 2]], [[3, 4]]], [[[1], [0]], [[0], [1]]], "minplus", "int32")
    check(c, [[[2]], [[3]]], "int32")
    check(kstar, [[[0]], [[0]]], "int32")


def test_batched_counting() -> None:
    c, kstar = run([[[(1, 2)]], [[(3, 3)]]], [[(1, 5)]], "counting", "float32")
    check(c, [[[(2, 10)]], [[(4, 15)]]], "float32")
    check(kstar, [[[0]], [[0]]], "int32")


def test_batched_k0() -> None:
    c, kstar = matmul_argmax(np.zeros((3, 1, 0)), np.zeros((0, 2)), "minplus")
    check(c, [[[INF, INF]], [[INF, INF]], [[INF, INF]]], "float64")
    check(kstar, [[[-1, -1]], [[-1, -1]], [[-1, -1]]], "int32")


# --- backward ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_maxplus_backward_accumulates_repeated_kstar(dtype: str) -> None:
    a = np.array([[0, 5], [1, 0]], dtype=dtype)
    b = np.array([[0, 0, 9], [1, 1, 0]], dtype=dtype)
    kstar = np.array([[1, 1, 0], [0, 0, 0]], dtype=np.int32)
    check(matmul_argmax(a, b, "maxplus")[1], kstar, "int32")
    grad_c = np.array([[1, 2, 4], [8, 16, 32]], dtype=dtype)
    check(matmul_backward_a(grad_c, kstar, a, b, "maxplus"), [[4, 3], [56, 0]], dtype)
    check(matmul_backward_b(grad_c, kstar, a, b, "maxplus"), [[8, 16, 36], [1, 2, 0]], dtype)


def test_minplus_backward_skips_kstar_minus_one() -> None:
    a = np.array([[INF, 1.0]])
    b = np.array([[0.0, 2.0], [INF, 3.0]])
    kstar = np.array([[-1, 1]], dtype=np.int64)
    check(matmul_argmax(a, b, "minplus")[1], kstar, "int32")
    grad_a, grad_b = matmul_backward(np.array([[5.0, 7.0]]), kstar, a, b, "minplus")
    check(grad_a, [[0, 7]], "float64")
    check(grad_b, [[0, 0], [0, 7]], "float64")


def test_maxmul_backward_multiplies_by_the_other_operand() -> None:
    a = np.array([[2, -3]], dtype="float32")
    b = np.array([[4, 1], [-5, 2]], dtype="float32")
    kstar = np.array([[1, 0]], dtype=np.int32)
    check(matmul_argmax(a, b, "maxmul")[1], kstar, "int32")
    grad_c = np.array([[1, 10]], dtype="float32")
    check(matmul_backward_a(grad_c, kstar, a, b, "maxmul"), [[10, -5]], "float32")
    check(matmul_backward_b(grad_c, kstar, a, b, "maxmul"), [[0, 20], [-3, 0]], "float32")


def test_maxmul_backward_follows_ieee() -> None:
    a, b = np.array([[INF]]), np.array([[0.0]])
    grad_a, grad_b = matmul_backward(np.array([[1.0]]), np.array([[0]]), a, b, "maxmul")
    check(grad_a, [[0.0]], "float64")
    check(grad_b, [[INF]], "float64")
    grad_a, grad_b = matmul_backward(np.array([[0.0]]), np.array([[0]]), a, b, "maxmul")
    check(grad_b, [[NAN]], "float64")  # 0 * inf


def test_backward_of_a_broadcast_operand_sums_over_the_batch() -> None:
    a = np.array([[0.0, 1.0]])
    b = np.array([[[0.0], [3.0]], [[2.0], [-5.0]]])
    kstar = np.array([[[1]], [[0]]], dtype=np.int32)
    grad_c = np.array([[[3.0]], [[5.0]]])
    check(matmul_backward_a(grad_c, kstar, a, b, "maxplus"), [[5, 3]], "float64")
    check(matmul_backward_b(grad_c, kstar, a, b, "maxplus"), [[[0], [3]], [[5], [0]]], "float64")


def test_backward_of_two_batched_operands_keeps_the_batches_apart() -> None:
    a, b = np.array([[[1.0]], [[2.0]]]), np.array([[[3.0]], [[4.0]]])
    kstar, grad_c = np.zeros((2, 1, 1), dtype=np.int32), np.ones((2, 1, 1))
    grad_a, grad_b = matmul_backward(grad_c, kstar, a, b, "maxmul")
    check(grad_a, [[[3]], [[4]]], "float64")
    check(grad_b, [[[1]], [[2]]], "float64")


def test_backward_with_k0_is_empty() -> None:
    a, b = np.zeros((2, 0)), np.zeros((0, 3))
    grad_a, grad_b = matmul_backward(np.ones((2, 3)), np.full((2, 3), -1), a, b, "maxplus")
    assert grad_a.shape == (2, 0)
    assert grad_b.shape == (0, 3)


# --- an independent brute-force oracle on small random inputs ---------------------


def brute_force(a: np.ndarray, b: np.ndarray, add: str, mul: str) -> tuple[list, list]:
    """Plain Python loops; the inputs are chosen so that no term is NaN."""
    better = {"max": lambda x, y: x > y, "min": lambda x, y: x < y}[add]
    times = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y}[mul]
    zero = -INF if add == "max" else INF
    c = [[zero] * b.shape[1] for _ in range(a.shape[0])]
    kstar = [[-1] * b.shape[1] for _ in range(a.shape[0])]
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            for k in range(a.shape[1]):
                term = times(float(a[i, k]), float(b[k, j]))
                if better(term, c[i][j]):
                    c[i][j], kstar[i][j] = term, k
    return c, kstar


@pytest.mark.parametrize("semiring", ["maxplus", "minplus", "maxmul"])
def test_matches_brute_force_on_random_ties(semiring: str) -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, size=(9, 13)).astype(np.float64)
    b = rng.integers(-3, 4, size=(13, 11)).astype(np.float64)
    if semiring == "maxplus":
        a[rng.random(a.shape) < 0.2] = -INF
        b[:, 3] = -INF  # a column where every term is the zero
    if semiring == "maxmul":
        a[a == 0], b[b == 0] = 2.0, -1.0  # keeps -inf * 0 out
        a[rng.random(a.shape) < 0.2] = -INF
    sr = SEMIRINGS[semiring]
    c, kstar = matmul_argmax(a, b, semiring)
    expected_c, expected_kstar = brute_force(a, b, sr.add, sr.mul)
    check(c, expected_c, "float64")
    check(kstar, expected_kstar, "int32")


# --- dtypes and errors ------------------------------------------------------------


def test_kstar_dtype_is_int32() -> None:
    assert KSTAR_DTYPE == np.dtype(np.int32)


@pytest.mark.parametrize(
    ("a", "b", "semiring", "message"),
    [
        (np.zeros((2, 2)), np.zeros((2, 2)), "plusmax", r"^semiring: unknown semiring 'plusmax' \(known: maxplus, "),
        (np.zeros((2, 2)), np.zeros((2, 2)), 3, r"^semiring: unknown semiring 3 "),
        (np.zeros((2, 2), "float32"), np.zeros((2, 2)), "maxplus", r"^b: dtype float64 does not match a's dtype float32$"),
        (np.zeros((2, 2), "float16"), np.zeros((2, 2), "float16"), "maxplus", r"^a: unsupported dtype float16 "),
        (np.zeros((2, 2), "uint8"), np.zeros((2, 2)), "maxplus", r"^a: unsupported dtype uint8 "),
        (np.zeros((2, 2), bool), np.zeros((2, 2), bool), "maxplus", r"^a: semiring 'maxplus' needs a numeric dtype, got bool$"),
        (np.zeros((2, 2), "float32"), np.zeros((2, 2), "float32"), "andor", r"^a: semiring 'andor' needs dtype bool, got float32$"),
        (np.zeros((2, 2, 2), bool), np.zeros((2, 2), bool), "counting", r"^a: semiring 'counting' needs a numeric dtype"),
        (np.zeros(2), np.zeros((2, 2)), "maxplus", r"^a: expected shape \(M, K\) or \(batch, M, K\), got \(2,\)$"),
        (np.zeros((2, 2)), np.zeros((1, 1, 2, 2)), "maxplus", r"^b: expected shape \(K, N\) or \(batch, K, N\)"),
        (np.zeros((2, 2, 3)), np.zeros((2, 2, 2)), "counting", r"^a: expected shape \(M, K, 2\) or \(batch, M, K, 2\)"),
        (np.zeros((2, 2)), np.zeros((2, 2)), "counting", r"^a: expected shape \(M, K, 2\)"),
        (np.zeros((2, 2)), np.zeros((3, 2)), "maxplus", r"^b: has K=3 rows but a has K=2 columns$"),
        (np.zeros((2, 1, 2)), np.zeros((3, 2, 1)), "maxplus", r"^b: batch size 3 does not match a's batch size 2$"),
    ],
)
def test_bad_input(a: np.ndarray, b: np.ndarray, semiring: object, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        matmul(a, b, semiring)  # type: ignore[arg-type]  # 3 is bad on purpose
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("ops", "kwargs", "message"),
    [
        (("sum", "add", "-inf", "0"), {}, r"^add: unknown operation 'sum' \(known: max, min, or\)$"),
        (("max", "pow", "-inf", "0"), {}, r"^mul: unknown operation 'pow' "),
        (("max", "add", "inf", "0"), {}, r"^zero: unknown value 'inf' "),
        (("max", "add", "+inf", "0"), {}, r"^zero: '\+inf' is not the identity of max/add; expected '-inf'$"),
        (("max", "mul", "-inf", "0"), {}, r"^one: '0' is not the identity of max/mul; expected '1'$"),
        (("max", "max", "-inf", "-inf"), {}, r"^mul: 'max' cannot equal add"),
        (("or", "min", "false", "+inf"), {}, r"^mul: 'min' cannot pair with add 'or'"),
        (("max", "and", "-inf", "true"), {}, r"^mul: 'and' cannot pair with add 'max'"),
        (("max", "mul", "-inf", "1"), {"counting": True}, r"^counting: needs add 'max' or 'min' and mul 'add'$"),
    ],
)
def test_bad_semiring_description(ops: tuple[str, ...], kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        semiring_from_ops(*ops, **kwargs)


def test_bad_backward_input() -> None:
    a, b = np.zeros((2, 3)), np.zeros((3, 4))
    grad_c, kstar = np.zeros((2, 4)), np.zeros((2, 4), dtype=np.int32)
    cases = [
        ((grad_c, kstar, a, b, "andor"), r"^semiring: no backward for 'andor'"),
        ((grad_c, kstar, np.zeros((2, 3, 2)), np.zeros((3, 4, 2)), "counting"), r"^semiring: no backward for 'counting'"),
        ((grad_c, kstar, a, b, BOTTLENECK), r"^semiring: no backward for 'max-min'"),
        ((grad_c, kstar, a.astype("int32"), b.astype("int32"), "maxplus"), r"^a: backward needs a float dtype, got int32$"),
        ((grad_c, kstar, a, np.zeros((2, 4)), "maxplus"), r"^b: has K=2 rows but a has K=3 columns$"),
        ((np.zeros((4, 2)), kstar, a, b, "maxplus"), r"^grad_c: expected float64 of shape \(2, 4\), got float64 of shape \(4, 2\)$"),
        ((grad_c.astype("float32"), kstar, a, b, "maxplus"), r"^grad_c: expected float64 .* got float32 "),
        ((grad_c, kstar.astype("float64"), a, b, "maxplus"), r"^kstar: expected integers of shape \(2, 4\), got float64 "),
        ((grad_c, kstar[:1], a, b, "maxplus"), r"^kstar: expected integers of shape \(2, 4\), got int32 of shape \(1, 4\)$"),
        ((grad_c, kstar + 3, a, b, "maxplus"), r"^kstar: values must lie in \[-1, 2\]$"),
        ((grad_c, kstar - 2, a, b, "maxplus"), r"^kstar: values must lie in \[-1, 2\]$"),
    ]
    for args, message in cases:
        for backward in (matmul_backward_a, matmul_backward_b):
            with pytest.raises(ValueError, match=message):
                backward(*args)
