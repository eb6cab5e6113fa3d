"""Widest paths: capacities composed with (max, min) on kernels built by aotc."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import aotc
from aotc import tropical

__all__ = ["kernels", "widest_paths"]


@functools.cache
def kernels() -> Any:
    """This package's kernel library; aotc's own tropical library stays untouched."""
    return aotc.load(Path(__file__).parent / "_kernels")


def widest_paths(capacity: Any, hops: int) -> Any:
    """The best bottleneck capacity between every pair using at most ``hops`` edges."""
    best = capacity
    for _ in range(hops - 1):
        best = tropical.over(kernels()).matmul(best, capacity, "maxmin")
    return best
