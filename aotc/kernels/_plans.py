"""The plan table: what a binding keeps between calls, under one size policy.

Every decision a call makes once and a repeat call finds again lives in a
``PlanTable``: a layout's kernel choices and shape decisions, its NumPy and
tensor call plans, its JAX callbacks. A table keeps at most ``MAX_PLANS``
entries; a job that sees more shapes than that starts over (a dict cleared,
rather than an LRU's bookkeeping on every hit: a hit must cost one lookup).

Lookups read ``table.plans`` (a dict) directly: on the hot path a method call
would cost more than the lookup itself. Each key is built by one function,
used to store and to look up alike (``aotc.kernels._keys``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_PLANS", "PlanTable"]

MAX_PLANS = 256


class PlanTable:
    """``plans``: key -> plan; ``keep`` adds one under the size policy."""

    __slots__ = ("plans",)

    def __init__(self) -> None:
        self.plans: dict[Any, Any] = {}

    def __len__(self) -> int:
        return len(self.plans)

    def keep(self, key: Any, plan: Any) -> Any:
        """Keep ``plan`` under ``key`` (clearing the table first when it is full); returns ``plan``."""
        plans = self.plans
        if len(plans) >= MAX_PLANS and key not in plans:
            plans.clear()
        plans[key] = plan
        return plan

    def clear(self) -> None:
        self.plans.clear()
