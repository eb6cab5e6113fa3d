"""Row softmax, prefix scan, histogram and scale-shift, on kernels aotc compiled ahead of time.

Every function here is aotc's generated binding for a family the manifest
declares (kernels/manifest.yaml): it takes NumPy arrays, PyTorch tensors
(through ``torch.ops.rowops``), CuPy arrays or DLPack arrays, picks the
kernel for the dtype, checks shapes and allocates the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aotc.kernels

__all__ = ["histogram", "kernels", "scale_shift", "scan", "softmax"]


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


def scan(x: Any, **options: Any) -> Any:
    """The inclusive prefix sum along each row of a 2-D array."""
    return kernels().scan(x, **options)


def histogram(x: Any, bins: int, lo: float, hi: float, **options: Any) -> Any:
    """Per row of a 2-D float array, the int32 counts of its values in ``bins``
    equal bins over [lo, hi)."""
    return kernels().histogram(x, bins, lo, hi, **options)


def scale_shift(x: Any, g: Any, h: Any, **options: Any) -> Any:
    """``x * g + h`` along each row of a 2-D float array; differentiable in all three."""
    return kernels().scale_shift(x, g, h, **options)
