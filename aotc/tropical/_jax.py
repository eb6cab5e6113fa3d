"""JAX arrays through the tropical kernels: eagerly, under ``jax.jit``,
``jax.grad`` and ``jax.vmap``, on XLA's own stream.

Imported only when a call is given a ``jax.Array`` (``_jax_route``), so
``import aotc`` never imports jax.

Each product is a ``jax.experimental.buffer_callback``: XLA hands the callback
its buffers (host memory on the CPU, ``__cuda_array_interface__`` on a GPU,
with ``ctx.stream``, XLA's stream) and the callback runs the ordinary call path
on them, writing the results in place: image selection, device rules and the
emulator apply unchanged, and the result is a ``jax.Array`` that nothing
copied. It runs Python at every execution. jaxlib's built-in kernel launcher,
which declared families take on a GPU (``aotc.kernels._jax_builtin``), would
not, but it launches one-dimensional blocks only, and these kernels' are
16x16 (docs/design.md, "JAX", says why they keep the callback).

- ``jax.grad``: a ``custom_vjp`` for the semirings with a gradient. The
  forward pass runs the argmax kernel and keeps k*, the backward pass the two
  backward kernels, as the PyTorch ops do.
- ``jax.vmap``: the callback is declared ``vmap_method="expand_dims"``, so a
  mapped call reaches it with a leading batch axis on every operand (1 where
  an operand is not mapped), and the batched kernels run it in one launch.

Shapes are checked while tracing, each problem one line naming the argument,
so that a mistake is reported where it is made rather than inside XLA.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.buffer_callback import buffer_callback

from aotc.arrays.jax_buffers import DTYPE_NAMES, as_jax, eagerly, host_view, refuse_given, reporting, require_device, xla_stream
from aotc.errors import ArgumentError, ArgumentTypeError
from aotc.tropical._backward import backward_product
from aotc.tropical._operands import semiring_spec

__all__ = ["matmul", "matmul_argmax", "matmul_backward"]

_KERNEL_DTYPES = ("f32", "f64", "i32", "i64", "bool")


def _product_shape(a: Any, b: Any, counting: bool) -> tuple[int, ...]:
    """The result's shape, from the operands' (per example, under vmap)."""
    extra = 1 if counting else 0
    for array, name in ((a, "a"), (b, "b")):
        if DTYPE_NAMES.get(str(array.dtype)) not in _KERNEL_DTYPES:
            msg = f"{name}: dtype {array.dtype} has no kernel (float32, float64, int32, int64, bool)"
            raise ArgumentTypeError(msg)
        if counting and array.shape[-1:] != (2,):
            msg = f"{name}: a counting semiring takes (value, count) pairs, a trailing axis of 2; got shape {tuple(array.shape)}"
            raise ArgumentError(msg)
        if array.ndim - extra not in (2, 3):
            msg = f"{name}: expected a 2-D matrix or a 3-D batch of them, got shape {tuple(array.shape)}"
            raise ArgumentError(msg)
    if a.dtype != b.dtype:
        msg = f"b: dtype {b.dtype} differs from a's {a.dtype}"
        raise ArgumentTypeError(msg)
    core_a, core_b = a.shape[: a.ndim - extra], b.shape[: b.ndim - extra]
    (m, k), (k2, n) = core_a[-2:], core_b[-2:]
    if k != k2:
        msg = f"b: shape {tuple(b.shape)} does not fit a's {tuple(a.shape)}: a has {k} columns, b has {k2} rows"
        raise ArgumentError(msg)
    batch_a, batch_b = core_a[:-2], core_b[:-2]
    if batch_a and batch_b and batch_a != batch_b:
        msg = f"b: batch of {batch_b[0]} does not match a's batch of {batch_a[0]}"
        raise ArgumentError(msg)
    return (*(batch_a or batch_b), m, n, *((2,) if counting else ()))


def _kernel_calls(ins: tuple[Any, ...], core: tuple[int, ...]) -> Any:
    """Each kernel call's operands and where its results go.

    Under vmap every operand arrives with leading axes (1 where it is not
    mapped); with its own batch axis, if it has one, they are the call's batch
    axes. The kernels take one batch axis and broadcast a 2-D operand over it:
    so the axes before the last are looped over, and an operand whose last
    batch axis is 1 beside a larger one is passed 2-D. Yields (the results'
    leading index, the operands)."""
    leads = [x.shape[: x.ndim - c] for x, c in zip(ins, core)]
    depth = max(map(len, leads))
    if depth <= 1:  # one batch axis at most (a single vmap): one kernel call, no loop to lay out
        yield (), _one_batch(ins, core)
        return
    outer = np.broadcast_shapes(*(((1,) * (depth - len(lead)) + lead)[:-1] for lead in leads))
    for index in np.ndindex(*outer):
        parts = []
        for x, lead in zip(ins, leads):
            pad = depth - len(lead)
            parts.append(x[tuple(0 if lead[j - pad] == 1 else index[j] for j in range(pad, depth - 1))])
        yield index, _one_batch(parts, core)


def _one_batch(parts: Any, core: tuple[int, ...]) -> list[Any]:
    """One kernel call's operands: one whose batch is 1 beside a larger one is passed without it (broadcast)."""
    batches = [p.shape[0] if p.ndim > c else 0 for p, c in zip(parts, core)]
    widest = max(batches)
    return [p[0] if b == 1 < widest else p for p, b in zip(parts, batches)]


