"""The backward product: ``(grad_a, grad_b)`` from ``grad_c``, k* and the operands.

Two kernels run, ``backward_a`` and ``backward_b``, each owning rows or
columns of its gradient (deterministic: no float atomics), into gradients
allocated here and zeroed. Where every operand was used in place (nothing
staged), the caller may ask for both launches bound to these sizes, for a
call plan (``_torch_plan``): each binds its four pointers
``(grad_C, Kstar, B or A, grad_A or grad_B)``.
"""

from __future__ import annotations

from aotc.arrays.memory import Memory, on_host_memory, stageable
from aotc.arrays.operands import Operand, as_operand, empty_like_kind, zeros_like_kind
from aotc.arrays.placement import device_of, output, same, stream_handle
from aotc.arrays.streams import hold_until_done, wait_for_producers, zero_on
from aotc.errors import ArgumentError
from aotc.tropical._operands import GRID_YZ_MAX, check_batch, check_grid, matrix, pair, semiring_spec

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

__all__ = ["backward_product"]

# The pointers a call plan passes each kernel, in order: its leading parameters
# (a kernel whose index lists them otherwise is not bound).
_LEADING = {"grad_A": ("grad_C", "Kstar", "B", "grad_A"), "grad_B": ("grad_C", "Kstar", "A", "grad_B")}


def backward_product(
    api: Any, grad_c: Any, k: Any, a: Any, b: Any, semiring: Any, stream: Any, launched: list[Any] | None = None, outs: Any = None
) -> tuple[Any, Any]:
    """``(grad_a, grad_b)``; see ``Tropical.matmul_backward``. Where ``launched``
    is a list and all four arrays were used in place, it gets the two launches
    bound to these sizes, backward_a's first. ``outs``, where given, are the two
    arrays to write them into (JAX's buffers, ``aotc.tropical._jax``)."""
    library = api.library
    spec = semiring_spec(library, semiring)
    if spec.get("counting") or spec["add"] not in ("max", "min") or spec["mul"] not in ("add", "mul"):
        msg = f"semiring: {semiring!r} has no gradient (needs add max/min and mul add/mul)"
        raise ArgumentError(msg)
    A, B = as_operand(a, "a"), as_operand(b, "b")
    G, Kop = as_operand(grad_c, "grad_c"), as_operand(k, "k")
    device = device_of(A, "a", library)
    for op, name in ((B, "b"), (G, "grad_c"), (Kop, "k")):
        if op.device != A.device:
            device_of(op, name, library)
    same(A, B, "b")
    same(A, G, "grad_c")
    given_stream, stream = stream, stream_handle(stream, A)
    backend = library.backend_on(device)
    host_memory = on_host_memory(backend)
    Memory(backend, host_memory).check(A, "a")
    if not host_memory:
        A, B, G, Kop = (stageable(op, n) for op, n in ((A, "a"), (B, "b"), (G, "grad_c"), (Kop, "k")))
    A, B, (batch_a, batch_b, m, kk, n, sa, sb, lda, ldb) = pair(A, B, False)
    batched = batch_a is not None or batch_b is not None
    batch = (batch_a if batch_a is not None else batch_b) or 0
    lead = (batch,) if batched else ()
    G, batch_g, gm, gn, sg, ldgc = matrix(G, "grad_c", False)
    if (gm, gn) != (m, n) or batch_g != (batch if batched else None):
        msg = f"grad_c: shape {G.shape} does not match the product's {(*lead, m, n)}"
        raise ArgumentError(msg)
    if Kop.dtype != "i32" or Kop.shape != (*lead, m, n) or Kop.device != A.device:
        msg = f"k: expected the int32 {(*lead, m, n)} array matmul_argmax returned on {A.device}, got {Kop.dtype} {Kop.shape} on {Kop.device}"
        raise ArgumentError(msg)
    Kop, _, _, _, sk, ldk = matrix(Kop, "k", False)
    variant = "batched" if batched else "single"
    launchers = [api._launcher(semiring, A.dtype, p, variant, device, stream) for p in ("backward_a", "backward_b")]  # noqa: SLF001
    # Allocated (by the operands' framework) and zeroed on the call's stream, where the kernels add into them.
    if outs is None:
        grads = [_zeroed(backend, op, name, A.dtype, stream) for op, name in ((A, "grad_A"), (B, "grad_B"))]
    else:
        inputs = ((G, "grad_c"), (Kop, "k"), (A, "a"), (B, "b"))
        grads = [output(out, name, op, op.shape, A.dtype, inputs, library, stream) for out, op, name in zip(outs, (A, B), ("grad_a", "grad_b"))]
        for grad in grads:
            _zero(backend, grad, stream)
    wait_for_producers(backend, stream, (G, Kop, A, B))
    if given_stream is not None:
        hold_until_done((G, Kop, A, B, *grads), stream)
    if not (m and n and kk and (batch or not batched)):
        return grads[0].obj, grads[1].obj  # no term, no gradient: zeros, no launch
    check_batch(batch)
    values = {"M": m, "N": n, "K": kk, "lda": lda, "ldb": ldb, "ldgc": ldgc, "ldk": ldk, "batch": batch}
    values.update(ldga=kk, ldgb=n, batch_stride_grad_C=sg, batch_stride_Kstar=sk)
    values.update(batch_stride_A=sa if batch_a is not None else 0, batch_stride_B=sb if batch_b is not None else 0)
    values.update(batch_stride_grad_A=m * kk if batch_a is not None else 0)
    values.update(batch_stride_grad_B=kk * n if batch_b is not None else 0)
    bindable = launched is not None and G.obj is grad_c and Kop.obj is k and A.obj is a and B.obj is b
    bound = []
    for launcher, grad, target in zip(launchers, grads, ("grad_A", "grad_B")):
        memory = Memory(backend, host_memory, stream)
        try:
            values["grad_C"] = memory.pointer(G, "grad_c")
            values["Kstar"] = memory.pointer(Kop, "k")
            values["A"] = memory.pointer(A, "a")
            values["B"] = memory.pointer(B, "b")
            values[target] = memory.pointer(grad, target, result=True, zeroed=True)
            args = [values[p] for p in launcher.params]
            if m > GRID_YZ_MAX:
                check_grid(launcher, tuple(args))
            launcher(*args, stream=stream)
        finally:
            memory.finish()
        if bindable and not memory.staged and tuple(launcher.params[:4]) == _LEADING[target]:
            bound.append(launcher.bind(args, 4))
    if launched is not None and len(bound) == 2 and None not in bound:
        launched.extend(bound)
    return grads[0].obj, grads[1].obj


def _zero(backend: Any, grad: Operand, stream: int) -> None:
    """Zero a given gradient array, where the kernels will add into it."""
    if grad.on_host:
        import numpy as np

        np.asarray(grad.obj).fill(0)
    else:
        zero_on(backend, grad, stream)


def _zeroed(backend: Any, like: Operand, name: str, dtype: str, stream: int) -> Operand:
    """A zeroed gradient shaped like ``like``: on the host, zeros; on a device,
    allocated on ``stream`` and zeroed there (``memset_async``), whatever the framework."""
    if like.on_host:
        return as_operand(zeros_like_kind(like, like.shape, dtype), name)
    grad = as_operand(empty_like_kind(like, like.shape, dtype, stream), name)
    zero_on(backend, grad, stream)
    return grad
