"""NumPy references for the rowops kernels, along the last axis.

They define what the kernels compute; the kernels add in another order, so a
float result matches these to a tolerance, an integer one exactly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["histogram", "scale_shift", "scale_shift_backward", "scan", "softmax"]


def softmax(x: np.ndarray) -> np.ndarray:
    """Numerically stable softmax of each row, in x's dtype.

    Computed in float64 and cast back, so for float32 inputs the reference is
    more accurate than the kernel it checks. Subtracting the row's max keeps
    every exponent <= 0: nothing overflows, however large the inputs.
    """
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"softmax takes float32 or float64, got {x.dtype}")
    wide = x.astype(np.float64)
    if wide.shape[-1] == 0:  # max of an empty row is undefined: there is nothing to do
        return np.empty_like(x)
    e = np.exp(wide - wide.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def scan(x: np.ndarray) -> np.ndarray:
    """Inclusive prefix sum of each row, in x's dtype.

    dtype=x.dtype matters: without it cumsum widens int32 to the platform
    integer. Integers wrap on overflow, as the kernel's do.
    """
    x = np.asarray(x)
    return np.cumsum(x, axis=-1, dtype=x.dtype)


def histogram(x: np.ndarray, bins: int, lo: float, hi: float) -> np.ndarray:
    """Per row, how many values fall in each of ``bins`` equal bins over [lo, hi),
    as int32; values outside the range, and NaN, fall in none, and no value
    does where the range is infinite (it has no equal bins).

    A value's bin is ``floor((v - lo) * (bins / (hi - lo)))`` computed in x's
    dtype, as the kernel computes it, so a value on a bin's edge lands where
    the kernel puts it.
    """
    x = np.asarray(x)
    counts = np.zeros((x.shape[0], bins), np.int32)
    dtype = x.dtype.type
    with np.errstate(over="ignore"):  # a range past the dtype's is infinite here, as in the kernel
        width = dtype(hi) - dtype(lo)
    if bins == 0 or not lo < hi or not np.isfinite(width):  # an infinite range has no equal bins
        return counts
    scale = dtype(bins) / width
    inside = (x >= dtype(lo)) & (x < dtype(hi))
    index = np.minimum(((x - dtype(lo)) * scale).astype(np.int64), bins - 1)
    for row in range(x.shape[0]):
        counts[row] = np.bincount(index[row][inside[row]], minlength=bins)
    return counts


def scale_shift(x: np.ndarray, g: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``x * g + h`` along each row (g and h have one value per column)."""
    return (np.asarray(x) * g + h).astype(np.asarray(x).dtype)


def scale_shift_backward(grad_y: np.ndarray, x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(grad_x, grad_g, grad_h)`` of ``scale_shift`` for ``grad_y``."""
    return grad_y * g, (grad_y * x).sum(axis=0), grad_y.sum(axis=0)
