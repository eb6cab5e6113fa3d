"""PyTorch tensors in ``aotc.tropical``: each call becomes one ``aotc::`` op.

A ``Tropical`` method given tensors (see ``_torch_route``) comes here; the
first such call imports ``_torch_ops``, which registers the ops, so importing
aotc never imports torch. A product whose operands want gradients runs the
argmax op, whose autograd keeps k* for the backward pass; ``out=`` runs the
``_out`` op, which writes into it (refused while autograd records, as
PyTorch's own out= ops are). Everything here is plain enough for
``torch.compile(fullgraph=True)`` to trace.

The ops launch on torch's current stream. A call that names its own
``stream=`` runs the call path directly instead, outside the ops (and so
without autograd, which is refused rather than silently dropped), unless the
stream it names is torch's current one on the operands' device: that call is
the op's own, and takes the ops' path (on a GPU, 20 us a call instead of 90).

In eager mode, a call that nothing but aotc itself would see skips the
dispatcher and runs the op's kernel (the call plan) directly (``_direct``;
a repeat ``matmul`` with a plan does not come here at all: ``_matmul_entry``):
plain ``torch.Tensor`` operands (no subclass, no functorch wrapper, not on the
meta device), no TorchDispatchMode or TorchFunctionMode, no torch.func
transform, no tracing or compiling, autocast off, not in inference mode, and
autograd not recording. Each of those is a case where the dispatcher does
something (a mode, a transform, a fake or traced tensor, an inference tensor,
autograd): those calls go through the ops as before. An ``out=`` still has
its version counter bumped, as the ``_out`` op does.

Otherwise, in eager mode, a call that autograd does not record enters the ops below the
autograd key (``_torch_ops.call_unrecorded``): that is where the ops' own
autograd kernel would send it, and skipping that Python layer saves about
3.5 us a call. A call that autograd records runs the argmax op inside
``_ArgmaxProduct``, an ``autograd.Function`` with the same formula the op's
own autograd has (``_torch_ops.keep_k``, ``through_k``): it costs about half
of what ``register_autograd``'s layer does per call (RESULTS.md). A traced
call (torch.compile) calls the ops plainly, with the autograd registered on
them. (torch.func transforms work with neither: PyTorch 2.13's
``register_autograd`` layer is itself an old-style Function.)
"""

from __future__ import annotations

from typing import Any

import torch

from aotc.arrays.placement import stream_handle
from aotc.errors import ArgumentError
from aotc.tropical import _torch_ops
from aotc.arrays.torch_direct import direct as _direct
from aotc.tropical._torch_plan import current_stream
from aotc.tropical._torch_route import handle, library_key

__all__ = ["matmul", "matmul_argmax", "matmul_backward"]

_ops = torch.ops.aotc
_matmul = _ops.tropical_matmul.default  # the overloads themselves: no overload resolution per call
_matmul_out = _ops.tropical_matmul_out.default
_argmax = _ops.tropical_matmul_argmax.default
_unrecorded = _torch_ops.call_unrecorded
_below_autograd = _torch_ops.BELOW_AUTOGRAD
_compiling = torch.compiler.is_compiling
_bump_version = torch.autograd.graph.increment_version


class _ArgmaxProduct(torch.autograd.Function):
    """``(c, k*)`` with gradients to a and b, for eager calls autograd records.
    The older ``forward(ctx, ...)`` form: with ``setup_context`` each call
    costs about twice as much here (torch 2.13)."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, semiring: str, library: str) -> tuple[torch.Tensor, torch.Tensor]:
        # This Function is the autograd: inside it, autograd records nothing.
        if _direct(a, b):
            c, k = handle(library).op_matmul_argmax(a, b, semiring)
        else:
            c, k = _unrecorded(_argmax, a, b, semiring, library)
        _torch_ops.keep_k(ctx, (a, b, semiring, library), (c, k))
        ctx.mark_non_differentiable(k)
        return c, k

    @staticmethod
    def backward(ctx: Any, grad_c: torch.Tensor, grad_k: Any) -> tuple[Any, ...]:
        return _torch_ops.through_k(ctx, grad_c, grad_k)


def _argmax_recorded(a: torch.Tensor, b: torch.Tensor, semiring: str, library: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The argmax op while autograd records: through ``_ArgmaxProduct`` in
    eager mode, through the op's registered autograd when traced."""
    if _compiling():
        return _ops.tropical_matmul_argmax(a, b, semiring, library)
    return _ArgmaxProduct.apply(a, b, semiring, library)


