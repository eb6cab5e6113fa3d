"""The entry in front of ``matmul``'s full path: the call plans' lookups.

``Tropical._matmul`` is the full path until a product leaves a call plan
(``_plan_keeper``); then it is this entry, which looks a repeat call's plan
up from its operands and runs it, else hands the call to the full path,
which decides everything again (and raises the usual one-line errors).

- NumPy arrays: the plans of ``_plan``, keyed by shapes, strides and dtypes.
- PyTorch tensors: the plans the ``aotc::`` ops' kernel leaves
  (``_torch_plan``), the very ones ``op_matmul`` would find. An eager call on
  plain tensors that nothing but aotc would see (``_torch_direct``'s
  conditions) and that autograd does not record runs its plan from here: the
  route to the ops (``_torch``) and the op's kernel would only look that plan
  up, and skipping them saves about a microsecond a call (RESULTS.md, issue 21).

Both branches sit in one closure, each reached by one type check: a second
entry in front of the first would cost the other kind's calls a call level,
a tenth of a NumPy call. The branch of a library with no plan yet tests
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
    torch: Any = None,
    tensor_plans: dict[tuple[Any, ...], Plan] | None = None,
) -> MatmulEntry:
    """``matmul(a, b, semiring, out, stream)`` through the plan keyed by its
    operands (NumPy's where ``ndarray`` is given, tensors' where ``torch``
    is), if there is one and its checks pass, else ``full``."""
    ndarray = ndarray or _NoOperand
    tensor = torch.Tensor if torch is not None else _NoOperand
    if torch is not None:
        from aotc.tropical import _torch_direct as state

        compiling, grad_enabled = torch.compiler.is_compiling, torch.is_grad_enabled
        bump_version = torch.autograd.graph.increment_version
        # _torch_direct.direct's checks, spelled out: a call level here is a tenth of what is saved.
        modes, function_modes, transforms = state.dispatch_modes, state.function_modes, state.transforms
        autocast, inference, tracing, wrapped = state.autocast, state.inference, state.tracing, state.wrapped

    def matmul(a: Any, b: Any, semiring: Any, out: Any, stream: Any) -> Any:
        kind = type(a)
        if kind is ndarray:
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
        # compiling() before anything dynamo cannot fold: it traces this function.
        if kind is not tensor or type(b) is not tensor or stream is not None or type(semiring) is not str or compiling():
            return full(a, b, semiring, out, stream)
        if out is None:
            if grad_enabled() and (a.requires_grad or b.requires_grad):
                return full(a, b, semiring, out, stream)  # autograd records: the argmax op
            key = (semiring, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device)
        elif type(out) is tensor and not (grad_enabled() and (a.requires_grad or b.requires_grad or out.requires_grad)):
            if wrapped(out):
                return full(a, b, semiring, out, stream)
            key = (
                semiring, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device,
                out.shape, out.stride(), out.dtype, out.device,
            )  # fmt: skip
        else:
            return full(a, b, semiring, out, stream)
        # No check of _torch_route.inside_op: an op's kernel never calls this entry
        # with stream=None, and the plan would run its very product anyway. No
        # meta-device check: the key holds the device, and no plan is made on meta.
        plan = tensor_plans.get(key)
        if plan is None or modes() or function_modes() or transforms() or autocast() or inference():
            return full(a, b, semiring, out, stream)
        if tracing() is not None or wrapped(a) or wrapped(b):
            return full(a, b, semiring, out, stream)
        result = plan(a, b, out)
        if result is None:
            return full(a, b, semiring, out, stream)
        if out is not None:
            bump_version(out)  # what the _out op does: autograd sees out changed
        return result

    return matmul
