"""A caller's scalar argument as the kernel's parameter takes it, whichever
launcher launches (``_launch``, jaxlib's for JAX); each refusal one line."""

from __future__ import annotations

from aotc.errors import ArgumentError, ArgumentTypeError, echo
from aotc.kernels._shapes import INT_RANGES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["scalar_argument"]


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
