"""The binary interface of generated kernels: parameters, launch geometry, shared memory.

This is the single source of truth both sides read. Codegen renders the
parameter list into the kernel from here, and the index records the same list,
so the runtime packs arguments that match the compiled symbol by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from aotc.errors import ArgumentError
from aotc.index.schema import PACK_CODES
from aotc.semiring import DType

__all__ = [
    "BACKWARD_OWNER",
    "PACKED_WORD_BYTES",
    "PASSES",
    "TEMPLATE_STAGES",
    "VARIANTS",
    "LaunchGeometry",
    "Param",
    "Tile",
    "kernel_params",
    "launch_geometry",
    "product_shared_bytes",
]

PASSES = ("forward", "argmax", "backward_a", "backward_b")
# "packed": bool operands as uint32 words of 32 k values (A along k per row, B
# along k per column, i.e. B^T's rows); see docs/design.md ("Packed and/or").
VARIANTS = ("single", "batched", "packed")
PACKED_WORD_BYTES = 4
# The backward passes are deterministic: one thread per row of grad_A, or per
# column of grad_B, adds that row's (column's) terms in a fixed order, with no
# float atomics. The extent its grid spans.
BACKWARD_OWNER = {"backward_a": "M", "backward_b": "N"}

# Packing codes for struct.Struct (pointers travel as 64-bit device addresses):
# the index's, which the reader holds every parameter to.
_PACK = PACK_CODES


# The pipeline depths the tropical templates implement: their product and
# packed kernels double-buffer A and B (``As[2][BK][BM]``), and a static_assert
# holds the index's shared-memory figure to that. Another depth would pass the
# manifest and fail the build, so the manifest refuses it.
TEMPLATE_STAGES = (2,)


@dataclass(frozen=True)
class Tile:
    """Block and per-thread tile sizes of a GEMM-shaped kernel."""

    block_m: int
    block_n: int
    block_k: int
    thread_m: int
    thread_n: int
    stages: int = 2  # one of TEMPLATE_STAGES

    @property
    def threads(self) -> int:
        return (self.block_m // self.thread_m) * (self.block_n // self.thread_n)


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name, C type and how the runtime packs it."""

    name: str
    ctype: str
    kind: str  # "ptr", "i32", "i64", or for declared scalars "f32", "f64"

    @property
    def pack(self) -> str:
        return _PACK[self.kind]

    def declaration(self) -> str:
        restrict = " __restrict__" if self.kind == "ptr" else ""
        return f"{self.ctype}{restrict} {self.name}"

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "ctype": self.ctype, "kind": self.kind, "pack": self.pack}


@dataclass(frozen=True)
class LaunchGeometry:
    """How a launch is shaped: the grid is ceil(extent / tile) per axis."""

    block: tuple[int, int, int]
    grid: tuple[tuple[str, int], tuple[str, int], tuple[str, int]]
    shared_bytes_static: int
    shared_bytes_dynamic: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "block": list(self.block),
            "grid": [{"extent": extent, "tile": tile} for extent, tile in self.grid],
            "shared_bytes_static": self.shared_bytes_static,
            "shared_bytes_dynamic": self.shared_bytes_dynamic,
        }


def _ptr(name: str, ctype: str, *, const: bool) -> Param:
    return Param(name, f"{'const ' if const else ''}{ctype}*", "ptr")


def kernel_params(pass_name: str, variant: str, dtype: DType) -> tuple[Param, ...]:
    """The parameter list of a (pass, variant) kernel over ``dtype``.

    Matrices are row-major with a leading dimension (row stride in elements);
    batched kernels add a batch count and per-operand batch strides, where a
    stride of 0 broadcasts one matrix over the batch. Strides count elements:
    for a counting semiring an element is a (value, count) pair, so they count
    pairs, though the pointers are typed as the scalar.
    """
    t = dtype.ctype
    # Packed operands are words; K still counts k values (bits), lda/ldb words.
    operand = "unsigned int" if variant == "packed" else t
    sizes = (Param("M", "int", "i32"), Param("N", "int", "i32"), Param("K", "int", "i32"))
    if pass_name == "forward":
        pointers = (_ptr("A", operand, const=True), _ptr("B", operand, const=True), _ptr("C", t, const=False))
        strides = ("lda", "ldb", "ldc")
    elif pass_name == "argmax":
        pointers = (
            _ptr("A", operand, const=True),
            _ptr("B", operand, const=True),
            _ptr("C", t, const=False),
            _ptr("Kstar", "int", const=False),
        )
        strides = ("lda", "ldb", "ldc", "ldk")
    elif pass_name == "backward_a":
        pointers = (
            _ptr("grad_C", t, const=True),
            _ptr("Kstar", "int", const=True),
            _ptr("B", t, const=True),
            _ptr("grad_A", t, const=False),
        )
        strides = ("ldgc", "ldk", "ldb", "ldga")
    elif pass_name == "backward_b":
        pointers = (
            _ptr("grad_C", t, const=True),
            _ptr("Kstar", "int", const=True),
            _ptr("A", t, const=True),
            _ptr("grad_B", t, const=False),
        )
        strides = ("ldgc", "ldk", "lda", "ldgb")
    else:
        msg = f"unknown pass {pass_name!r} (known: {', '.join(PASSES)})"
        raise ArgumentError(msg)
    params = (*pointers, *sizes, *(Param(s, "long long", "i64") for s in strides))
    if variant == "batched":
        batch_strides = tuple(Param(f"batch_stride_{p.name}", "long long", "i64") for p in pointers)
        params = (*params, Param("batch", "int", "i32"), *batch_strides)
    elif variant not in ("single", "packed"):
        msg = f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})"
        raise ArgumentError(msg)
    return params


def launch_geometry(tile: Tile, element_size: int, pass_name: str, variant: str) -> LaunchGeometry:
    """Block shape, grid rule and shared memory of a GEMM-shaped kernel.

    The product passes stage ``stages`` tiles of A and B in shared memory, and
    the templates ``static_assert`` that their arrays have exactly that many
    bytes, so this number cannot drift from the code. Backward passes read
    straight from global memory and use none; each of their threads owns one
    row of grad_A or one column of grad_B (see ``BACKWARD_OWNER``), so their
    grid is one-dimensional over those, times the batch.
    """
    batch = ("batch", 1) if variant == "batched" else ("1", 1)
    if pass_name in BACKWARD_OWNER:
        return LaunchGeometry((tile.threads, 1, 1), ((BACKWARD_OWNER[pass_name], tile.threads), ("1", 1), batch), 0)
    block = (tile.block_n // tile.thread_n, tile.block_m // tile.thread_m, 1)
    if variant == "packed":
        element_size = PACKED_WORD_BYTES  # block_k counts words
    shared = product_shared_bytes(tile, element_size)
    return LaunchGeometry(block, (("N", tile.block_n), ("M", tile.block_m), batch), shared)


def product_shared_bytes(tile: Tile, element_size: int) -> int:
    return tile.stages * tile.block_k * (tile.block_m + tile.block_n) * element_size
