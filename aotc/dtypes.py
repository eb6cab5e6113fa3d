"""The one dtype table: every element type aotc knows, and each name it goes by.

A dtype is named the same way everywhere in aotc ("f32") and this table says
what that is in each place that needs another name: the C type a generated
parameter list spells, the size the index and the launcher count, NumPy's,
PyTorch's and JAX's dtype names, the CUDA Array Interface's type string, the
DLPack type code, and the ``struct`` code a scalar argument is packed with.
The build (manifests, signatures, codegen), the index (its checks) and the
array layer (reading, allocating and filling arrays) all read it here.

Plain records, no imports beyond aotc's own: the run-time path loads it.
"""

from __future__ import annotations

from aotc._record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DTYPES", "SCALAR_TYPES", "DType", "by_dlpack", "by_numpy", "by_typestr"]


class DType(Record):
    """One element type. ``kind`` is "float", "int", "uint" or "bool" (what a
    semiring's operations are defined on); ``numpy`` is NumPy's name, which
    PyTorch and JAX also use for these types; ``dlpack`` the (type code, bits)
    pair of DLPack's ``DLDataType``; ``code`` the ``struct`` format character
    of a scalar of this type; ``scalar`` whether a kernel may take one by value."""

    _fields = ("name", "ctype", "itemsize", "kind", "numpy", "dlpack", "code", "scalar")
    __slots__ = _fields
    name: str
    ctype: str
    itemsize: int
    kind: str
    numpy: str
    dlpack: tuple[int, int]
    code: str
    scalar: bool

    @property
    def size(self) -> int:
        """The templates' spelling of ``itemsize``."""
        return self.itemsize

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def bounds(self) -> tuple[int, int]:
        """The lowest and highest value of an integer type (bool: 0 and 1)."""
        if self.kind == "bool":
            return 0, 1
        bits = 8 * self.itemsize
        return (0, (1 << bits) - 1) if self.kind == "uint" else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)

    @property
    def typestr(self) -> str:
        """The ``__array_interface__`` / ``__cuda_array_interface__`` type string (little-endian)."""
        return f"|b{self.itemsize}" if self.kind == "bool" else f"<{_TYPESTR_KIND[self.kind]}{self.itemsize}"


_TYPESTR_KIND = {"float": "f", "int": "i", "uint": "u"}
# DLPack's kDLInt, kDLUInt, kDLFloat and kDLBool.
_INT, _UINT, _FLOAT, _BOOL = 0, 1, 2, 6

DTYPES: Mapping[str, DType] = {
    d.name: d
    for d in (
        DType("f32", "float", 4, "float", "float32", (_FLOAT, 32), "f", True),
        DType("f64", "double", 8, "float", "float64", (_FLOAT, 64), "d", True),
        DType("i32", "int", 4, "int", "int32", (_INT, 32), "i", True),
        DType("i64", "long long", 8, "int", "int64", (_INT, 64), "q", True),
        DType("bool", "bool", 1, "bool", "bool", (_BOOL, 8), "?", False),
        # 32-bit words: the packed bool matrices' storage (``pack: 32``).
        DType("u32", "unsigned int", 4, "uint", "uint32", (_UINT, 32), "I", False),
    )
}

# What a scalar parameter may be: its C type by name.
SCALAR_TYPES: Mapping[str, DType] = {name: d for name, d in DTYPES.items() if d.scalar}

_BY_NUMPY = {d.numpy: d for d in DTYPES.values()}
_BY_TYPESTR = {d.typestr: d for d in DTYPES.values()}
_BY_DLPACK = {d.dlpack: d for d in DTYPES.values()}


def by_numpy(name: str) -> DType | None:
    """The dtype NumPy (or PyTorch, or JAX) calls ``name`` ("float32"), if aotc has it."""
    return _BY_NUMPY.get(name)


def by_typestr(typestr: str) -> DType | None:
    """The dtype of an array interface type string ("<f4"), if aotc has it."""
    return _BY_TYPESTR.get(typestr)


def by_dlpack(code: int, bits: int) -> DType | None:
    """The dtype of a DLPack (type code, bits) pair with one lane, if aotc has it."""
    return _BY_DLPACK.get((code, bits))
