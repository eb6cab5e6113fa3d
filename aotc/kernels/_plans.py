"""The plan store: what a layout keeps between calls, under one size policy.

Each layout has one ``PlanStore`` (``Layout.plans``), and it holds everything
the layout's calls work out once and find again: the kernel a call's dtypes,
axes and ranks choose, the ``Decision`` its shapes give, the call plans of
every route (NumPy, tensors through the op or past it, ``.out``, a given
stream, CUDA arrays and DLPack, JAX's callbacks), the recorded calls of
autograd and their backward plans, and the key functions. Every key is built
by ``aotc.kernels._keys``; its first element says what it keys (a tag, or a
kind's name), so entries of one store never meet.

A store keeps at most ``MAX_PLANS`` entries; a job that sees more starts over
(the dict cleared, rather than an LRU's bookkeeping on every hit: a hit must
cost one lookup). The generated sources' own store (``GENERATED``, one a
process: the factories of the plans, guards and keys, shared by layouts of
one signature) is one more of this class.

Lookups read ``store.plans`` (a dict) directly: on the hot path a method call
would cost more than the lookup itself.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GENERATED", "MAX_PLANS", "PlanStore"]

MAX_PLANS = 256


class PlanStore:
    """``plans``: key -> plan; ``keep`` adds one under the size policy."""

    __slots__ = ("plans",)

    def __init__(self) -> None:
        self.plans: dict[Any, Any] = {}

    def __len__(self) -> int:
        return len(self.plans)

    def keep(self, key: Any, plan: Any) -> Any:
        """Keep ``plan`` under ``key`` (clearing the store first when it is full); returns ``plan``."""
        plans = self.plans
        if len(plans) >= MAX_PLANS and key not in plans:
            plans.clear()
        plans[key] = plan
        return plan

    def get(self, key: Any) -> Any:
        """The plan under ``key``, or None (an unhashable key has none)."""
        try:
            return self.plans.get(key)
        except TypeError:
            return None

    def tagged(self, tag: Any) -> dict[Any, Any]:
        """The entries whose key starts with ``tag`` (for tests and ``aotc inspect``-like reading)."""
        return {key: plan for key, plan in self.plans.items() if type(key) is tuple and key and key[0] == tag}

    def clear(self) -> None:
        self.plans.clear()


# The generated factories of plans, guards and key functions, by the signature they serve.
GENERATED = PlanStore()
