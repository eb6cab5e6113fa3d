"""The library's PyTorch ops, registered on first use: ``op_of(layout)``.

Registration (``_torch_ops.register``) happens once per library, at the first
tensor call of any of its layouts. A first use traced by ``torch.compile``
registers eagerly (``_traced``) and reads the op from ``torch.ops``, as dynamo
reads any op.
"""

from __future__ import annotations

from aotc.kernels._traced import constant_when_traced

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._binding import Layout

__all__ = ["op_of"]


def op_of(layout: Layout) -> Any:
    """The layout's op, registering the library's ops on first use."""
    import torch  # imported: a tensor reached here

    # Traced, the op is read from torch.ops as dynamo reads any op: the layout's
    # attribute changes when the first use registers it, which a guard cannot hold.
    if not torch.compiler.is_compiling():
        op = layout.torch_op
        if op is not None:
            return op
    return getattr(getattr(torch.ops, _register(layout)), layout.name)


@constant_when_traced  # registered eagerly where a first use is traced by torch.compile (_traced)
def _register(layout: Layout) -> str:
    """Register the library's ops; returns their namespace, ``torch.ops.<library>``'s name."""
    layout.family.bindings.torch_ops()
    return layout.library.name
