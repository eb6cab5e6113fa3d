"""Which call plan a launched product leaves, and where its handle keeps it.

A ``Tropical`` handle has entries that plans sit in front of: ``_matmul``
(the public ``matmul``: NumPy arrays' plans and tensors', ``_matmul_entry``),
``_matmul_argmax`` (``matmul_argmax``, NumPy arrays: ``_plan``), and ``op_matmul``,
``op_matmul_argmax`` and ``op_matmul_backward`` (the aotc:: ops' kernels,
tensors: ``_torch_plan``). Each starts as its full path; the first plan kept
puts the plan lookup in front of it, once.
"""

from __future__ import annotations

import sys

from aotc.tropical._matmul_entry import planned_matmul
from aotc.tropical._plan import MAX_PLANS, make_argmax_plan, make_plan, planned_argmax
from aotc.tropical._torch_plan import (
    make_tensor_argmax_plan,
    make_tensor_backward_plan,
    make_tensor_plan,
    planned_op_argmax,
    planned_op_backward,
    planned_op_matmul,
    planned_tensor_matmul,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.runtime.launcher import BoundLaunch

__all__ = ["keep_argmax_plan", "keep_backward_plan", "keep_plan"]


def keep_plan(api: Any, a: Any, b: Any, semiring: str, out: Any, c: Any, launch: BoundLaunch) -> None:
    """Keep the plan of the forward product ``api`` just launched in place, if one fits."""
    torch = sys.modules.get("torch")
    tensors = torch is not None and isinstance(a, torch.Tensor)
    if not _bound_to_its_device(api, a if tensors else None):
        return
    if tensors:
        if _keep(api._op_plans, make_tensor_plan(torch, a, b, semiring, out, c, launch)):  # noqa: SLF001
            if api.op_matmul == api._full_op_matmul:  # noqa: SLF001 - the first plan: put the lookup in front
                api.op_matmul = planned_op_matmul(api._op_plans, api._full_op_matmul)  # noqa: SLF001
                _put_matmul_entry(api)
    elif _keep(api._call_plans, make_plan(a, b, semiring, out, c, launch)):  # noqa: SLF001 - a NumPy plan
        if len(api._call_plans) == 1:  # noqa: SLF001 - the first
            _put_matmul_entry(api)


def _put_matmul_entry(api: Any) -> None:
    """Put the plan lookups (``_matmul_entry``) in front of ``matmul``'s full
    path, for each kind of array that has plans."""
    full, numpy_plans, tensor_plans = api._full_matmul, api._call_plans, api._op_plans  # noqa: SLF001
    torch = sys.modules["torch"] if tensor_plans else None
    api._matmul = planned_matmul(  # noqa: SLF001
        full,
        sys.modules["numpy"].ndarray if numpy_plans else None,
        numpy_plans,
        torch.Tensor if torch is not None else None,
        planned_tensor_matmul(torch, tensor_plans, full) if torch is not None else None,
    )


def keep_argmax_plan(
    api: Any, a: Any, b: Any, semiring: str, given: tuple[Any, Any], results: tuple[Any, Any], launch: BoundLaunch
) -> None:
    """Keep the plan of the argmax product ``api`` just launched in place:
    NumPy arrays (``given`` is ``(out, k_out)``), or tensors inside an op."""
    torch = sys.modules.get("torch")
    tensors = torch is not None and isinstance(a, torch.Tensor)
    if not _bound_to_its_device(api, a if tensors else None):
        return
    (out, k_out), (c, k) = given, results
    if tensors:
        if _keep(api._op_argmax_plans, make_tensor_argmax_plan(torch, a, b, semiring, c, k, launch)):  # noqa: SLF001
            if api.op_matmul_argmax == api._full_op_argmax:  # noqa: SLF001
                api.op_matmul_argmax = planned_op_argmax(api._op_argmax_plans, api._full_op_argmax)  # noqa: SLF001
    elif _keep(api._argmax_plans, make_argmax_plan(a, b, semiring, out, k_out, c, k, launch)):  # noqa: SLF001
        if api._matmul_argmax == api._full_matmul_argmax:  # noqa: SLF001
            api._matmul_argmax = planned_argmax(type(a), api._argmax_plans, api._full_matmul_argmax)  # noqa: SLF001


def keep_backward_plan(
    api: Any, grad_c: Any, k: Any, a: Any, b: Any, semiring: str, grads: tuple[Any, Any], launches: list[BoundLaunch]
) -> None:
    """Keep the plan of the backward product an op's kernel just launched in place on tensors."""
    if not _bound_to_its_device(api, a):
        return
    made = make_tensor_backward_plan(sys.modules["torch"], grad_c, k, a, b, semiring, grads, launches)
    if _keep(api._op_backward_plans, made):  # noqa: SLF001
        if api.op_matmul_backward == api._full_op_backward:  # noqa: SLF001
            api.op_matmul_backward = planned_op_backward(api._op_backward_plans, api._full_op_backward)  # noqa: SLF001


def _bound_to_its_device(api: Any, tensor: Any) -> bool:
    """Whether a plan's launch, bound to one device, stays right: a CUDA tensor
    says its device (and the key holds it); host arrays run on the current
    device, which may change, unless the backend presents one device or the
    library is pinned to one."""
    if tensor is not None and tensor.device.type != "cpu":
        return True
    library = api.library
    return library.device is not None or library.backend.device_count() <= 1


def _keep(plans: dict[tuple[Any, ...], Any], made: tuple[tuple[Any, ...], Any] | None) -> bool:
    """Put ``made`` (key, plan) into ``plans``; False where there is none."""
    if made is None:
        return False
    if len(plans) >= MAX_PLANS:
        plans.clear()  # a job that sees more shapes than this starts over
    key, plans[key] = made
    return True
