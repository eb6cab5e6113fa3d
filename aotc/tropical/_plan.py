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

Both the plan and the entry in front of it (``planned_matmul``) are closures,
not objects with ``__call__``: a closure reads its constants from cells, and
calling it skips the slot lookup an instance call pays. On this path those
are a fifth of the whole call (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import sys

from aotc.tropical._arrays import as_operand, data_pointers, direct_pointer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from aotc.runtime.launcher import BoundLaunch
    from aotc.tropical._arrays import Operand

    # plan(a, b, out): the result, or None where a per-call check did not pass
    Plan = Callable[[Any, Any, Any], Any]
    # matmul(a, b, semiring, out, stream), positional
    MatmulEntry = Callable[[Any, Any, Any, Any, Any], Any]

__all__ = ["MAX_PLANS", "make_plan", "planned_matmul", "span"]

# Plans kept per Tropical handle; a job that sees more shapes than this starts over.
MAX_PLANS = 256


def span(op: Operand, itemsize: int) -> tuple[int, int]:
    """[low, high) bytes that ``op`` can touch, relative to its pointer."""
    low = high = 0
    for extent, stride in zip(op.shape, op.strides):
        reach = (extent - 1) * stride * itemsize
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high + itemsize


def planned_matmul(ndarray: type, plans: dict[tuple[Any, ...], Plan], full: MatmulEntry) -> MatmulEntry:
    """``matmul(a, b, semiring, out, stream)`` that calls the plan keyed by
    its operands, if there is one and its checks pass, else ``full``."""

    def matmul(a: Any, b: Any, semiring: Any, out: Any, stream: Any) -> Any:
        if type(a) is ndarray and type(b) is ndarray and stream is None:
            # Everything a plan fixes, read with the fewest attribute reads
            # (the key make_plan returns). An unhashable semiring can't be a
            # key: the full path names it.
            try:
                if out is None:
                    plan = plans.get((semiring, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype))
                elif type(out) is ndarray:
                    plan = plans.get(
                        (semiring, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype, out.shape, out.strides, out.dtype)
                    )
                else:
                    plan = None
            except TypeError:
                plan = None
            if plan is not None:
                result = plan(a, b, out)
                if result is not None:
                    return result
        return full(a, b, semiring, out, stream)

    return matmul


def make_plan(a: Any, b: Any, semiring: str, out: Any, c: Any, launch: BoundLaunch) -> tuple[tuple[Any, ...], Plan] | None:
    """``(key, plan)`` for the forward product ``matmul`` just launched in place,
    where its operands are NumPy arrays; the key is the one ``planned_matmul``
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
    A, B, C = as_operand(a, "a"), as_operand(b, "b"), as_operand(c, "out")
    (a_low, a_high), (b_low, b_high), (c_low, c_high) = (
        span(A, a.dtype.itemsize), span(B, b.dtype.itemsize), span(C, c.dtype.itemsize)
    )  # fmt: skip
    # out's bytes [pc + c_low, pc + c_high) meet a's [pa + a_low, pa + a_high)
    # exactly when a_low - c_high < pc - pa < a_high - c_low: one subtraction a call.
    meets_a, meets_b = (a_low - c_high, a_high - c_low), (b_low - c_high, b_high - c_low)
    shape, dtype = c.shape, c.dtype
    return key, _plan(data_pointers(), launch, meets_a, meets_b, lambda: numpy.empty(shape, dtype))


def _plan(pointers: Any, bound: BoundLaunch, meets_a: tuple[int, int], meets_b: tuple[int, int], empty: Any) -> Plan:
    # The bound launch's pieces are held here, a call level less.
    launch, function, shape, pack, tail = bound.launch, bound.function, bound.shape, bound.pack_head, bound.tail
    a_from, a_to = meets_a
    b_from, b_to = meets_b

    def plan(a: Any, b: Any, out: Any) -> Any:
        # Data pointers read where NumPy keeps them (_arrays.numpy_pointer; a
        # plan is made only where that read was proven right, on a 64-bit
        # interpreter: see _arrays.data_pointers).
        pa = pointers[id(a) >> 3]
        pb = pointers[id(b) >> 3]
        if out is None:
            # A new array (numpy.empty of the result's shape and dtype):
            # writable, and sharing memory with nothing.
            out = empty()
            launch(function, shape, 0, pack(pa, pb, pointers[id(out) >> 3]) + tail)
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
        return out

    return plan
