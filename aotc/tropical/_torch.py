"""PyTorch autograd for the tropical product: forward with argmax, backward by k*.

Imported only when ``aotc.tropical.matmul`` sees a tensor that requires
gradients. The forward pass runs the argmax kernel and keeps k*; the backward
pass scatters ``grad_c`` along k* with the backward kernels, so nothing is
recomputed. It runs wherever the kernels do: CUDA tensors on a GPU backend,
CPU tensors on the emulator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from aotc.tropical._call import Tropical

__all__ = ["TropicalMatmul", "tropical_matmul"]


class TropicalMatmul(torch.autograd.Function):
    """``C = A (x) B``; gradients flow to the operand entries that won."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, semiring: str, api: Tropical) -> torch.Tensor:
        # `api` is the library's handle the product was called through: both passes use its kernels.
        c, k = api.matmul_argmax(a.detach(), b.detach(), semiring)
        ctx.save_for_backward(a, b, k)
        ctx.semiring = semiring
        ctx.api = api
        return c

    @staticmethod
    def backward(ctx: Any, grad_c: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None, None]:
        a, b, k = ctx.saved_tensors
        grad_a, grad_b = ctx.api.matmul_backward(grad_c.contiguous(), k, a.detach(), b.detach(), ctx.semiring)
        return (grad_a if ctx.needs_input_grad[0] else None, grad_b if ctx.needs_input_grad[1] else None, None, None)


def tropical_matmul(a: torch.Tensor, b: torch.Tensor, semiring: str, api: Tropical) -> torch.Tensor:
    return TropicalMatmul.apply(a, b, semiring, api)
