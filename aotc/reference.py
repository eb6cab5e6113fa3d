"""NumPy reference for the tropical (semiring) matrix product: the contract the kernels meet.

Product: ``C[i, j] = (+)_k A[i, k] (x) B[k, j]``; for K = 0, C is the semiring zero.

Semirings (``SEMIRINGS``; others through ``semiring_from_ops``, e.g. max-min):

    maxplus   (+) max  (x) +    zero -inf   one 0
    minplus   (+) min  (x) +    zero +inf   one 0
    maxmul    (+) max  (x) *    zero -inf   one 1     negative inputs allowed
    andor     (+) or   (x) and  zero False  one True  bool only
    counting  (value, count) pairs on a trailing axis of length 2. (+) keeps the
              larger value and adds the counts on a tie; (x) adds the values and
              multiplies the counts; zero (-inf, 0), one (0, 1).

Dtypes: float32, float64, int32, int64, and bool for or-semirings only. A and B
share one dtype, and C has it too.

Floats: (x) is IEEE arithmetic (-inf + inf = nan, 0 * inf = nan, -inf * -2 = inf).
NaN propagates through (+): if any term is NaN, the result is NaN.

Integers: -inf / +inf stand for the dtype's lowest / highest value. (x) with an
operand equal to the zero gives the zero; otherwise its exact result is clamped
to [lowest, highest] and never wraps. A term that saturates onto the zero is the zero.

Counting: a term whose value is the zero's value is the zero (count 0); integer
counts saturate like values; a NaN value makes the result (nan, nan).

Argmax: ``kstar`` (int32, C's shape without the counting axis) is the k of the
best term, ties to the smallest k; with NaN terms, the first NaN k. It is -1
when K = 0 or when the best term equals the zero (for andor: no k has both true).

Backward (float dtypes; (+) max or min, (x) + or *, not counting): for each
kstar >= 0, ``grad_A[i, k*] += grad_C[i, j] * w`` and ``grad_B[k*, j] += grad_C[i, j] * v``
with w = v = 1 under +, and w = B[k*, j], v = A[i, k*] under *. A 2-D operand
used with a batch receives the sum over the batch.

Batched: (batch, M, K) @ (batch, K, N); a 2-D operand broadcasts over the batch;
batch sizes must match. Bad input raises a one-line ValueError that starts with
the argument's name.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable

import numpy as np

from aotc.errors import ArgumentError

# One semiring type for the manifest, the index and the reference: the reference
# accepts exactly what kernels can be built for.
from aotc.semiring import Semiring

__all__ = [
    "DTYPES",
    "KSTAR_DTYPE",
    "SEMIRINGS",
    "Semiring",
    "matmul",
    "matmul_argmax",
    "matmul_backward",
    "matmul_backward_a",
    "matmul_backward_b",
    "semiring_from_ops",
]

DTYPES = ("float32", "float64", "int32", "int64", "bool")
KSTAR_DTYPE = np.dtype(np.int32)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add,
    "mul": np.multiply,
    "and": np.logical_and,
    "min": np.minimum,
    "max": np.maximum,
}


def semiring_from_ops(
    add: str, mul: str, zero: str, one: str, *, name: str | None = None, counting: bool = False
) -> Semiring:
    """Describe an extra semiring, e.g. ``semiring_from_ops("max", "min", "-inf", "+inf")``."""
    semiring = Semiring(name or f"{add}-{mul}", add, mul, zero, one, counting)
    semiring.validate()
    return semiring


SEMIRINGS: MappingProxyType[str, Semiring] = MappingProxyType(
    {
        "maxplus": semiring_from_ops("max", "add", "-inf", "0", name="maxplus"),
        "minplus": semiring_from_ops("min", "add", "+inf", "0", name="minplus"),
        "maxmul": semiring_from_ops("max", "mul", "-inf", "1", name="maxmul"),
        "andor": semiring_from_ops("or", "and", "false", "true", name="andor"),
        "counting": semiring_from_ops("max", "add", "-inf", "0", name="counting", counting=True),
    }
)


def matmul(a: Any, b: Any, semiring: str | Semiring) -> np.ndarray:
    """The semiring product of ``a`` and ``b``."""
    return matmul_argmax(a, b, semiring)[0]


def matmul_argmax(a: Any, b: Any, semiring: str | Semiring) -> tuple[np.ndarray, np.ndarray]:
    """The product and ``kstar``, the k of each result's best term (-1 for none)."""
    sr = _resolve(semiring)
    a, b, out_shape = _check_operands(a, b, sr)
    a3, b3 = _as_batched(a, sr), _as_batched(b, sr)
    with np.errstate(over="ignore", invalid="ignore"):
        if sr.counting:
            value, count, kstar = _reduce_counting(a3, b3, sr)
            c = np.stack([value, count], axis=-1)
        else:
            c, kstar = _reduce(a3, b3, sr)
    return c.reshape(out_shape), kstar.reshape(out_shape[: len(out_shape) - sr.counting])


