"""A layout's decision for tensors as an op receives them: fake tensors while
``torch.compile`` traces (symbolic shapes), meta tensors, or real ones."""

from __future__ import annotations

from typing import Any

from aotc.arrays.kinds.torch import dtype_name
from aotc.errors import ArgumentError
from aotc.kernels._decision import decide

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotc.kernels._binding import Layout

__all__ = ["fake_decision"]


def _axes(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {axis: value for axis, value in kwargs.items() if value is not None}


def fake_decision(layout: Layout, values: dict[str, Any], kwargs: dict[str, Any], outs: dict[str, Any]) -> Any:
    """The decision for fake (or real) tensors, every one on the first one's device."""
    first_name = layout.given[0]
    first = values[first_name]
    for name, tensor in (*((n, values[n]) for n in layout.given), *outs.items()):
        if tensor.device != first.device:
            msg = f"{name}: on {tensor.device}, but {first_name} is on {first.device}"
            raise ArgumentError(msg)
    dtypes = {name: dtype_name(values[name].dtype) for name in layout.given}
    dtypes.update((name, dtype_name(out.dtype)) for name, out in outs.items())
    shapes = {name: tuple(values[name].shape) for name in layout.given}
    sizes = {name: values[name] for name in layout.extents}
    sizes.update((name, kwargs.get(name)) for name in layout.lengths)
    axes = {axis: value for axis, value in _axes(kwargs).items() if axis not in layout.lengths}
    return decide(layout, shapes, dtypes, axes, sizes, {name: tuple(out.shape) for name, out in outs.items()})
