"""What a declared family's launch checks of its arguments, whichever launcher
launches it (``Family.launch``, jaxlib's for JAX, ``aotc.kernels._jax_builtin``):
a caller's scalar as the kernel's parameter takes it, and the grid against
CUDA's limits. Each refusal is one line."""

from __future__ import annotations

from aotc.errors import ArgumentError, ArgumentTypeError, echo
from aotc.kernels._entry import INT_RANGES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GRID_LIMITS", "check_grid", "scalar_argument"]

GRID_LIMITS = (2**31 - 1, 65535, 65535)


def check_grid(family: str, grid: tuple[int, int, int]) -> None:
    """Refuse, in one line, a grid past CUDA's limits."""
    if any(extent > limit for extent, limit in zip(grid, GRID_LIMITS)):
        msg = f"{family}: a grid of {grid} blocks is past CUDA's limits {GRID_LIMITS}; split the work"
        raise ArgumentError(msg)


def scalar_argument(value: Any, name: str, kind: str) -> Any:
    """A caller's scalar as the kernel takes it: an int in range, or a float."""
    if isinstance(value, bool) or not hasattr(value, "__index__" if kind in INT_RANGES else "__float__"):
        what = "an integer" if kind in INT_RANGES else "a number"
        msg = f"{name}: expected {what} ({kind}), got {echo(value)}"
        raise ArgumentTypeError(msg)
    if kind in INT_RANGES:
        number = value.__index__()
        low, high = INT_RANGES[kind]
        if not low <= number <= high:
            msg = f"{name}: {number} does not fit {kind}"
            raise ArgumentError(msg)
        return number
    return float(value)
