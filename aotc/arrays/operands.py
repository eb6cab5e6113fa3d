"""Arrays users pass in, seen uniformly: pointer, dtype, shape, strides, device.

An ``Operand`` is one argument as a kernel sees it (``aotc.arrays.kinds.as_operand``
reads one); its ``kind`` is the adapter of the library that made it (NumPy, PyTorch,
the CUDA Array Interface, DLPack, JAX), which answers every other question a
call asks of it: a row-major copy, a new array like it (filled or not) on a
stream, whether it may be written, its framework's current stream, and how
to keep its memory alive until a stream is done. Strides are kept in
elements; an operand that is not row-major with contiguous rows is copied by
its own library where a kernel needs it so, never read wrongly.

Nothing here imports NumPy or PyTorch: an array's type tells which it is.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

    from aotc.arrays.kinds import ArrayKind

__all__ = [
    "DATA_OFFSET",
    "Operand",
    "data_pointers",
    "direct_pointer",
    "is_row_major",
    "meets",
    "numpy_pointer",
    "overlaps",
    "span",
]


class Operand:
    """One array argument. ``device`` is "cpu" or "cuda:N" ("cuda" where the array
    does not say); ``kind`` is its library's adapter. A plain slotted class: one
    is made per argument per call, so it must cost next to nothing."""

    __slots__ = ("device", "dtype", "kind", "obj", "pointer", "producer", "shape", "strides")

    def __init__(
        self, obj: Any, kind: ArrayKind, dtype: str, shape: tuple[int, ...], strides: tuple[int, ...], pointer: int, device: str,
        producer: Any = None,
    ) -> None:  # fmt: skip
        self.obj = obj
        # The stream whose pending work writes the data (CUDA array interface v3's
        # "stream"), "dlpack" for a DLPack array (asked again with the call's stream), or None.
        self.producer = producer
        self.kind = kind
        self.dtype = dtype  # aotc's dtype name ("f32"), or the foreign name when aotc has none
        self.shape = shape
        self.strides = strides  # in elements
        self.pointer = pointer
        self.device = device

    @property
    def on_host(self) -> bool:
        return self.device == "cpu"


# ``array.ctypes.data`` builds a helper object on every access (about 2 us on
# a slow host). The data pointer is PyArrayObject's first field after the
# object header, part of NumPy's C ABI; it is read directly once a probe has
# shown the offset right for this interpreter and NumPy, else never.
DATA_OFFSET = 16 if sys.maxsize > 2**32 else 8  # two pointers (ctypes is imported only when NumPy is in use)
_direct_pointer: bool | None = None


def direct_pointer() -> bool:
    """Whether NumPy data pointers are read at ``id(array) + DATA_OFFSET`` here."""
    global _direct_pointer  # noqa: PLW0603 - decided once per process
    if _direct_pointer is None:
        import ctypes

        import numpy as np

        probe = np.arange(3.0)[1:]
        _direct_pointer = ctypes.c_void_p.from_address(id(probe) + DATA_OFFSET).value == probe.ctypes.data
    return _direct_pointer


def data_pointers() -> Any:
    """A ctypes pointer ``pointers`` with ``pointers[id(array) >> 3]`` the data
    pointer of the NumPy array ``array`` (64-bit, and only where
    ``direct_pointer()`` holds): its base is DATA_OFFSET, so the index is the
    object's address in words. CPython objects are at least 8-byte aligned
    (malloc's guarantee), so the shift drops nothing. Indexing returns an int
    and makes no ctypes object: about half the cost of ``c_void_p.from_address``."""
    import ctypes

    return ctypes.cast(DATA_OFFSET, ctypes.POINTER(ctypes.c_size_t))


def numpy_pointer(array: Any) -> int:
    """The data pointer of the NumPy array ``array``."""
    if _direct_pointer or direct_pointer():
        import ctypes  # already imported by direct_pointer(): a dict lookup

        return ctypes.c_void_p.from_address(id(array) + DATA_OFFSET).value or 0
    return array.ctypes.data


def is_row_major(op: Operand) -> bool:
    """Whether ``op`` is contiguous in C order (extents of 1 may have any stride,
    and an array with an extent of 0, which holds nothing, any strides: NumPy
    reports a (0, 3) array's as (0, 0))."""
    if 0 in op.shape:
        return True
    step = 1
    for extent, stride in zip(reversed(op.shape), reversed(op.strides)):
        if extent > 1 and stride != step:
            return False
        step *= extent
    return True


def span(op: Operand, itemsize: int) -> tuple[int, int]:
    """[low, high) bytes that a non-empty ``op`` can touch, relative to its pointer."""
    low = high = 0
    for extent, stride in zip(op.shape, op.strides):
        reach = (extent - 1) * stride * itemsize
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high + itemsize


def meets(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
    """Bounds for the overlap test of two spans (``span``):
    y's bytes [py + y_low, py + y_high) meet x's [px + x_low, px + x_high)
    exactly when x_low - y_high < py - px < x_high - y_low. One subtraction a call."""
    return x[0] - y[1], x[1] - y[0]


def _byte_span(op: Operand) -> tuple[int, int]:
    """[first, last) byte that ``op`` can touch; empty arrays touch none."""
    if 0 in op.shape:
        return op.pointer, op.pointer
    from aotc.dtypes import DTYPES

    dtype = DTYPES.get(op.dtype)
    low, high = span(op, dtype.itemsize if dtype is not None else 8)
    return op.pointer + low, op.pointer + high


def overlaps(x: Operand, y: Operand) -> bool:
    """Whether ``x`` and ``y`` may share memory: where their byte ranges meet,
    their library decides (NumPy exactly), else meeting ranges count as sharing."""
    if x.device != y.device:
        return False
    x0, x1 = _byte_span(x)
    y0, y1 = _byte_span(y)
    if x1 <= y0 or y1 <= x0:
        return False
    return x.kind.shares_memory(x, y) if x.kind is y.kind else True