def matmul_backward_a(grad_c: Any, kstar: Any, a: Any, b: Any, semiring: str | Semiring) -> np.ndarray:
    """The gradient with respect to ``a``, routed through ``kstar``."""
    return _backward(grad_c, kstar, a, b, semiring, wrt="a")


def matmul_backward_b(grad_c: Any, kstar: Any, a: Any, b: Any, semiring: str | Semiring) -> np.ndarray:
    """The gradient with respect to ``b``, routed through ``kstar``."""
    return _backward(grad_c, kstar, a, b, semiring, wrt="b")


def matmul_backward(
    grad_c: Any, kstar: Any, a: Any, b: Any, semiring: str | Semiring
) -> tuple[np.ndarray, np.ndarray]:
    """``(grad_a, grad_b)``."""
    return (
        matmul_backward_a(grad_c, kstar, a, b, semiring),
        matmul_backward_b(grad_c, kstar, a, b, semiring),
    )


# --- checks -----------------------------------------------------------------


def _resolve(semiring: str | Semiring) -> Semiring:
    if isinstance(semiring, Semiring):
        return semiring
    if isinstance(semiring, str) and semiring in SEMIRINGS:
        return SEMIRINGS[semiring]
    msg = f"semiring: unknown semiring {semiring!r} (known: {', '.join(SEMIRINGS)})"
    raise ArgumentError(msg)


def _check_operands(a: Any, b: Any, sr: Semiring) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Validate a and b; return them as arrays plus C's shape."""
    a, b = np.asarray(a), np.asarray(b)
    for name, x in (("a", a), ("b", b)):
        if x.dtype.name not in DTYPES:
            msg = f"{name}: unsupported dtype {x.dtype.name} (supported: {', '.join(DTYPES)})"
            raise ArgumentError(msg)
    if b.dtype != a.dtype:
        msg = f"b: dtype {b.dtype.name} does not match a's dtype {a.dtype.name}"
        raise ArgumentError(msg)
    if sr.is_boolean != (a.dtype == np.bool_):
        need = "dtype bool" if sr.is_boolean else "a numeric dtype"
        msg = f"a: semiring {sr.name!r} needs {need}, got {a.dtype.name}"
        raise ArgumentError(msg)
    extra = 1 if sr.counting else 0
    for name, x, dims in (("a", a, "M, K"), ("b", b, "K, N")):
        pair = ", 2" if sr.counting else ""
        if x.ndim - extra not in (2, 3) or (sr.counting and x.shape[-1] != 2):
            msg = f"{name}: expected shape ({dims}{pair}) or (batch, {dims}{pair}), got {x.shape}"
            raise ArgumentError(msg)
    a_core = a.shape[a.ndim - extra - 2 : a.ndim - extra]
    b_core = b.shape[b.ndim - extra - 2 : b.ndim - extra]
    if a_core[1] != b_core[0]:
        msg = f"b: has K={b_core[0]} rows but a has K={a_core[1]} columns"
        raise ArgumentError(msg)
    batches = [x.shape[0] for x in (a, b) if x.ndim - extra == 3]
    if len(batches) == 2 and batches[0] != batches[1]:
        msg = f"b: batch size {batches[1]} does not match a's batch size {batches[0]}"
        raise ArgumentError(msg)
    out_shape = (*batches[:1], a_core[0], b_core[1]) + ((2,) if sr.counting else ())
    return a, b, out_shape


def _as_batched(x: np.ndarray, sr: Semiring) -> np.ndarray:
    """Give x a leading batch axis of 1 when it has none."""
    return x if x.ndim - sr.counting == 3 else x[np.newaxis]


def _scalar(value: str, dtype: np.dtype) -> Any:
    """The number a value word stands for in ``dtype``."""
    if dtype == np.bool_:
        return value == "true"
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        table = {"-inf": info.min, "+inf": info.max, "0": 0, "1": 1}
    else:
        table = {"-inf": -np.inf, "+inf": np.inf, "0": 0.0, "1": 1.0}
    return dtype.type(table[value])


# --- forward ----------------------------------------------------------------


