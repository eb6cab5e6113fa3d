"""Which calls go to ``aotc.tropical._jax``: those given a ``jax.Array``.

No jax import: a JAX array cannot exist before jax is imported, so a process
that never imported it answers from ``sys.modules`` alone. ``jax.Array`` is
what both concrete arrays and tracers (under ``jit``, ``grad``, ``vmap``) are.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["jax_calls", "to_jax"]

_calls: list[Any] = []


def to_jax(arrays: tuple[Any, ...]) -> bool:
    """Whether any of ``arrays`` (None: an ``out=`` not given) is a JAX array."""
    jax = sys.modules.get("jax")
    if jax is None:
        return False
    array_type = getattr(jax, "Array", None)
    return array_type is not None and any(isinstance(x, array_type) for x in arrays)


def jax_calls() -> Any:
    """``aotc.tropical._jax``, imported on first use (it imports jax)."""
    if not _calls:
        from aotc.tropical import _jax

        _calls.append(_jax)
    return _calls[0]
