"""Call plans for PyTorch tensors: the ``aotc::tropical_matmul`` ops' kernel on a repeat call.

The ops' kernel (``_torch_ops``) runs ``Tropical.op_matmul``. Its first call
with given shapes takes the full call path; where that used the tensors in
place (no copy, no staging), the launch it made is kept, keyed like NumPy's
plans (``_plan``) plus each tensor's device. A later call with equal facts
reads three data pointers, checks that ``out`` is clear of both inputs'
bytes, and launches on the device's current stream. Tensors are always
writable, so there is no writability check.

Nothing here imports torch: a plan calls the tensors' own methods, and the
stream reader is handed in by the caller (``current_stream``).
"""

from __future__ import annotations

from aotc.tropical._arrays import as_operand
from aotc.tropical._plan import span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from aotc.runtime.launcher import BoundLaunch
    from aotc.tropical._plan import Plan

    # op_matmul(a, b, semiring, out), positional
    OpEntry = Callable[[Any, Any, Any, Any], Any]

__all__ = ["current_stream", "make_torch_plan", "planned_op_matmul"]


def planned_op_matmul(plans: dict[tuple[Any, ...], Plan], full: OpEntry) -> OpEntry:
    """``op_matmul(a, b, semiring, out)`` that calls the plan keyed by its
    tensors, if there is one and its checks pass, else ``full``. The ops hand
    it plain tensors (their schema says so), so the key needs no type checks."""

    def op_matmul(a: Any, b: Any, semiring: str, out: Any) -> Any:
        if out is None:
            key = (semiring, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device)
        else:
            key = (
                semiring, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device,
                out.shape, out.stride(), out.dtype, out.device,
            )  # fmt: skip
        plan = plans.get(key)
        if plan is not None:
            result = plan(a, b, out)
            if result is not None:
                return result
        return full(a, b, semiring, out)

    return op_matmul


def current_stream(torch: Any, device: Any) -> Callable[[], int] | None:
    """A reader of ``device``'s current CUDA stream handle, or None for a CPU
    device (the emulator's stream is 0). ``_cuda_getCurrentRawStream`` is what
    torch.compile's generated code calls for the same: about 0.1 us, against
    several for ``torch.cuda.current_stream(device).cuda_stream``."""
    if device.type != "cuda":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # noqa: SLF001 - see the docstring
    if raw is not None:
        return lambda: raw(index)
    return lambda: torch.cuda.current_stream(index).cuda_stream


def make_torch_plan(
    torch: Any, a: Any, b: Any, semiring: str, out: Any, c: Any, bound: BoundLaunch
) -> tuple[tuple[Any, ...], Plan] | None:
    """``(key, plan)`` for the forward product the ops' kernel just launched in
    place; the key is the one ``planned_op_matmul`` builds. None where no plan
    fits: a tensor subclass, or an ``out`` that was not the result."""
    tensor = torch.Tensor
    if type(a) is not tensor or type(b) is not tensor or type(c) is not tensor or (out is not None and out is not c):
        return None
    key: tuple[Any, ...] = (semiring, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device)
    if out is not None:
        key += (out.shape, out.stride(), out.dtype, out.device)
    A, B, C = as_operand(a, "a"), as_operand(b, "b"), as_operand(c, "out")
    (a_low, a_high), (b_low, b_high), (c_low, c_high) = (
        span(A, a.element_size()), span(B, b.element_size()), span(C, c.element_size())
    )  # fmt: skip
    meets_a, meets_b = (a_low - c_high, a_high - c_low), (b_low - c_high, b_high - c_low)  # as in _plan
    return key, _plan(bound, meets_a, meets_b, tuple(c.shape), current_stream(torch, c.device))


def _plan(
    bound: BoundLaunch, meets_a: tuple[int, int], meets_b: tuple[int, int], shape: tuple[int, ...], stream: Any
) -> Plan:
    launch, function, launch_shape, pack, tail = bound.launch, bound.function, bound.shape, bound.pack_head, bound.tail
    a_from, a_to = meets_a
    b_from, b_to = meets_b

    def plan(a: Any, b: Any, out: Any) -> Any:
        pa, pb = a.data_ptr(), b.data_ptr()
        if out is None:
            out = a.new_empty(shape)  # a's dtype and device are the result's: the key fixed them
            pc = out.data_ptr()
        else:
            pc = out.data_ptr()
            if a_from < pc - pa < a_to or b_from < pc - pb < b_to:
                return None  # maybe shared memory: the full path decides, exactly
        launch(function, launch_shape, stream() if stream is not None else 0, pack(pa, pb, pc) + tail)
        return out

    return plan
