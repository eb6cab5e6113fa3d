"""Row softmax and layer normalisation, one warp a row, on kernels aotc compiled ahead of time.

Every function here is aotc's generated binding for a family the manifest
declares (kernels/manifest.yaml): it takes NumPy arrays, PyTorch tensors
(through ``torch.ops.warpnorm``), JAX arrays, CuPy arrays or DLPack arrays,
picks the kernel for the dtype, checks shapes and allocates the results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aotc.kernels

__all__ = ["kernels", "layernorm", "softmax"]


# Loaded at import: that reads _kernels/index.json and nothing else (each
# kernel loads at its first call). A handle made here, not in a cached
# function, is a plain global to torch.compile, which traces through
# functools.cache wrappers into the loading itself.
_KERNELS = aotc.kernels.load(Path(__file__).parent / "_kernels")


def kernels() -> aotc.kernels.Kernels:
    """This package's kernel families, bound by aotc from their declarations."""
    return _KERNELS


def softmax(x: Any, **options: Any) -> Any:
    """``exp(x - max) / sum(exp(x - max))`` along each row of a 2-D float array."""
    return kernels().softmax(x, **options)


def layernorm(x: Any, gamma: Any, beta: Any, eps: float = 1e-5, **options: Any) -> Any:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` along each row of a 2-D
    float array; differentiable in x, gamma and beta. The kernel's other
    results, each row's mean and 1 / sqrt(var + eps), come from
    ``kernels().layernorm(x, gamma, beta, eps)``, which returns all three."""
    return kernels().layernorm(x, gamma, beta, eps, **options)[0]
