"""The call plan: a repeat product of NumPy arrays, a key check and a launch.

``Tropical._product`` derives everything a product needs from its operands.
All of it but the data pointers follows from (semiring, pass, the operands'
shapes, strides and dtypes, the backend): the kernel, its grid, its size
arguments packed, the result's shape and dtype. A plan keeps that, keyed by
exactly those facts (``plan_key``), so a later call with operands alike in
them reads three pointers, redoes the checks that depend on the objects
themselves (is ``out`` writable now, does it share memory with an input at
these addresses) and launches.

Plans are made only where the operands are used in place: NumPy arrays on a
host-memory backend (the emulator, the noop backend), read without a copy.
Anything else, and any call whose per-call checks do not pass at once, takes
the full path, which raises the usual one-line error or decides exactly.

Both the plan and the entry in front of it (``_matmul_entry``) are closures,
not objects with ``__call__``: a closure reads its constants from cells, and
calling it skips the slot lookup an instance call pays. On this path those
are a fifth of the whole call (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import sys

from aotc.arrays.operands import as_operand, data_pointers, direct_pointer, meets, span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from aotc.runtime.launcher import BoundLaunch

    # plan(a, b, out): the result, or None where a per-call check did not pass
    Plan = Callable[[Any, Any, Any], Any]
    # matmul(a, b, semiring, out, stream), positional
    MatmulEntry = Callable[[Any, Any, Any, Any, Any], Any]
    # matmul_argmax(a, b, semiring, out, k_out, stream), positional
    ArgmaxEntry = Callable[[Any, Any, Any, Any, Any, Any], Any]

__all__ = ["MAX_PLANS", "make_argmax_plan", "make_plan", "planned_argmax"]

# Plans kept per Tropical handle; a job that sees more shapes than this starts over.
MAX_PLANS = 256


def make_plan(a: Any, b: Any, semiring: str, out: Any, c: Any, launch: BoundLaunch) -> tuple[tuple[Any, ...], Plan] | None:
    """``(key, plan)`` for the forward product ``matmul`` just launched in place,
    where its operands are NumPy arrays; the key is the one ``_matmul_entry``
    builds. None where no plan fits: other array types, a copy made, no direct
    pointer read."""
    numpy = sys.modules.get("numpy")
    ndarray = numpy.ndarray if numpy is not None else None
    if ndarray is None or type(a) is not ndarray or type(b) is not ndarray or type(c) is not ndarray:
        return None
    if not direct_pointer() or sys.maxsize < 2**32:
        return None  # the plan reads pointers directly, 64-bit words; without that read, no plan
    if out is not None and out is not c:
        return None
    key: tuple[Any, ...] = (semiring, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype)
    if out is not None:
        key += (out.shape, out.strides, out.dtype)
    a_span, b_span, c_span = (span(as_operand(x, name), x.dtype.itemsize) for x, name in ((a, "a"), (b, "b"), (c, "out")))
    shape, dtype = c.shape, c.dtype
    return key, _plan(data_pointers(), launch, meets(a_span, c_span), meets(b_span, c_span), lambda: numpy.empty(shape, dtype))


def _plan(pointers: Any, bound: BoundLaunch, meets_a: tuple[int, int], meets_b: tuple[int, int], empty: Any) -> Plan:
    # The bound launch's pieces are held here, a call level less.
    launch, function, shape, pack, tail = bound.launch, bound.function, bound.shape, bound.pack_head, bound.tail
    wait = launch.__self__.stream_synchronize  # the result is host memory: ready before it is returned
    a_from, a_to = meets_a
    b_from, b_to = meets_b

    def plan(a: Any, b: Any, out: Any) -> Any:
        # Data pointers read where NumPy keeps them (aotc.arrays.operands'
        # numpy_pointer; a plan is made only where that read was proven right,
        # on a 64-bit interpreter: see its data_pointers).
        pa = pointers[id(a) >> 3]
        pb = pointers[id(b) >> 3]
        if out is None:
            # A new array (numpy.empty of the result's shape and dtype):
            # writable, and sharing memory with nothing.
            out = empty()
            launch(function, shape, 0, pack(pa, pb, pointers[id(out) >> 3]) + tail)
            wait(0)
            return out
        # The key fixed out's shape, dtype and strides (so: contiguous, the
        # result's layout) but not these, which belong to the object and its
        # address: writable now, and clear of both inputs' bytes. Any doubt
        # (spans that meet, which may still not share an element) goes the full way.
        if not out.flags.writeable:
            return None
        pc = pointers[id(out) >> 3]
        if a_from < pc - pa < a_to or b_from < pc - pb < b_to:
            return None
        launch(function, shape, 0, pack(pa, pb, pc) + tail)
        wait(0)
        return out

    return plan


# --- matmul_argmax: the product and k*, two results -----------------------------------


def planned_argmax(ndarray: type, plans: dict[tuple[Any, ...], Any], full: ArgmaxEntry) -> ArgmaxEntry:
    """``matmul_argmax(a, b, semiring, out, k_out, stream)`` through the plan
    keyed by its operands (both results allocated, or both given), else ``full``."""

    def matmul_argmax(a: Any, b: Any, semiring: Any, out: Any, k_out: Any, stream: Any) -> Any:
        if type(a) is ndarray and type(b) is ndarray and stream is None:
            try:  # the key make_argmax_plan returns; an unhashable semiring goes the full way
                if out is None and k_out is None:
                    plan = plans.get((semiring, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype))
                elif type(out) is ndarray and type(k_out) is ndarray:
                    plan = plans.get(
                        (
                            semiring, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype,
                            out.shape, out.strides, out.dtype, k_out.shape, k_out.strides, k_out.dtype,
                        )
                    )  # fmt: skip
                else:
                    plan = None
            except TypeError:
                plan = None
            if plan is not None:
                result = plan(a, b, out, k_out)
                if result is not None:
                    return result
        return full(a, b, semiring, out, k_out, stream)

    return matmul_argmax


def make_argmax_plan(
    a: Any, b: Any, semiring: str, out: Any, k_out: Any, c: Any, k: Any, launch: BoundLaunch
) -> tuple[tuple[Any, ...], Any] | None:
    """``(key, plan)`` for the argmax product ``matmul_argmax`` just launched in
    place on NumPy arrays, as ``make_plan``; both results were allocated, or
    both given (one of the two given goes the full way every time)."""
    numpy = sys.modules.get("numpy")
    ndarray = numpy.ndarray if numpy is not None else None
    if ndarray is None or any(type(x) is not ndarray for x in (a, b, c, k)):
        return None
    if not direct_pointer() or sys.maxsize < 2**32 or (out is None) != (k_out is None):
        return None
    if out is not None and (out is not c or k_out is not k):
        return None
    key: tuple[Any, ...] = (semiring, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype)
    if out is not None:
        key += (out.shape, out.strides, out.dtype, k_out.shape, k_out.strides, k_out.dtype)
    named = ((a, "a"), (b, "b"), (c, "out"), (k, "k_out"))
    a_span, b_span, c_span, k_span = (span(as_operand(x, name), x.dtype.itemsize) for x, name in named)
    # out against a and b, k_out against a, b and out: the checks placement.output() makes.
    bounds = (meets(a_span, c_span), meets(b_span, c_span), meets(a_span, k_span), meets(b_span, k_span), meets(c_span, k_span))
    shape, dtype, k_shape, k_dtype = c.shape, c.dtype, k.shape, k.dtype

    def empty() -> tuple[Any, Any]:
        return numpy.empty(shape, dtype), numpy.empty(k_shape, k_dtype)

    return key, _argmax_plan(data_pointers(), launch, bounds, empty)


def _argmax_plan(pointers: Any, bound: BoundLaunch, bounds: tuple[tuple[int, int], ...], empty: Any) -> Any:
    launch, function, shape, pack, tail = bound.launch, bound.function, bound.shape, bound.pack_head, bound.tail
    wait = launch.__self__.stream_synchronize
    (ca_from, ca_to), (cb_from, cb_to), (ka_from, ka_to), (kb_from, kb_to), (kc_from, kc_to) = bounds

    def plan(a: Any, b: Any, out: Any, k_out: Any) -> Any:
        pa = pointers[id(a) >> 3]
        pb = pointers[id(b) >> 3]
        if out is None:  # both new: writable, sharing memory with nothing
            out, k_out = empty()
            launch(function, shape, 0, pack(pa, pb, pointers[id(out) >> 3], pointers[id(k_out) >> 3]) + tail)
            wait(0)
            return out, k_out
        if not (out.flags.writeable and k_out.flags.writeable):
            return None
        pc = pointers[id(out) >> 3]
        pk = pointers[id(k_out) >> 3]
        if ca_from < pc - pa < ca_to or cb_from < pc - pb < cb_to:
            return None
        if ka_from < pk - pa < ka_to or kb_from < pk - pb < kb_to or kc_from < pk - pc < kc_to:
            return None
        launch(function, shape, 0, pack(pa, pb, pc, pk) + tail)
        wait(0)
        return out, k_out

    return plan
