"""The library's PyTorch ops, registered on first use: ``op_of(layout)``.

Registration (``_torch_ops.register``) happens once per library, at the first
tensor call of any of its layouts, and records each layout's op and the
kernels registered for it here (``record``). A first use traced by
``torch.compile`` registers eagerly (``_traced``) and reads the op from
``torch.ops``, as dynamo reads any op.
"""

from __future__ import annotations

from aotc.kernels._traced import constant_when_traced

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._binding import Layout

__all__ = ["kernel_of", "op_of", "out_kernel_of", "record"]

# layout -> (torch.ops.<library>.<layout>, its kernel, its .out overload's kernel or None),
# recorded last, once registered: read without a lock from then on.
_ops: dict[Any, tuple[Any, Any, Any]] = {}


def record(layout: Layout, op: Any, kernel: Any, out_kernel: Any) -> None:
    """Keep what ``_torch_ops`` registered for ``layout``."""
    _ops[layout] = (op, kernel, out_kernel)


def op_of(layout: Layout) -> Any:
    """The layout's op, registering the library's ops on first use."""
    import torch  # imported: a tensor reached here

    # Traced, the op is read from torch.ops as dynamo reads any op: the table
    # changes when the first use registers it, which a guard cannot hold.
    if not torch.compiler.is_compiling():
        found = _ops.get(layout)
        if found is not None:
            return found[0]
    return getattr(getattr(torch.ops, _register(layout)), layout.name)


def kernel_of(layout: Layout) -> Any:
    """The op's kernel (called directly where nothing but it would see the op), registering first."""
    found = _ops.get(layout)
    if found is None:
        op_of(layout)
        found = _ops[layout]
    return found[1]


def out_kernel_of(layout: Layout) -> Any:
    """The ``.out`` overload's kernel, registering first."""
    found = _ops.get(layout)
    if found is None:
        op_of(layout)
        found = _ops[layout]
    return found[2]


@constant_when_traced  # registered eagerly where a first use is traced by torch.compile (_traced)
def _register(layout: Layout) -> str:
    """Register the library's ops; returns their namespace, ``torch.ops.<library>``'s name."""
    layout.family.bindings.torch_ops()
    return layout.library.name