def _forward(api: Any, semiring: str, counting: bool) -> Any:
    core = (3, 3) if counting else (2, 2)

    def run(ctx: Any, out: Any, a: Any, b: Any) -> None:
        a, b, c = host_view(a), host_view(b), host_view(out)
        if a.ndim == core[0] and b.ndim == core[1]:  # two matrices, no vmap axes: the call as it came
            api.matmul(a, b, semiring, out=c, stream=xla_stream(ctx, a, b, c))
            return
        for index, (ai, bi) in _kernel_calls((a, b), core):
            api.matmul(ai, bi, semiring, out=c[index], stream=xla_stream(ctx, ai, bi, c))

    return run


def _argmax(api: Any, semiring: str, counting: bool) -> Any:
    core = (3, 3) if counting else (2, 2)

    def run(ctx: Any, outs: Any, a: Any, b: Any) -> None:
        (c, k), a, b = (host_view(o) for o in outs), host_view(a), host_view(b)
        if a.ndim == core[0] and b.ndim == core[1]:
            api.matmul_argmax(a, b, semiring, out=c, k_out=k, stream=xla_stream(ctx, a, b, c))
            return
        for index, (ai, bi) in _kernel_calls((a, b), core):
            api.matmul_argmax(ai, bi, semiring, out=c[index], k_out=k[index], stream=xla_stream(ctx, ai, bi, c))

    return run


def _backward(api: Any, semiring: str) -> Any:
    def run(ctx: Any, outs: Any, grad_c: Any, k: Any, a: Any, b: Any) -> None:
        (ga, gb), grad_c, k, a, b = (host_view(o) for o in outs), host_view(grad_c), host_view(k), host_view(a), host_view(b)
        # Written into XLA's buffers, zeroed first. (A 2-D operand broadcast over a
        # batch gets its gradient summed over it.)
        backward_product(api, grad_c, k, a, b, semiring, xla_stream(ctx, a, b, ga), outs=(ga, gb))

    return run


def _callbacks(api: Any, semiring: str) -> dict[str, Any]:
    """The semiring's products as JAX functions of (a, b), made once per handle."""
    require_device(api.library)  # no GPU: one line while tracing, not from inside XLA
    cache = api.__dict__.setdefault("_jax_products", {})
    found = cache.get(semiring)
    if found is not None:
        return found
    spec = semiring_spec(api.library, semiring)
    counting = bool(spec.get("counting", False))
    differentiable = not counting and spec["add"] in ("max", "min") and spec["mul"] in ("add", "mul")
    forward, argmax, backward = (reporting(run) for run in (_forward(api, semiring, counting), _argmax(api, semiring, counting), _backward(api, semiring)))

    def plain(a: Any, b: Any) -> Any:
        shape = jax.ShapeDtypeStruct(_product_shape(a, b, counting), a.dtype)
        return buffer_callback(forward, shape, vmap_method="expand_dims")(a, b)

    def with_k(a: Any, b: Any) -> tuple[Any, Any]:
        shape = _product_shape(a, b, counting)
        k_shape = shape[:-1] if counting else shape
        outs = (jax.ShapeDtypeStruct(shape, a.dtype), jax.ShapeDtypeStruct(k_shape, jnp.int32))
        return buffer_callback(argmax, outs, vmap_method="expand_dims")(a, b)

    def grads(grad_c: Any, k: Any, a: Any, b: Any) -> tuple[Any, Any]:
        outs = (jax.ShapeDtypeStruct(a.shape, a.dtype), jax.ShapeDtypeStruct(b.shape, b.dtype))
        return buffer_callback(backward, outs, vmap_method="sequential")(grad_c, k, a, b)

    product = plain
    if differentiable:
        product = jax.custom_vjp(plain)

        def product_fwd(a: Any, b: Any) -> tuple[Any, Any]:
            c, k = with_k(a, b)
            return c, (k, a, b)

        def product_bwd(saved: Any, grad_c: Any) -> tuple[Any, Any]:
            k, a, b = saved
            return grads(grad_c, k, a, b)

        product.defvjp(product_fwd, product_bwd)
    found = cache[semiring] = {"matmul": product, "argmax": with_k, "backward": grads, "differentiable": differentiable}
    return found


def matmul(api: Any, a: Any, b: Any, semiring: str, out: Any, stream: Any) -> Any:
    refuse_given(out=out, stream=stream)
    return eagerly(_callbacks(api, semiring)["matmul"], as_jax(a, "a"), as_jax(b, "b"))


def matmul_argmax(api: Any, a: Any, b: Any, semiring: str, out: Any, k_out: Any, stream: Any) -> tuple[Any, Any]:
    refuse_given(out=out, k_out=k_out, stream=stream)
    return eagerly(_callbacks(api, semiring)["argmax"], as_jax(a, "a"), as_jax(b, "b"))


def matmul_backward(api: Any, grad_c: Any, k: Any, a: Any, b: Any, semiring: str, stream: Any) -> tuple[Any, Any]:
    refuse_given(stream=stream)
    products = _callbacks(api, semiring)
    if not products["differentiable"]:
        msg = f"semiring: {semiring!r} has no gradient (needs add max/min and mul add/mul)"
        raise ArgumentError(msg)
    arrays = (as_jax(x, n) for x, n in ((grad_c, "grad_c"), (k, "k"), (a, "a"), (b, "b")))
    return eagerly(products["backward"], *arrays)

