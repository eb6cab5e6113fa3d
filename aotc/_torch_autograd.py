"""PyTorch autograd for the tropical product: forward with argmax, backward by k*.

Imported only when ``aotc.tropical.matmul`` sees a tensor that requires
gradients. The forward pass runs the argmax kernel and keeps k*; the backward
pass scatters ``grad_c`` along k* with the backward kernels, so nothing is
recomputed. It runs wherever the kernels do: CUDA tensors on a GPU backend,
CPU tensors on the emulator.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["TropicalMatmul", "tropical_matmul"]


class TropicalMatmul(torch.autograd.Function):
    """``C = A (x) B``; gradients flow to the operand entries that won."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, semiring: str) -> torch.Tensor:
        from aotc.tropical import matmul_argmax

        c, k = matmul_argmax(a.detach(), b.detach(), semiring)
        ctx.save_for_backward(a, b, k)
        ctx.semiring = semiring
        return c

    @staticmethod
    def backward(ctx: Any, grad_c: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
        from aotc.tropical import matmul_backward

        a, b, k = ctx.saved_tensors
        grad_a, grad_b = matmul_backward(grad_c.contiguous(), k, a.detach(), b.detach(), ctx.semiring)
        return (grad_a if ctx.needs_input_grad[0] else None, grad_b if ctx.needs_input_grad[1] else None, None)


def tropical_matmul(a: torch.Tensor, b: torch.Tensor, semiring: str) -> torch.Tensor:
    return TropicalMatmul.apply(a, b, semiring)
