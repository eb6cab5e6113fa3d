"""The call plan: a repeat product of NumPy arrays, a key check and a launch.

``Tropical._product`` derives everything a product needs from its operands.
All of it but the data pointers follows from (semiring, pass, the operands'
shapes, strides and dtypes, the backend): the kernel, its grid, its size
arguments packed, the result's shape and dtype. A ``CallPlan`` keeps that,
keyed by exactly those facts (``plan_key``), so a later call with operands
alike in them reads three pointers, redoes the checks that depend on the
objects themselves (is ``out`` writable now, does it share memory with an
input at these addresses) and launches.

Plans are made only where the operands are used in place: NumPy arrays on a
host-memory backend (the emulator, the noop backend), read without a copy.
Anything else, and any call whose per-call checks do not pass at once, takes
the full path, which raises the usual one-line error or decides exactly.
"""

from __future__ import annotations

import sys

from aotc.tropical._arrays import DATA_OFFSET, as_operand, direct_pointer, word_reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.runtime.launcher import BoundLaunch
    from aotc.tropical._arrays import Operand

__all__ = ["MAX_PLANS", "CallPlan", "make_plan", "span"]

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


class CallPlan:
    """A prepared forward product of NumPy operands; call it with ``(a, b, out)``.
    Returns the result, or None where a per-call check did not pass (the caller
    then takes the full path, which raises or decides exactly)."""

    __slots__ = ("_parts",)

    def __init__(self, bound: BoundLaunch, spans: tuple[tuple[int, int], ...], empty: Any) -> None:
        # One tuple, unpacked once per call: cheaper than an attribute read per
        # piece. The bound launch's pieces are held here, a call level less.
        (a_low, a_high), (b_low, b_high), (c_low, c_high) = spans  # bytes around each pointer
        self._parts = (
            word_reader(), DATA_OFFSET - 8, bound.launch, bound.function, bound.shape, bound.pack_head, bound.tail, empty,
            a_low, a_high, b_low, b_high, c_low, c_high,
        )  # fmt: skip

    def __call__(self, a: Any, b: Any, out: Any) -> Any:
        words, at, launch, function, shape, pack, tail, empty, a_low, a_high, b_low, b_high, c_low, c_high = self._parts
        # Data pointers read where NumPy keeps them (_arrays.numpy_pointer; a
        # plan is made only where that read was proven right, on a 64-bit
        # interpreter: see _arrays.word_reader).
        pa = words[(id(a) + at) >> 3]
        pb = words[(id(b) + at) >> 3]
        if out is None:
            # A new array (empty() is numpy.empty of the result's shape and
            # dtype): writable, and sharing memory with nothing.
            out = empty()
            launch(function, shape, 0, pack(pa, pb, words[(id(out) + at) >> 3]) + tail)
            return out
        # The key fixed out's shape, dtype and strides (so: contiguous, the
        # result's layout) but not these, which belong to the object and its
        # address: writable now, and clear of both inputs' bytes. Any doubt
        # (spans that meet, which may still not share an element) goes the full way.
        if not out.flags.writeable:
            return None
        pc = words[(id(out) + at) >> 3]
        if pc + c_low < pa + a_high and pa + a_low < pc + c_high:
            return None
        if pc + c_low < pb + b_high and pb + b_low < pc + c_high:
            return None
        launch(function, shape, 0, pack(pa, pb, pc) + tail)
        return out


def make_plan(a: Any, b: Any, semiring: str, out: Any, c: Any, launch: BoundLaunch) -> tuple[tuple[Any, ...], CallPlan] | None:
    """``(key, plan)`` for the forward product ``matmul`` just launched in place,
    where its operands are NumPy arrays; the key is the one ``matmul`` builds. None
    where no plan fits: other array types, a copy made, no direct pointer read."""
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
    spans = (span(A, a.dtype.itemsize), span(B, b.dtype.itemsize), span(C, c.dtype.itemsize))
    return key, CallPlan(launch, spans, lambda shape=c.shape, dtype=c.dtype: numpy.empty(shape, dtype))
