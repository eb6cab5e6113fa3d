"""What one product's arguments must be: matrices that multiply, sizes the
kernels and the grid can hold, a semiring the library has.

Where the arrays live, the call's stream and the results it may write are
``aotc.arrays.placement``'s. Every check raises a one-line ArgumentError or
ArgumentTypeError naming the argument. Nothing here launches or allocates
device memory.
"""

from __future__ import annotations

from aotc.arrays.operands import Operand, contiguous
from aotc.errors import ArgumentError, ArgumentTypeError, echo

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GRID_YZ_MAX", "INT32_MAX", "check_batch", "check_grid", "matrix", "pair", "semiring_spec"]

# M, N, K and the batch are int parameters of the kernels.
INT32_MAX = 2**31 - 1
# CUDA's limit on gridDim.y (row tiles) and gridDim.z (the batch).
GRID_YZ_MAX = 65535


def matrix(op: Operand, name: str, counting: bool) -> tuple[Operand, int | None, int, int, int, int]:
    """(operand, batch or None for 2-D, rows, cols, batch stride, row stride), in
    elements (pairs for counting), copying the operand when its rows aren't contiguous."""
    shape, strides = op.shape, op.strides
    if counting and (not shape or shape[-1] != 2):
        msg = f"{name}: a counting semiring needs a trailing axis of length 2 (value, count), got shape {shape}"
        raise ArgumentError(msg)
    if len(shape) - counting not in (2, 3):
        what = "(..., 2) " if counting else ""
        msg = f"{name}: expected a 2-D or 3-D {what}array, got shape {shape}"
        raise ArgumentError(msg)
    for axis, what in ((-2, "rows"), (-1, "columns")):
        extent = shape[axis - counting]
        if extent > INT32_MAX:  # before any copy: a broadcast view this long would not fit in memory
            msg = f"{name}: {extent} {what} are past the kernels' limit of {INT32_MAX} (2**31 - 1)"
            raise ArgumentError(msg)
    if 0 in shape:
        # Nothing is read from an empty array, and its strides are whatever its
        # library chose (often 0): no copy, and the caller launches nothing.
        core = shape[: len(shape) - counting]
        return op, (core[0] if len(core) == 3 else None), core[-2], core[-1], 0, core[-1]
    if counting:
        if strides[-1] != 1 or any(s % 2 for s in strides[:-1]):
            op = contiguous(op, name)
            shape, strides = op.shape, op.strides
        shape, strides = shape[:-1], tuple(s // 2 for s in strides[:-1])
    if _needs_copy(shape, strides):
        op = contiguous(op, name)
        shape, strides = op.shape[: len(op.shape) - counting], op.strides[: len(op.shape) - counting]
        strides = tuple(s // 2 for s in strides) if counting else strides
    rows, cols = shape[-2], shape[-1]
    row_stride = strides[-2]
    batch = shape[0] if len(shape) == 3 else None
    batch_stride = strides[0] if len(shape) == 3 else 0
    # A single row's stride is arbitrary; a stride of 0 (a broadcast row) is kept.
    return op, batch, rows, cols, batch_stride, row_stride if rows > 1 else cols


def _needs_copy(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether the kernels can't read this layout: columns not adjacent, or rows
    or batches going backwards. An axis of extent 1 is never stepped along, so
    its stride (which NumPy leaves arbitrary, even in a C-contiguous array) counts not."""
    cols_apart = strides[-1] != 1 and shape[-1] > 1
    backwards = any(s < 0 and e > 1 for e, s in zip(shape[:-1], strides[:-1]))
    return cols_apart or backwards


def pair(
    A: Operand, B: Operand, counting: bool
) -> tuple[Operand, Operand, tuple[int | None, int | None, int, int, int, int, int, int, int]]:
    """Check that a and b multiply; return them (row-major where needed) and
    (batch_a, batch_b, m, k, n, batch stride a, batch stride b, lda, ldb); a
    2-D operand's batch is None."""
    A, batch_a, m, k, sa, lda = matrix(A, "a", counting)
    B, batch_b, k2, n, sb, ldb = matrix(B, "b", counting)
    if k2 != k:
        msg = f"b: shape {B.shape} does not fit a's {A.shape}: a has {k} columns, b has {k2} rows"
        raise ArgumentError(msg)
    if batch_a is not None and batch_b is not None and batch_a != batch_b:
        msg = f"b: batch of {batch_b} does not match a's batch of {batch_a}"
        raise ArgumentError(msg)
    return A, B, (batch_a, batch_b, m, k, n, sa, sb, lda, ldb)


def check_batch(batch: int) -> None:
    """The batch fits the grid (``matrix`` checks M, N and K)."""
    if batch > GRID_YZ_MAX:
        msg = f"a: a batch of {batch} is past the limit of {GRID_YZ_MAX} products per call (the grid's z); split the batch"
        raise ArgumentError(msg)


def check_grid(launcher: Any, args: tuple[int, ...]) -> None:
    """The launch's grid fits CUDA's limits (only M can push gridDim.y past them)."""
    grid = launcher.grid(*args)
    if grid[1] > GRID_YZ_MAX:
        msg = f"a: {grid[1]} row tiles are past the grid's limit of {GRID_YZ_MAX}; split the rows of a"
        raise ArgumentError(msg)


def semiring_spec(library: Any, semiring: Any) -> dict[str, Any]:
    """The index's entry for ``semiring``; one line naming the known ones if there is none."""
    table = library.index["semirings"]
    if not isinstance(semiring, str):  # a str subclass (a str-valued Enum) names its value
        msg = f"semiring: expected a semiring name (str) such as 'maxplus' (known: {', '.join(table)}), got {echo(semiring)}"
        raise ArgumentTypeError(msg)
    spec = table.get(semiring)
    if spec is None:
        msg = f"semiring: unknown {echo(semiring)} (known: {', '.join(table)})"
        raise ArgumentError(msg)
    return spec
