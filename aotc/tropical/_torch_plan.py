"""Call plans for PyTorch tensors: the ``aotc::`` ops' kernels on a repeat call.

The ops' kernels (``_torch_ops``) run the handle's ``op_matmul``,
``op_matmul_argmax`` and ``op_matmul_backward``. The first call with given
shapes takes the full call path; where that used the tensors in place (no
copy, no staging), the launches it made are kept, keyed like NumPy's plans
(``_plan``) plus each tensor's device (``tensor_key``). A later call with
equal facts reads the data pointers, allocates its results, checks that an
``out`` is clear of both inputs' bytes, and launches on the device's current
stream. Tensors are always writable, so there is no writability check; the
argmax and backward plans allocate every result, so they have no check at all.
A training step (argmax forward while autograd records, then backward) runs
on plans from its second step.

Nothing here imports torch: a plan calls the tensors' own methods, and the
caller hands in the torch module.
"""

from __future__ import annotations

from aotc.arrays.operands import as_operand, meets, span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from aotc.runtime.launcher import BoundLaunch
    from aotc.tropical._plan import Plan

    # op_matmul(a, b, semiring, out), positional
    OpEntry = Callable[[Any, Any, Any, Any], Any]
    # matmul(a, b, semiring, out, stream), positional
    MatmulEntry = Callable[[Any, Any, Any, Any, Any], Any]

__all__ = [
    "current_stream", "make_tensor_argmax_plan", "make_tensor_backward_plan", "make_tensor_plan", "planned_op_argmax",
    "planned_op_backward", "planned_op_matmul", "planned_tensor_matmul", "tensor_key",
]  # fmt: skip


def tensor_key(semiring: str, *tensors: Any) -> tuple[Any, ...]:
    """A plan's key: the semiring, then each tensor's shape, strides, dtype and
    device. The forward entries spell it out inline (a call level less)."""
    key: list[Any] = [semiring]
    for t in tensors:
        key += (t.shape, t.stride(), t.dtype, t.device)
    return tuple(key)


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


def planned_tensor_matmul(torch: Any, plans: dict[tuple[Any, ...], Plan], full: MatmulEntry) -> MatmulEntry:
    """``matmul(a, b, semiring, out, stream)`` for ``a`` a plain ``torch.Tensor``
    (``_matmul_entry`` sends it here): an eager call that nothing but aotc
    would see (``aotc.arrays.torch_direct``'s conditions, checked inline) and that
    autograd does not record runs the plan ``planned_op_matmul`` would find.
    The route to the ops (``_torch``) and the op's kernel would only look
    that plan up: skipping them saves about a microsecond a call. Anything
    else, or no plan, goes to ``full``, which decides everything again."""
    from aotc.arrays import torch_direct as state

    tensor, compiling, grad_enabled = torch.Tensor, torch.compiler.is_compiling, torch.is_grad_enabled
    bump_version = torch.autograd.graph.increment_version
    # torch_direct.direct's checks, spelled out: a call level here is a tenth of what is saved.
    modes, function_modes, transforms = state.dispatch_modes, state.function_modes, state.transforms
    autocast, inference, tracing = state.autocast, state.inference, state.tracing

    def matmul(a: Any, b: Any, semiring: Any, out: Any, stream: Any) -> Any:
        # compiling() before anything dynamo cannot fold: it traces this function.
        if type(b) is not tensor or stream is not None or type(semiring) is not str or compiling():
            return full(a, b, semiring, out, stream)
        if out is None:
            if grad_enabled() and (a.requires_grad or b.requires_grad):
                return full(a, b, semiring, out, stream)  # autograd records: the argmax op
            key = (semiring, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device)
        elif type(out) is tensor and not (grad_enabled() and (a.requires_grad or b.requires_grad or out.requires_grad)):
            key = (
                semiring, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device,
                out.shape, out.stride(), out.dtype, out.device,
            )  # fmt: skip
        else:
            return full(a, b, semiring, out, stream)
        # Not checked here, unlike _direct: _torch_route.inside_op (an op's kernel
        # never calls this entry with stream=None, and the plan would run its very
        # product anyway); the meta device (the key holds the device, and no plan
        # is made on meta); functorch wrappers (inside a transform, transforms()
        # says so; one that left its transform has no storage, and the plan
        # declines it when its data pointer cannot be read).
        plan = plans.get(key)
        if plan is None or modes() or function_modes() or transforms() or autocast() or inference():
            return full(a, b, semiring, out, stream)
        if tracing() is not None:
            return full(a, b, semiring, out, stream)
        result = plan(a, b, out)
        if result is None:
            return full(a, b, semiring, out, stream)
        if out is not None:
            bump_version(out)  # what the _out op does: autograd sees out changed
        return result

    return matmul


def planned_op_argmax(plans: dict[tuple[Any, ...], Any], full: Callable[[Any, Any, str], Any]) -> Callable[[Any, Any, str], Any]:
    """``op_matmul_argmax(a, b, semiring)`` through the plan keyed by its tensors, else ``full``."""

    def op_matmul_argmax(a: Any, b: Any, semiring: str) -> Any:
        plan = plans.get((semiring, a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device))
        return plan(a, b) if plan is not None else full(a, b, semiring)

    return op_matmul_argmax


def planned_op_backward(plans: dict[tuple[Any, ...], Any], full: Callable[..., Any]) -> Callable[..., Any]:
    """``op_matmul_backward(grad_c, k, a, b, semiring)`` through the plan keyed by its tensors, else ``full``."""

    def op_matmul_backward(grad_c: Any, k: Any, a: Any, b: Any, semiring: str) -> Any:
        plan = plans.get(tensor_key(semiring, grad_c, k, a, b))
        return plan(grad_c, k, a, b) if plan is not None else full(grad_c, k, a, b, semiring)

    return op_matmul_backward


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


