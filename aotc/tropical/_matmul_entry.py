"""The entry in front of ``matmul``'s full path: the call plans' lookups.

``Tropical._matmul`` is the full path until a product leaves a call plan
(``_plan_keeper``); then it is this entry, which looks a repeat call's plan
up from its operands and runs it, else hands the call to the full path,
which decides everything again (and raises the usual one-line errors).

- NumPy arrays: the plans of ``_plan``, keyed by shapes, strides and dtypes.
- PyTorch tensors: the plans the ``aotc::`` ops' kernel leaves
  (``_torch_plan``), the very ones ``op_matmul`` would find. An eager call on
  plain tensors that nothing but aotc would see (``aotc.arrays.torch_direct``'s
  conditions) and that autograd does not record runs its plan from here: the
  route to the ops (``_torch``) and the op's kernel would only look that plan
  up, and skipping them saves about a microsecond a call (RESULTS.md, issue 21).

One closure holds NumPy's branch and sends tensors to theirs
(``_torch_plan.planned_tensor_matmul``): a NumPy call pays one type check
for tensors, and nothing for the tensor branch's many names (a frame copies
each of a closure's cells). The branch of a library with no plan yet tests
against a type no operand has.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.tropical._plan import MatmulEntry, Plan

__all__ = ["planned_matmul"]


class _NoOperand:
    """A type no operand has: the branch of a library with no plans never matches."""


def planned_matmul(
    full: MatmulEntry,
    ndarray: Any = None,
    numpy_plans: dict[tuple[Any, ...], Plan] | None = None,
    tensor: Any = None,
    tensor_matmul: MatmulEntry | None = None,
) -> MatmulEntry:
    """``matmul(a, b, semiring, out, stream)`` through the plan keyed by its
    operands, if there is one and its checks pass, else ``full``: NumPy's
    plans where ``ndarray`` is given, and ``tensor`` operands (``torch.Tensor``)
    to ``tensor_matmul`` (``_torch_plan.planned_tensor_matmul``) where it is."""
    ndarray = ndarray or _NoOperand
    tensor = tensor or _NoOperand

    def matmul(a: Any, b: Any, semiring: Any, out: Any, stream: Any) -> Any:
        if type(a) is ndarray:
            if type(b) is ndarray and stream is None:
                # Everything a plan fixes, read with the fewest attribute reads
                # (the key make_plan returns). An unhashable semiring can't be a
                # key: the full path names it.
                try:
                    if out is None:
                        plan = numpy_plans.get((semiring, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype))
                    elif type(out) is ndarray:
                        plan = numpy_plans.get(
                            (semiring, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype, out.shape, out.strides, out.dtype)
                        )
                    else:
                        plan = None
                except TypeError:
                    plan = None
                if plan is not None:
                    result = plan(a, b, out)
                    if result is not None:
                        return result
            return full(a, b, semiring, out, stream)
        if type(a) is tensor:
            return tensor_matmul(a, b, semiring, out, stream)
        return full(a, b, semiring, out, stream)

    return matmul
