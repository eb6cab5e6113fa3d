"""The tropical product as PyTorch custom ops, ``torch.ops.aotc.*``.

``aotc::tropical_matmul``, ``tropical_matmul_argmax`` and
``tropical_matmul_backward``, with ``_out`` forms of the first two that write
into ``out=`` (``Tensor(a!)`` in the schema), each with a fake (meta) implementation, so
``torch.compile(fullgraph=True)`` traces through them and
``torch.library.opcheck`` checks them. The forward ops have autograd: the
argmax op keeps k* and its backward calls the backward op.

The ops are generic: the semiring and the library are str arguments. The
semiring is checked against the library's index, so a semiring added to a
manifest has its ops with no Python change. The library is a key from
``_torch_route.library_key``, naming one ``Tropical`` handle in a
process-wide registry: one fixed set of ops serves every library
(``tropical.over(lib)`` included), where ops per library would need a
namespace per library, registered while running and never removable. A key is a plain str, so a compiled graph holds
it as a constant and guards on it. ``over()`` gives each handle its key when
it makes the handle (``_torch_route``), so tracing never registers one.

The ops run where the handle's backend runs: CUDA tensors on a GPU backend,
CPU tensors on the emulator. Registered when this module is imported, which
``aotc.tropical._torch`` does on the first call with tensors.

They are defined with ``torch.library.Library`` (``define``/``impl``) plus
``register_fake`` and ``register_autograd``, not ``torch.library.custom_op``:
custom_op wraps every call in Python layers of its own: an op that only
allocates costs 10.8 us through custom_op and 3.6 us through the dispatcher
alone on this project's machines (benchmarks/RESULTS.md). What custom_op adds beyond that is done here: the
pt2-compliant tag, and the version bump of a mutated ``out``.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from aotc.errors import ArgumentError, echo
from aotc.arrays.torch_direct import direct
from aotc.tropical._torch_route import handle, inside_op

__all__ = ["BELOW_AUTOGRAD", "call_back", "call_unrecorded", "keep_k", "result_shapes", "through_k"]

# The ops live as long as this object: the module keeps it for the process.
_LIBRARY = torch.library.Library("aotc", "DEF")
_bump_version = torch.autograd.graph.increment_version


def _define(schema: str, kernel: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Define ``aotc::<schema>`` with ``kernel`` for every device; returns a
    decorator that registers its fake implementation."""
    name = schema.split("(", 1)[0]
    _LIBRARY.define(schema, tags=(torch.Tag.pt2_compliant_tag,))
    _LIBRARY.impl(name, kernel, "CompositeExplicitAutograd")

    def fake(function: Callable[..., Any]) -> Callable[..., Any]:
        torch.library.register_fake(f"aotc::{name}", function, lib=_LIBRARY)
        return function

    return fake


def _autograd(name: str, backward: Callable[..., Any], setup_context: Callable[..., Any]) -> None:
    torch.library.register_autograd(f"aotc::{name}", backward, setup_context=setup_context, lib=_LIBRARY)