def _exact(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise x op y in x's dtype: IEEE for floats, saturating for integers."""
    if not np.issubdtype(x.dtype, np.integer):
        return _BINARY[op](x, y)
    return _saturate(_BINARY[op](_widen(x), _widen(y)), x.dtype)


def _times(x: np.ndarray, y: np.ndarray, op: str, zero: Any) -> np.ndarray:
    """Elementwise x (x) y; for integers the zero absorbs before anything saturates."""
    product = _exact(op, x, y)
    if not np.issubdtype(x.dtype, np.integer):
        return product
    return np.where((x == zero) | (y == zero), zero, product)


def _widen(x: np.ndarray) -> np.ndarray:
    # int32 sums and products fit int64 exactly; int64 ones need Python ints.
    return x.astype(np.int64 if x.dtype == np.int32 else object)


def _saturate(exact: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.minimum(np.maximum(exact, int(info.min)), int(info.max)).astype(dtype)


def _better(term: np.ndarray, best: np.ndarray, sr: Semiring) -> np.ndarray:
    """Where term beats best strictly, so ties keep the smaller k; NaN enters once."""
    beats = term < best if sr.add == "min" else term > best
    if np.issubdtype(term.dtype, np.floating):
        beats |= np.isnan(term) & ~np.isnan(best)
    return beats


def _batch(a: np.ndarray, b: np.ndarray) -> int:
    """The product's batch: a batch of 1 (a 2-D operand) broadcasts, even onto a batch of 0."""
    return b.shape[0] if a.shape[0] == 1 else a.shape[0]


def _reduce(a: np.ndarray, b: np.ndarray, sr: Semiring) -> tuple[np.ndarray, np.ndarray]:
    """C and kstar for batched a (Ba, M, K) and b (Bb, K, N), one k at a time."""
    batch, m, k_size, n = _batch(a, b), a.shape[1], a.shape[2], b.shape[2]
    zero = _scalar(sr.zero, a.dtype)
    best = np.full((batch, m, n), zero, dtype=a.dtype)
    kstar = np.full((batch, m, n), -1, dtype=KSTAR_DTYPE)
    for k in range(k_size):
        term = _times(a[:, :, k, None], b[:, None, k, :], sr.mul, zero)
        update = _better(term, best, sr)
        best = np.where(update, term, best)
        kstar[update] = k
    return best, kstar


def _reduce_counting(a: np.ndarray, b: np.ndarray, sr: Semiring) -> tuple[np.ndarray, ...]:
    """Value, count and kstar for batched counting operands (..., 2)."""
    batch, m, k_size, n = _batch(a, b), a.shape[1], a.shape[2], b.shape[2]
    dtype = a.dtype
    zero = _scalar(sr.zero, dtype)
    best = np.full((batch, m, n), zero, dtype=dtype)
    count = np.zeros((batch, m, n), dtype=dtype)
    kstar = np.full((batch, m, n), -1, dtype=KSTAR_DTYPE)
    for k in range(k_size):
        x, y = a[:, :, k, None, :], b[:, None, k, :, :]
        term = _times(x[..., 0], y[..., 0], sr.mul, zero)
        term_count = np.where(term == zero, 0, _exact("mul", x[..., 1], y[..., 1])).astype(dtype)
        update = _better(term, best, sr)
        tied = np.where(term == best, _exact("add", count, term_count), count)
        count = np.where(update, term_count, tied)
        best = np.where(update, term, best)
        kstar[update] = k
    if np.issubdtype(dtype, np.floating):
        count[np.isnan(best)] = np.nan
    return best, count, kstar


# --- backward ---------------------------------------------------------------


def _backward(grad_c: Any, kstar: Any, a: Any, b: Any, semiring: str | Semiring, wrt: str) -> np.ndarray:
    sr = _resolve(semiring)
    if sr.counting or sr.add not in ("max", "min") or sr.mul not in ("add", "mul"):
        msg = f"semiring: no backward for {sr.name!r} (needs add max/min, mul add/mul, no counting)"
        raise ArgumentError(msg)
    a, b, out_shape = _check_operands(a, b, sr)
    if not np.issubdtype(a.dtype, np.floating):
        msg = f"a: backward needs a float dtype, got {a.dtype.name}"
        raise ArgumentError(msg)
    grad_c, kstar = np.asarray(grad_c), np.asarray(kstar)
    if grad_c.dtype != a.dtype or grad_c.shape != out_shape:
        got = f"{grad_c.dtype.name} of shape {grad_c.shape}"
        msg = f"grad_c: expected {a.dtype.name} of shape {out_shape}, got {got}"
        raise ArgumentError(msg)
    if not np.issubdtype(kstar.dtype, np.integer) or kstar.shape != out_shape:
        msg = f"kstar: expected integers of shape {out_shape}, got {kstar.dtype.name} of shape {kstar.shape}"
        raise ArgumentError(msg)
    k_size = a.shape[-1]
    if kstar.size and (kstar.min() < -1 or kstar.max() >= k_size):
        msg = f"kstar: values must lie in [-1, {k_size - 1}]"
        raise ArgumentError(msg)
    a3, b3 = _as_batched(a, sr), _as_batched(b, sr)
    core = (1, *out_shape) if len(out_shape) == 2 else out_shape
    g3, ks3 = grad_c.reshape(core), kstar.reshape(core)
    bi, i, j = np.nonzero(ks3 >= 0)
    k = ks3[bi, i, j]
    # A 2-D operand has one batch row, so every batch's contribution lands on it.
    a_bi, b_bi = bi % a3.shape[0], bi % b3.shape[0]
    values = g3[bi, i, j]
    with np.errstate(over="ignore", invalid="ignore"):
        if wrt == "a":
            if sr.mul == "mul":
                values = values * b3[b_bi, k, j]
            grad = np.zeros_like(a3)
            np.add.at(grad, (a_bi, i, k), values)
            return grad.reshape(a.shape)
        if sr.mul == "mul":
            values = values * a3[a_bi, i, k]
        grad = np.zeros_like(b3)
        np.add.at(grad, (b_bi, k, j), values)
        return grad.reshape(b.shape)
