"""Bool matrices packed 32 values to a uint32 word, on the host (NumPy).

The packed and/or kernels (docs/design.md, "Packed and/or") read A packed
along k per row and B packed along k per column (B^T's rows): bit b of word w
of a line is element 32w + b, and bits past the line's length are 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aotc.errors import ArgumentError, ArgumentTypeError, called, echo

__all__ = ["PackedBool", "pack_bool"]

WORD_BITS = 32


@dataclass(frozen=True, eq=False)
class PackedBool:
    """A bool matrix of ``shape`` packed along ``axis`` (1: each row's values,
    as for A; 0: each column's, as for B). ``words`` is C-contiguous uint32 of
    shape (lines, ceil(length / 32)): rows for axis 1, columns for axis 0."""

    words: np.ndarray
    shape: tuple[int, int]
    axis: int

    @property
    def length(self) -> int:
        """How many values each line packs: the packed axis' extent."""
        return self.shape[self.axis]

    def unpack(self) -> np.ndarray:
        """The bool matrix, as ``pack_bool`` was given it (any nonzero byte True)."""
        raw = np.ascontiguousarray(self.words, dtype="<u4").view(np.uint8)
        bits = np.unpackbits(raw, axis=1, bitorder="little")[:, : self.length].astype(bool)
        return bits if self.axis == 1 else np.ascontiguousarray(bits.T)


def pack_bool(a: Any, axis: int = 1) -> PackedBool:
    """Pack the 2-D bool array ``a`` along ``axis``: 1 for a left operand
    (A, packed along k per row), 0 for a right one (B, along k per column).
    A bool byte other than 0 counts as True, as NumPy counts it."""
    if type(axis) is not int:
        msg = f"axis: expected 0 (pack each column, for B) or 1 (each row, for A), got {echo(axis)}"
        raise called(ArgumentTypeError(msg), "tropical.pack_bool")
    array = np.asarray(a)
    if array.dtype != np.bool_ or array.ndim != 2:
        msg = f"a: expected a 2-D bool array, got {array.dtype} of shape {array.shape}"
        raise called(ArgumentError(msg), "tropical.pack_bool")
    if axis not in (0, 1):
        msg = f"axis: must be 0 (pack each column, for B) or 1 (each row, for A), got {axis!r}"
        raise called(ArgumentError(msg), "tropical.pack_bool")
    lines = array.view(np.uint8) != 0  # any nonzero byte is True
    if axis == 0:
        lines = lines.T
    words = -(-lines.shape[1] // WORD_BITS)
    padded = np.zeros((lines.shape[0], words * WORD_BITS), np.uint8)
    padded[:, : lines.shape[1]] = lines
    packed = np.packbits(padded, axis=1, bitorder="little").view("<u4").astype(np.uint32)
    return PackedBool(np.ascontiguousarray(packed), (int(array.shape[0]), int(array.shape[1])), axis)