def call_back(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``method`` (a Tropical method) run as an op's kernel: the product itself, not the op again."""
    inside_op.active = True
    try:
        return method(*args, **kwargs)
    finally:
        inside_op.active = False


def _semiring(library: str, semiring: str) -> dict[str, Any]:
    """The library's index entry for ``semiring`` (the op's own check, as the call path's)."""
    table = handle(library).library.index["semirings"]
    spec = table.get(semiring)
    if spec is None:
        msg = f"semiring: unknown {echo(semiring)} (known: {', '.join(table)})"
        raise ArgumentError(msg)
    return spec


def result_shapes(a: Tensor, b: Tensor, semiring: str, library: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The shapes of the product and of k*, from the operands' shapes alone (the fake ops use it)."""
    counting = bool(_semiring(library, semiring).get("counting", False))
    pair = 1 if counting else 0  # a counting semiring's trailing (value, count) axis
    if a.dim() - pair not in (2, 3) or b.dim() - pair not in (2, 3):
        msg = f"b: expected 2-D or 3-D operands{' with a trailing axis of 2' if counting else ''}, got {tuple(a.shape)} and {tuple(b.shape)}"
        raise ArgumentError(msg)
    if a.dtype != b.dtype or a.device != b.device:
        msg = f"b: expected {a.dtype} on {a.device} like a, got {b.dtype} on {b.device}"
        raise ArgumentError(msg)
    end = a.dim() - pair
    m, k = a.shape[end - 2], a.shape[end - 1]
    k_b, n = b.shape[b.dim() - pair - 2], b.shape[b.dim() - pair - 1]
    if k != k_b:
        msg = f"b: shape {tuple(b.shape)} does not fit a's {tuple(a.shape)}: A has {k} columns, B has {k_b} rows"
        raise ArgumentError(msg)
    batches = [x.shape[0] for x in (a, b) if x.dim() - pair == 3]
    if len(batches) == 2 and batches[0] != batches[1]:
        msg = f"b: batch {batches[1]} does not match a's {batches[0]}"
        raise ArgumentError(msg)
    k_shape = (*batches[:1], m, n)
    return (*k_shape, 2) if counting else k_shape, k_shape


# --- the forward product ----------------------------------------------------------


def _matmul(a: Tensor, b: Tensor, semiring: str, library: str) -> Tensor:
    return handle(library).op_matmul(a, b, semiring, None)


@_define("tropical_matmul(Tensor a, Tensor b, str semiring, str library) -> Tensor", _matmul)
def _(a: Tensor, b: Tensor, semiring: str, library: str) -> Tensor:
    return a.new_empty(result_shapes(a, b, semiring, library)[0])


def _matmul_out(a: Tensor, b: Tensor, semiring: str, library: str, out: Tensor) -> None:
    handle(library).op_matmul(a, b, semiring, out)
    _bump_version(out)  # what PyTorch's own out= ops do: autograd sees out changed


@_define("tropical_matmul_out(Tensor a, Tensor b, str semiring, str library, Tensor(a!) out) -> ()", _matmul_out)
def _(a: Tensor, b: Tensor, semiring: str, library: str, out: Tensor) -> None:
    result_shapes(a, b, semiring, library)


# --- the product and k* --------------------------------------------------------------


def _matmul_argmax(a: Tensor, b: Tensor, semiring: str, library: str) -> tuple[Tensor, Tensor]:
    return handle(library).op_matmul_argmax(a, b, semiring)


@_define("tropical_matmul_argmax(Tensor a, Tensor b, str semiring, str library) -> (Tensor, Tensor)", _matmul_argmax)
def _(a: Tensor, b: Tensor, semiring: str, library: str) -> tuple[Tensor, Tensor]:
    shape, k_shape = result_shapes(a, b, semiring, library)
    return a.new_empty(shape), a.new_empty(k_shape, dtype=torch.int32)


def _matmul_argmax_out(a: Tensor, b: Tensor, semiring: str, library: str, out: Tensor, k_out: Tensor) -> None:
    call_back(handle(library).matmul_argmax, a, b, semiring, out=out, k_out=k_out)
    _bump_version(out)
    _bump_version(k_out)


@_define(
    "tropical_matmul_argmax_out(Tensor a, Tensor b, str semiring, str library, Tensor(a!) out, Tensor(b!) k_out) -> ()",
    _matmul_argmax_out,
)
def _(a: Tensor, b: Tensor, semiring: str, library: str, out: Tensor, k_out: Tensor) -> None:
    result_shapes(a, b, semiring, library)


# --- the backward product --------------------------------------------------------


def _matmul_backward(grad_c: Tensor, k: Tensor, a: Tensor, b: Tensor, semiring: str, library: str) -> tuple[Tensor, Tensor]:
    return handle(library).op_matmul_backward(grad_c, k, a, b, semiring)


@_define(
    "tropical_matmul_backward(Tensor grad_c, Tensor k, Tensor a, Tensor b, str semiring, str library) -> (Tensor, Tensor)",
    _matmul_backward,
)
def _(grad_c: Tensor, k: Tensor, a: Tensor, b: Tensor, semiring: str, library: str) -> tuple[Tensor, Tensor]:
    _semiring(library, semiring)
    return a.new_empty(a.shape), b.new_empty(b.shape)


# --- autograd -------------------------------------------------------------------------

_BACKWARD = torch.ops.aotc.tropical_matmul_backward.default
BELOW_AUTOGRAD = torch._C._AutoDispatchBelowAutograd  # noqa: SLF001 - see call_unrecorded


def call_unrecorded(op: Callable[..., Any], *args: Any) -> Any:
    """``op(*args)`` for a call autograd does not record. In eager mode it
    enters below the op's autograd layer (the Python kernel ``register_autograd``
    installs, about 3.5 us, which would only redispatch); a call being traced
    by torch.compile calls the op plainly."""
    if torch.compiler.is_compiling():
        return op(*args)
    with BELOW_AUTOGRAD():
        return op(*args)


def keep_k(ctx: Any, inputs: tuple[Any, ...], output: tuple[Tensor, Tensor]) -> None:
    a, b, semiring, library = inputs
    ctx.save_for_backward(a, b, output[1])
    ctx.semiring, ctx.library = semiring, library


def _backward_op(grad_c: Tensor, k: Tensor, a: Tensor, b: Tensor, semiring: str, library: str) -> tuple[Tensor, Tensor]:
    """The backward op, as an autograd formula calls it. An ordinary backward
    pass runs with grad mode off (no double backward asked), so autograd
    records nothing; a create_graph pass records, through the op's autograd."""
    if torch.is_grad_enabled():
        return _BACKWARD(grad_c, k, a, b, semiring, library)
    if direct(grad_c, k, a, b):  # nothing but the op's kernel would see it (aotc.arrays.torch_direct)
        return handle(library).op_matmul_backward(grad_c, k, a, b, semiring)
    return call_unrecorded(_BACKWARD, grad_c, k, a, b, semiring, library)


def through_k(ctx: Any, grad_c: Tensor, grad_k: Any) -> tuple[Tensor | None, Tensor | None, None, None]:
    a, b, k = ctx.saved_tensors
    grad_a, grad_b = _backward_op(grad_c.contiguous(), k, a, b, ctx.semiring, ctx.library)
    return (grad_a if ctx.needs_input_grad[0] else None, grad_b if ctx.needs_input_grad[1] else None, None, None)


_autograd("tropical_matmul_argmax", through_k, keep_k)


def _keep_operands(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    a, b, semiring, library = inputs
    ctx.save_for_backward(a, b)
    ctx.semiring, ctx.library = semiring, library


def _recomputing_k(ctx: Any, grad_c: Tensor) -> tuple[Tensor | None, Tensor | None, None, None]:
    # This op keeps no k*, so its backward runs the argmax product again;
    # tropical.matmul() calls the argmax op instead when gradients are wanted.
    a, b = ctx.saved_tensors
    _, k = torch.ops.aotc.tropical_matmul_argmax(a, b, ctx.semiring, ctx.library)
    grad_a, grad_b = _backward_op(grad_c.contiguous(), k, a, b, ctx.semiring, ctx.library)
    return (grad_a if ctx.needs_input_grad[0] else None, grad_b if ctx.needs_input_grad[1] else None, None, None)


_autograd("tropical_matmul", _recomputing_k, _keep_operands)


def _keep_backward_inputs(ctx: Any, inputs: tuple[Any, ...], output: tuple[Tensor, Tensor]) -> None:
    grad_c, k, a, b, semiring, library = inputs
    ctx.save_for_backward(grad_c, k, a, b)
    ctx.semiring, ctx.library = semiring, library


def _second_order(ctx: Any, gg_a: Tensor, gg_b: Tensor) -> tuple[Tensor | None, None, Tensor | None, Tensor | None, None, None]:
    """The backward op's own gradient, for double backward, in torch ops: the
    backward op scatters ``grad_c`` along k*, so its gradient gathers along k*.
    max/min-plus: ``grad_a[i, k*] += grad_c[i, j]``, linear in grad_c alone;
    max/min-times: ``grad_a[i, k*] += grad_c[i, j] * b[k*, j]``, and its mirror."""
    grad_c, k, a, b = ctx.saved_tensors
    times = _semiring(ctx.library, ctx.semiring)["mul"] == "mul"
    batch = grad_c.shape[0] if grad_c.dim() == 3 else 1

    def as_3d(x: Tensor) -> Tensor:
        return x.expand(batch, *x.shape) if x.dim() == 2 else x

    at = k.clamp(min=0).long().reshape(batch, *k.shape[-2:])  # k* = -1 (no winner) is masked off below
    won = (k >= 0).reshape(at.shape).to(grad_c.dtype)
    g = grad_c.reshape(at.shape)
    a3, b3, gg_a3, gg_b3 = as_3d(a), as_3d(b), as_3d(gg_a), as_3d(gg_b)
    from_a, from_b = gg_a3.gather(2, at) * won, gg_b3.gather(1, at) * won  # gg_a[i, k*], gg_b[k*, j]
    if not times:
        grad_grad_c = from_a + from_b
        return grad_grad_c.reshape(grad_c.shape), None, None, None, None, None
    grad_grad_c = from_a * b3.gather(1, at) + from_b * a3.gather(2, at)
    grad_a = torch.zeros(a3.shape, dtype=a.dtype, device=a.device).scatter_add(2, at, from_b * g)
    grad_b = torch.zeros(b3.shape, dtype=b.dtype, device=b.device).scatter_add(1, at, from_a * g)
    grad_a = grad_a.sum(0) if a.dim() == 2 else grad_a  # a 2-D operand was broadcast over the batch
    grad_b = grad_b.sum(0) if b.dim() == 2 else grad_b
    return grad_grad_c.reshape(grad_c.shape), None, grad_a, grad_b, None, None


_autograd("tropical_matmul_backward", _second_order, _keep_backward_inputs)
