"""aotc/arrays/jax_buffers.py: an aotc error raised inside a real buffer_callback
reaches an eager caller as itself, one line of its own type; under the caller's
jit it reaches them as XLA's runtime error, its last line aotc's; and XLA's own
errors, or a stale error of an earlier callback, are never swapped in."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aotc.arrays.jax_buffers import eagerly, reporting
from aotc.errors import KernelFaultError

jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
jnp = pytest.importorskip("jax.numpy")
from jax.experimental.buffer_callback import buffer_callback  # noqa: E402 - after the skip

FAULT = "twice_f32: race check: read after write: block (0, 0, 0) thread (1, 0, 0) reads shared twice_f32::t + 0 bytes (of 64)"


def twice(fail: bool) -> Any:
    """A JAX function of x through a buffer_callback that doubles x, or raises FAULT."""

    def run(ctx: Any, out: Any, x: Any) -> None:
        if fail:
            raise KernelFaultError(FAULT)
        np.asarray(out)[...] = 2 * np.asarray(x)

    return buffer_callback(reporting(run), jax.ShapeDtypeStruct((4,), jnp.float32))


def test_an_eager_call_raises_the_callbacks_error_itself() -> None:
    x = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(eagerly(twice(False), x)), [0, 2, 4, 6])
    with pytest.raises(KernelFaultError) as info:
        eagerly(twice(True), x)
    assert str(info.value) == FAULT
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_under_the_callers_jit_xlas_error_ends_with_the_line() -> None:
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        jax.jit(twice(True))(jnp.zeros(4, jnp.float32)).block_until_ready()
    assert str(info.value).startswith("INTERNAL: Error when calling buffer callback")
    assert str(info.value).rstrip().endswith(f"KernelFaultError: {FAULT}")


def test_a_stale_error_is_not_raised_for_another_failure() -> None:
    # A failure under jit leaves its error kept; an eager call that fails in
    # XLA for a reason of its own gets XLA's error, not the kept one.
    with pytest.raises(jax.errors.JaxRuntimeError):
        jax.jit(twice(True))(jnp.zeros(4, jnp.float32)).block_until_ready()

    def xla_fails(x: Any) -> Any:
        raise jax.errors.JaxRuntimeError("INTERNAL: something of XLA's own")

    with pytest.raises(jax.errors.JaxRuntimeError, match="something of XLA's own"):
        eagerly(xla_fails, jnp.zeros(4, jnp.float32))

    # Within one eager call: a callback's error caught inside it, then XLA failing
    # for a reason of its own. The kept error's line is not in XLA's: not swapped in.
    def caught_then_xla_fails(x: Any) -> Any:
        with pytest.raises(jax.errors.JaxRuntimeError):
            jax.jit(twice(True))(x).block_until_ready()
        return xla_fails(x)

    with pytest.raises(jax.errors.JaxRuntimeError, match="something of XLA's own"):
        eagerly(caught_then_xla_fails, jnp.zeros(4, jnp.float32))
