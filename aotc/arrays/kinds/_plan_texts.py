"""What a call plan does with an array of a kind, as Python text: ``PlanTexts``.

A call plan (aotc.kernels._replay) is a full call's launch made into Python
source. What it does with an array of this kind it writes with the texts
below: ``var`` is the plan's variable for the array, ``op`` the array as
the full call read it (for its facts: a plan keeps no array of the call),
and ``names`` the namespace the plan is compiled in, where a text binds
what it calls under ``prefix`` (unique to the array). The defaults serve
any kind: the guard reads each array as an Operand (``plan_operands``) and
the plan asks the operand's kind; NumPy and PyTorch write their own, on
the arrays themselves.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.arrays.operands import Operand

__all__ = ["PlanTexts"]


class PlanTexts:
    """The texts of a kind's call plans; ``ArrayKind`` (``_base``) is one, each kind overrides what it writes itself."""

    plan_operands = True

    def plan_type(self, obj: Any) -> type | None:
        """The type a plan's guard holds arrays of this kind to; None: no plan."""
        return type(obj) if self.per_type else None

    def plan_key(self, var: str) -> tuple[str, ...]:
        """The facts of ``var`` a call's decision (and its plan) depends on, each
        an expression, the first never None (an out array not given is a None
        for each): here the Operand's, its kind first (arrays of several such
        kinds meet in one call: a DLPack array and the CUDA array it writes to)."""
        return (f"{var}.kind", f"{var}.shape", f"{var}.strides", f"{var}.dtype", f"{var}.device")

    def plan_pointer(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        return f"{var}.pointer"

    def plan_result(self, var: str) -> str:
        """What the caller gets back for ``var``."""
        return f"{var}.obj"

    def plan_writable(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str | None:
        """Whether ``var`` may be written now; None: always."""
        return f"{var}.kind.writable({var})"

    def plan_copy(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        """A row-major copy of ``var``, as ``contiguous`` makes it."""
        names[f"{prefix}name"] = var
        return f"{var}.kind.contiguous({var}, {prefix}name)"

    def plan_allocate(self, op: Operand, like: str, stream: str, prefix: str, names: dict[str, Any], fill: Any, name: str) -> str:
        """A new array of ``op``'s shape and dtype like ``like``, filled with ``fill``
        where it is not None, on ``stream`` (None: the library's current one)."""
        names[f"{prefix}made"] = (op.shape, op.dtype, fill, name)
        made = f"{prefix}made"
        return f"{like}.kind.read({like}.kind.allocate({like}, {made}[0], {made}[1], {stream}, {made}[3], {made}[2]), {made}[3])"

    def plan_fill(self, op: Operand, var: str, stream: str, prefix: str, names: dict[str, Any], value: Any, backend: Any) -> str:
        """A statement filling the given array ``var`` with ``value`` on ``stream``."""
        names[f"{prefix}fill"], names[f"{prefix}backend"] = value, backend
        return f"{var}.kind.fill({var}, {prefix}fill, {stream}, {prefix}backend)"

    def plan_stream(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        """The current stream a call on ``var`` runs on where it names none."""
        return f"{var}.kind.current_stream({var})"

    def plan_hold(self, op: Operand, var: str, stream: str, prefix: str, names: dict[str, Any]) -> str | None:
        """A statement keeping ``var`` until ``stream`` is done with it (a stream given); None: nothing to do."""
        return f"{var}.kind.hold({var}, {stream})"
