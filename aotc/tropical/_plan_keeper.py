"""Which call plan a launched product leaves, and where its handle keeps it.

A ``Tropical`` handle has two entries that plans sit in front of: ``_matmul``
(the public ``matmul``, NumPy arrays: ``_plan``) and ``op_matmul`` (the
aotc:: ops' kernel, tensors: ``_torch_plan``). Each starts as its full path;
the first plan kept puts the plan lookup in front of it, once.
"""

from __future__ import annotations

import sys

from aotc.tropical._plan import MAX_PLANS, make_plan, planned_matmul
from aotc.tropical._torch_plan import make_torch_plan, planned_op_matmul

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.runtime.launcher import BoundLaunch

__all__ = ["keep_plan"]


def keep_plan(api: Any, a: Any, b: Any, semiring: str, out: Any, c: Any, launch: BoundLaunch) -> None:
    """Keep the plan of the forward product ``api`` just launched in place, if one fits."""
    torch = sys.modules.get("torch")
    tensors = torch is not None and isinstance(a, torch.Tensor)
    library = api.library
    if (not tensors or a.device.type == "cpu") and library.device is None and library.backend.device_count() > 1:
        return  # host arrays run on the current device, which may change: the launch is bound to one
    if tensors:
        made, plans = make_torch_plan(torch, a, b, semiring, out, c, launch), api._op_plans  # noqa: SLF001
    else:
        made, plans = make_plan(a, b, semiring, out, c, launch), api._call_plans  # noqa: SLF001
    if made is None:
        return
    if len(plans) >= MAX_PLANS:
        plans.clear()  # a job that sees more shapes than this starts over
    key, plans[key] = made
    if tensors:
        if api.op_matmul == api._full_op_matmul:  # noqa: SLF001 - the first plan: put the lookup in front
            api.op_matmul = planned_op_matmul(plans, api._full_op_matmul)  # noqa: SLF001
    elif api._matmul == api._full_matmul:  # noqa: SLF001
        api._matmul = planned_matmul(type(a), plans, api._full_matmul)  # noqa: SLF001
