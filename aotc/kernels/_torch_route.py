"""Which calls with PyTorch tensors go through a family's custom op.

A call whose in and inout arrays are all tensors, with no out array and no
stream given, goes through ``torch.ops.<library>.<family>`` (``_torch_ops``),
so autograd and ``torch.compile`` see an operator. The op's kernel runs the
family itself (``Family.launch``), never the op again, on PyTorch's current
stream. A call given out arrays writes them in place, and one given a stream
launches there: both run directly, as the ops return new tensors on the
current stream.
Nothing here imports torch: the caller found it in ``sys.modules``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._family import Family

__all__ = ["call_op", "to_op"]


def to_op(family: Family, values: dict[str, Any], stream: Any) -> bool:
    """Whether this call goes through the family's op."""
    tensor = sys.modules["torch"].Tensor
    if stream is not None or any(values.get(name) is not None for name in family.outs):
        return False
    return all(isinstance(values[name], tensor) for name in family.given)


def call_op(family: Family, values: dict[str, Any], axes: dict[str, Any]) -> Any:
    """The call, through the op."""
    op = family.torch_op
    if op is None:
        from aotc.kernels import over

        op = family.torch_op = getattr(over(family.library).torch_ops(), family.name)
        from aotc.arrays.torch_direct import direct_all
        from aotc.kernels._entry import enable_tensors

        torch = sys.modules["torch"]
        enable_tensors(family, torch.Tensor, op, family.torch_kernel, torch.is_grad_enabled, direct_all, torch.autograd.graph.increment_version)
    outs = op(*(values[name] for name in family.positional), **axes)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,) if family.outs else ()
    by_name = dict(zip(family.outs, outs))
    results = tuple(by_name[name] if name in by_name else values[name] for name in family.results)
    return results[0] if len(results) == 1 else results
