"""PyTorch tensors in ``aotc.tropical``: each call becomes one ``aotc::`` op.

A ``Tropical`` method given tensors (see ``_torch_route``) comes here; the
first such call imports ``_torch_ops``, which registers the ops, so importing
aotc never imports torch. A product whose operands want gradients runs the
argmax op, whose autograd keeps k* for the backward pass; ``out=`` runs the
``_out`` op, which writes into it (refused while autograd records, as
PyTorch's own out= ops are). Everything here is plain enough for
``torch.compile(fullgraph=True)`` to trace.
"""

from __future__ import annotations

from typing import Any

import torch

from aotc.errors import ArgumentError
from aotc.tropical import _torch_ops
from aotc.tropical._torch_route import library_key

__all__ = ["matmul", "matmul_argmax", "matmul_backward"]

_ops = torch.ops.aotc


def _records(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)


def matmul(api: Any, a: torch.Tensor, b: torch.Tensor, semiring: str, out: Any) -> torch.Tensor:
    library = library_key(api)
    if _records(a, b):
        if out is not None:
            msg = "out: not supported while autograd records; call under torch.no_grad() or drop out="
            raise ArgumentError(msg)
        return _ops.tropical_matmul_argmax(a, b, semiring, library)[0]
    if out is None:
        return _ops.tropical_matmul(a, b, semiring, library)
    _ops.tropical_matmul_out(a, b, semiring, library, out)
    return out


def matmul_argmax(api: Any, a: torch.Tensor, b: torch.Tensor, semiring: str, out: Any, k_out: Any) -> tuple[Any, Any]:
    library = library_key(api)
    if out is None and k_out is None:
        return _ops.tropical_matmul_argmax(a, b, semiring, library)
    if _records(a, b):
        msg = "out: not supported while autograd records; call under torch.no_grad() or drop out= and k_out="
        raise ArgumentError(msg)
    if out is None or k_out is None:  # one of the two given: the other is allocated here
        shape, k_shape = _torch_ops.result_shapes(a, b, semiring, library)
        out = a.new_empty(shape) if out is None else out
        k_out = a.new_empty(k_shape, dtype=torch.int32) if k_out is None else k_out
    _ops.tropical_matmul_argmax_out(a, b, semiring, library, out, k_out)
    return out, k_out


def matmul_backward(
    api: Any, grad_c: torch.Tensor, k: torch.Tensor, a: torch.Tensor, b: torch.Tensor, semiring: str
) -> tuple[torch.Tensor, torch.Tensor]:
    return _ops.tropical_matmul_backward(grad_c, k, a, b, semiring, library_key(api))
