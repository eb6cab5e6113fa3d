"""NumPy references for the rowops kernels, along the last axis.

They define what the kernels compute; the kernels add in another order, so a
float result matches these to a tolerance, an integer one exactly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["scan", "softmax"]


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
