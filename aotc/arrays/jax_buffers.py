"""JAX's arrays, and the buffers XLA hands a ``buffer_callback``, as aotc's
call path takes them (``aotc.kernels._jax``).

Imported only once a call is given a ``jax.Array``: it imports jax.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from aotc.errors import AotcError, ArgumentError, ArgumentTypeError

__all__ = ["as_jax", "eagerly", "host_view", "refuse_given", "reporting", "require_device", "xla_stream"]

# The aotc error a callback raised last (``reporting``), for ``eagerly``. Not
# thread-local: XLA may run a callback on a thread of its own.
_raised: list[AotcError] = []


def refuse_given(**given: Any) -> None:
    """``out=``-like arrays and ``stream=``, refused in one line where given."""
    for name, value in given.items():
        if value is not None:
            reason = "under JAX the kernels run on XLA's own stream" if name == "stream" else "JAX arrays are immutable; the result is returned"
            msg = f"{name}: not taken with JAX arrays ({reason})"
            raise ArgumentError(msg)


def require_device(library: Any) -> None:
    """``NoDeviceError`` now, in the caller's frame (while ``jax.jit`` traces), where
    the library's backend finds no GPU: raised inside XLA's callback, it would
    reach a jitted call wrapped in XLA's runtime error and its Python stack.
    (issue 35, item 1; the device is asked once per backend and kept.)"""
    library.backend.device()


def as_jax(value: Any, name: str) -> Any:
    """``value`` as a JAX array: a NumPy array beside JAX arrays is taken too."""
    if isinstance(value, jax.Array):
        return value
    if isinstance(value, np.ndarray):
        return jax.numpy.asarray(value)
    msg = f"{name}: expected a JAX or NumPy array beside JAX arrays, got {type(value).__name__}"
    raise ArgumentTypeError(msg)


def host_view(buffer: Any) -> Any:
    """A callback's buffer as aotc's call paths take it: a NumPy view of host
    memory on the CPU; on a GPU the buffer itself, which speaks
    ``__cuda_array_interface__``. (Off the CPU, a buffer's ``__array__``
    raises JAX's runtime error, as its ``__cuda_array_interface__`` does on it.)"""
    try:
        return np.asarray(buffer)
    except RuntimeError:
        return buffer


def xla_stream(ctx: Any, *buffers: Any) -> Any:
    """XLA's stream on a GPU; None on the CPU, where the context has none."""
    return None if all(isinstance(b, np.ndarray) for b in buffers) else ctx.stream


def reporting(run: Any) -> Any:
    """``run``, a ``buffer_callback``, keeping the aotc error it raises for ``eagerly``.

    XLA turns a callback's exception into a ``JaxRuntimeError`` whose text is
    "INTERNAL: Error when calling buffer callback", then the whole Python
    stack, then the error's line: under the caller's own ``jax.jit`` that is
    what reaches them (the line last)."""

    def report(ctx: Any, *buffers: Any) -> None:
        try:
            run(ctx, *buffers)
        except AotcError as error:
            _raised[:] = [error]
            raise

    return report


def eagerly(function: Any, *arrays: Any) -> Any:
    """``function(*arrays)``, where a callback that ran in it raised an aotc
    error (a kernel fault the emulator's checks saw, no image for the GPU):
    that error again, its own type and one line, instead of XLA's wrapping of it.
    Under the caller's ``jax.jit`` the callback runs outside this call, and XLA's error reaches them."""
    _raised.clear()
    try:
        return function(*arrays)
    except Exception as wrapped:  # XLA's wrapping: a JaxRuntimeError, or on some of jax 0.10.2's paths a ValueError
        error = _raised.pop() if _raised else None
        if error is None or error is wrapped or str(error) not in str(wrapped):  # not a callback's: raised as it came
            raise
        raise error.with_traceback(None) from None
