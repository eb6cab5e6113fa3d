"""NumPy references for the warpnorm kernels, along the last axis.

They define what the kernels compute. Each is computed in float64 and cast to
the input's dtype, so for float32 inputs the reference is the more accurate
one; the kernels add in another order, so they match to a tolerance.
"""

from __future__ import annotations

import numpy as np

__all__ = ["layernorm", "layernorm_backward", "softmax", "softmax_backward"]


def _wide(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"expected float32 or float64, got {x.dtype}")
    return x.astype(np.float64)


def softmax(x: np.ndarray) -> np.ndarray:
    """Numerically stable softmax of each row, in x's dtype."""
    wide = _wide(x)
    e = np.exp(wide - wide.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.asarray(x).dtype)


def softmax_backward(grad_y: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``grad_x`` of softmax, from its result ``y``."""
    gy, wy = _wide(grad_y), _wide(y)
    return (wy * (gy - (gy * wy).sum(axis=-1, keepdims=True))).astype(np.asarray(y).dtype)


def layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y, mean, rstd)``: y in x's dtype, each row's mean and 1 / sqrt(var + eps)
    (the biased variance, as torch.nn.functional.layer_norm's) in float64."""
    wide = _wide(x)
    mean = wide.mean(axis=-1)
    centred = wide - mean[..., None]
    rstd = 1 / np.sqrt((centred**2).mean(axis=-1) + eps)
    y = centred * rstd[..., None] * _wide(gamma) + _wide(beta)
    return y.astype(np.asarray(x).dtype), mean, rstd


def layernorm_backward(
    grad_y: np.ndarray, x: np.ndarray, gamma: np.ndarray, eps: float = 1e-5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(grad_x, grad_gamma, grad_beta)`` of layernorm's y for ``grad_y``, in float64."""
    gy, g = _wide(grad_y), _wide(gamma)
    _, mean, rstd = layernorm(x, gamma, np.zeros_like(gamma), eps)
    xhat = (_wide(x) - mean[..., None]) * rstd[..., None]
    gg = gy * g
    grad_x = rstd[..., None] * (gg - gg.mean(axis=-1, keepdims=True) - xhat * (gg * xhat).mean(axis=-1, keepdims=True))
    return grad_x, (gy * xhat).sum(axis=0), gy.sum(axis=0)