def _records(a: torch.Tensor, b: torch.Tensor, c: Any = None) -> bool:
    """Whether autograd records a call on these tensors (``c`` may be None),
    spelled out: a generator over them costs a third of the route."""
    if not torch.is_grad_enabled():
        return False
    return a.requires_grad or b.requires_grad or (c is not None and c.requires_grad)


def _refuse(argument: str, while_recording: bool) -> None:
    if while_recording:
        fix = "call under torch.no_grad()" if argument != "stream" else "use `with torch.cuda.stream(s):` instead"
        msg = f"{argument}: not supported while autograd records; {fix} or drop {argument}="
        raise ArgumentError(msg)


def _foreign_stream(a: torch.Tensor, stream: Any) -> bool:
    """Whether ``stream`` (given, not None) is another stream than torch's current
    one on ``a``'s device, where the ops would launch anyway."""
    if a.device.type != "cuda" or _compiling():
        return True
    return stream_handle(stream, None) != current_stream(torch, a.device)()


def matmul(api: Any, a: torch.Tensor, b: torch.Tensor, semiring: str, out: Any, stream: Any) -> torch.Tensor:
    records = _records(a, b, out)
    if stream is not None and _foreign_stream(a, stream):
        _refuse("stream", records)
        return _torch_ops.call_back(api.matmul, a, b, semiring, out=out, stream=stream)
    if not records and _direct(a, b, out):
        if out is None:
            return api.op_matmul(a, b, semiring, None)
        api.op_matmul(a, b, semiring, out)
        _bump_version(out)  # what the _out op does: autograd sees out changed
        return out
    library = library_key(api)
    if records:
        _refuse("out", out is not None)
        return _argmax_recorded(a, b, semiring, library)[0]
    # _torch_ops.call_unrecorded, spelled out: on the hottest path a call level is 0.2 us.
    if _compiling():
        if out is None:
            return _matmul(a, b, semiring, library)
        _matmul_out(a, b, semiring, library, out)
        return out
    with _below_autograd():
        if out is None:
            return _matmul(a, b, semiring, library)
        _matmul_out(a, b, semiring, library, out)
    return out


def matmul_argmax(
    api: Any, a: torch.Tensor, b: torch.Tensor, semiring: str, out: Any, k_out: Any, stream: Any
) -> tuple[Any, Any]:
    records = _records(a, b)
    if stream is not None and _foreign_stream(a, stream):
        _refuse("stream", records)
        return _torch_ops.call_back(api.matmul_argmax, a, b, semiring, out=out, k_out=k_out, stream=stream)
    if out is None and k_out is None and not records and _direct(a, b):
        return api.op_matmul_argmax(a, b, semiring)
    library = library_key(api)
    if out is None and k_out is None:
        if records:
            return _argmax_recorded(a, b, semiring, library)
        return _unrecorded(_argmax, a, b, semiring, library)
    _refuse("out" if out is not None else "k_out", records)
    if out is None or k_out is None:  # one of the two given: the other is allocated here
        shape, k_shape = _torch_ops.result_shapes(a, b, semiring, library)
        out = a.new_empty(shape) if out is None else out
        k_out = a.new_empty(k_shape, dtype=torch.int32) if k_out is None else k_out
    _ops.tropical_matmul_argmax_out(a, b, semiring, library, out, k_out)
    return out, k_out


def matmul_backward(
    api: Any, grad_c: torch.Tensor, k: torch.Tensor, a: torch.Tensor, b: torch.Tensor, semiring: str, stream: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    if stream is not None and _foreign_stream(a, stream):
        _refuse("stream", _records(grad_c, a, b))
        return _torch_ops.call_back(api.matmul_backward, grad_c, k, a, b, semiring, stream=stream)
    return _ops.tropical_matmul_backward(grad_c, k, a, b, semiring, library_key(api))
