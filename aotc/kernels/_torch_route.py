"""Which calls with PyTorch tensors go through a family's custom op.

A call whose in and inout arrays are all tensors, with no stream given, goes
through ``torch.ops.<library>.<family>`` (``_torch_ops``), or through its
``.out`` overload where every out array is given as a tensor, so autograd and
``torch.compile`` see an operator. The op's kernel runs the
family itself (``Family.launch``), never the op again, on PyTorch's current
stream. A call given some out arrays but not all, or given a stream, runs
directly: the ops allocate on, and launch on, PyTorch's current stream.
Nothing here imports torch: the caller found it in ``sys.modules``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._family import Family

__all__ = ["call_op", "to_op"]

_direct_all: Any = None  # aotc.arrays.torch_direct.direct_all, set with the first op


def to_op(family: Family, values: dict[str, Any], stream: Any) -> bool:
    """Whether this call goes through the family's op: every array a tensor,
    and either no out array given (the op) or every one (its ``.out``)."""
    tensor = sys.modules["torch"].Tensor
    if stream is not None:
        return False
    given = [values.get(name) for name in family.outs]
    if any(out is not None for out in given) and not all(isinstance(out, tensor) for out in given):
        return False
    return all(isinstance(values[name], tensor) for name in family.given)


def call_op(family: Family, values: dict[str, Any], axes: dict[str, Any]) -> Any:
    """The call, through the op."""
    global _direct_all  # noqa: PLW0603 - imported once, where torch already is
    if any(axis not in family.open_axes for axis in axes):
        axes = _open_axes(family, axes)
    op = family.torch_op
    if op is None:
        from aotc.kernels import over

        op = family.torch_op = getattr(over(family.library).torch_ops(), family.name)
        from aotc.arrays.torch_direct import direct_all
        from aotc.kernels._entry import enable_tensors

        _direct_all = direct_all
        torch = sys.modules["torch"]
        enable_tensors(family, torch.Tensor, op, family.torch_kernel, torch.is_grad_enabled, direct_all, torch.autograd.graph.increment_version)
    arguments = [values[name] for name in family.positional]
    if family.outs and values.get(family.outs[0]) is not None:  # to_op: then every out array is given
        outs = tuple(values[name] for name in family.outs)
        # Nothing but the overload would see it (out= records no gradient): its kernel, directly.
        direct = _direct_all((*(values[name] for name in family.given), *outs))
        (family.torch_out_kernel if direct else op.out)(*arguments, **dict(zip(family.outs, outs)), **axes)
    else:
        outs = op(*arguments, **axes)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,) if family.outs else ()
    by_name = dict(zip(family.outs, outs))
    results = tuple(by_name[name] if name in by_name else values[name] for name in family.results)
    return results[0] if len(results) == 1 else results


def _open_axes(family: Family, axes: dict[str, Any]) -> dict[str, Any]:
    """The axes the op takes: those of more than one value. An axis of one value
    is no keyword of the op: named with that value it is dropped, with another
    refused in the line ``Family.choose`` would give."""
    for axis, value in axes.items():
        if axis not in family.open_axes and value not in family.axes[axis]:
            raise family.not_a_value(axis, value)
    return {axis: value for axis, value in axes.items() if axis in family.open_axes}