def _host_wait(launch: Any, stream: Any) -> Callable[[int], None] | None:
    """For CPU tensors (no CUDA stream: the emulator's host memory), the backend's
    stream synchronize, so results are complete when returned; None on a GPU."""
    return launch.__self__.stream_synchronize if stream is None else None


def make_tensor_plan(
    torch: Any, a: Any, b: Any, semiring: str, out: Any, c: Any, bound: BoundLaunch
) -> tuple[tuple[Any, ...], Plan] | None:
    """``(key, plan)`` for the forward product the ops' kernel just launched in
    place; the key is the one ``planned_op_matmul`` builds. None where no plan
    fits: a tensor subclass, or an ``out`` that was not the result."""
    tensor = torch.Tensor
    if type(a) is not tensor or type(b) is not tensor or type(c) is not tensor or (out is not None and out is not c):
        return None
    key = tensor_key(semiring, a, b) if out is None else tensor_key(semiring, a, b, out)
    a_span, b_span, c_span = (span(as_operand(x, name), x.element_size()) for x, name in ((a, "a"), (b, "b"), (c, "out")))
    result = (torch.empty, tuple(c.shape), c.dtype, c.device)
    return key, _plan(bound, meets(a_span, c_span), meets(b_span, c_span), result, current_stream(torch, c.device))


def _plan(
    bound: BoundLaunch, meets_a: tuple[int, int], meets_b: tuple[int, int], result: tuple[Any, ...], stream: Any
) -> Plan:
    launch, function, launch_shape, pack, tail = bound.launch, bound.function, bound.shape, bound.pack_head, bound.tail
    host_wait = _host_wait(launch, stream)
    a_from, a_to = meets_a
    b_from, b_to = meets_b
    # torch.empty(*shape, dtype=, device=) parses faster than a.new_empty(shape): 0.2 us a call.
    empty, shape, dtype, device = result

    def plan(a: Any, b: Any, out: Any) -> Any:
        try:
            pa, pb = a.data_ptr(), b.data_ptr()
            pc = out.data_ptr() if out is not None else 0
        except RuntimeError:
            return None  # no storage (a functorch wrapper that left its transform): the full path decides
        if out is None:
            out = empty(*shape, dtype=dtype, device=device)  # the key fixed a's dtype and device, the result's
            pc = out.data_ptr()
        elif a_from < pc - pa < a_to or b_from < pc - pb < b_to:
            return None  # maybe shared memory: the full path decides, exactly
        launch(function, launch_shape, stream() if stream is not None else 0, pack(pa, pb, pc) + tail)
        if host_wait:
            host_wait(0)
        return out

    return plan


def make_tensor_argmax_plan(torch: Any, a: Any, b: Any, semiring: str, c: Any, k: Any, bound: BoundLaunch) -> tuple[tuple[Any, ...], Any] | None:
    """``(key, plan)`` for the argmax product the ops' kernel just launched in
    place: the plan allocates the product and k* and launches. It has no
    per-call check: both results are new, so nothing can overlap."""
    tensor = torch.Tensor
    if type(a) is not tensor or type(b) is not tensor:
        return None
    launch, function, launch_shape, pack, tail = bound.launch, bound.function, bound.shape, bound.pack_head, bound.tail
    shape, k_shape, int32, stream = tuple(c.shape), tuple(k.shape), k.dtype, current_stream(torch, c.device)
    host_wait = _host_wait(launch, stream)

    def plan(a: Any, b: Any) -> tuple[Any, Any]:
        c, k = a.new_empty(shape), a.new_empty(k_shape, dtype=int32)
        launch(function, launch_shape, stream() if stream is not None else 0, pack(a.data_ptr(), b.data_ptr(), c.data_ptr(), k.data_ptr()) + tail)
        if host_wait:
            host_wait(0)
        return c, k

    return tensor_key(semiring, a, b), plan


def make_tensor_backward_plan(
    torch: Any, grad_c: Any, k: Any, a: Any, b: Any, semiring: str, grads: tuple[Any, Any], bound: list[BoundLaunch]
) -> tuple[tuple[Any, ...], Any] | None:
    """``(key, plan)`` for the backward product the ops' kernel just launched
    in place: the plan allocates both gradients zeroed and runs backward_a and
    backward_b (``_backward``: pointers grad_C, k*, B or A, the gradient)."""
    tensor = torch.Tensor
    if any(type(t) is not tensor for t in (grad_c, k, a, b)):
        return None
    (launch_a, function_a, shape_a, pack_a, tail_a), (launch_b, function_b, shape_b, pack_b, tail_b) = (
        (x.launch, x.function, x.shape, x.pack_head, x.tail) for x in bound
    )  # fmt: skip
    grad_a_shape, grad_b_shape, stream = tuple(grads[0].shape), tuple(grads[1].shape), current_stream(torch, a.device)
    host_wait = _host_wait(launch_b, stream)

    def plan(grad_c: Any, k: Any, a: Any, b: Any) -> tuple[Any, Any]:
        grad_a, grad_b = a.new_zeros(grad_a_shape), b.new_zeros(grad_b_shape)  # b's dtype and device are a's: keyed
        pg, pk, on = grad_c.data_ptr(), k.data_ptr(), stream() if stream is not None else 0
        launch_a(function_a, shape_a, on, pack_a(pg, pk, b.data_ptr(), grad_a.data_ptr()) + tail_a)
        launch_b(function_b, shape_b, on, pack_b(pg, pk, a.data_ptr(), grad_b.data_ptr()) + tail_b)
        if host_wait:
            host_wait(0)
        return grad_a, grad_b

    return tensor_key(semiring, grad_c, k, a, b), plan
