"""The one dtype table: every element type aotc knows, and each name it goes by.

A dtype is named the same way everywhere in aotc ("f32") and this table says
what that is in each place that needs another name: the C type a generated
parameter list spells, the size the index and the launcher count, NumPy's,
PyTorch's and JAX's dtype names, the CUDA Array Interface's type string, the
DLPack type code, the ``struct`` code a scalar argument is packed with, and
the CUDA header that declares the C type. The build (manifests, signatures, codegen), the index (its checks) and the
array layer (reading, allocating and filling arrays) all read it here.

Plain records, no imports beyond aotc's own: the run-time path loads it.
"""

from __future__ import annotations

from aotc._record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DTYPES", "SCALAR_TYPES", "DType", "bf16_bits", "by_dlpack", "by_numpy", "by_typestr", "numpy_dtype", "zero_bits"]


class DType(Record):
    """One element type. ``kind`` is "float", "int", "uint" or "bool" (what a
    semiring's operations are defined on); ``numpy`` is NumPy's name, which
    PyTorch and JAX also use for these types; ``dlpack`` the (type code, bits)
    pair of DLPack's ``DLDataType``; ``code`` the ``struct`` format character
    of a scalar of this type (a bf16 scalar travels as the 16 bits ``bf16_bits``
    makes of it: ``struct`` has no bfloat16); ``scalar`` whether a kernel may
    take one by value; ``header`` the CUDA header a source that names
    ``ctype`` includes ("" for C's own types)."""

    _fields = ("name", "ctype", "itemsize", "kind", "numpy", "dlpack", "code", "scalar", "header")
    __slots__ = _fields
    name: str
    ctype: str
    itemsize: int
    kind: str
    numpy: str
    dlpack: tuple[int, int]
    code: str
    scalar: bool
    header: str

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
    def typestr(self) -> str | None:
        """The ``__array_interface__`` / ``__cuda_array_interface__`` type string
        (little-endian; one byte has no order, "|"), None for bf16: the interface
        has no bfloat16 type string. NumPy (through ml_dtypes) writes "<V2" for it,
        which says two bytes of anything, so a "<V2" array is not taken to be
        bf16: such an array is passed through DLPack, whose kDLBfloat says so."""
        if self.numpy == "bfloat16":
            return None
        order = "|" if self.itemsize == 1 else "<"
        return f"{order}{_TYPESTR_KIND[self.kind]}{self.itemsize}"


_TYPESTR_KIND = {"float": "f", "int": "i", "uint": "u", "bool": "b"}
# DLPack's kDLInt, kDLUInt, kDLFloat, kDLBfloat and kDLBool.
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL = 0, 1, 2, 4, 6
_FP16, _BF16 = "cuda_fp16.h", "cuda_bf16.h"

DTYPES: Mapping[str, DType] = {
    d.name: d
    for d in (
        DType("f32", "float", 4, "float", "float32", (_FLOAT, 32), "f", True, ""),
        DType("f64", "double", 8, "float", "float64", (_FLOAT, 64), "d", True, ""),
        DType("i32", "int", 4, "int", "int32", (_INT, 32), "i", True, ""),
        DType("i64", "long long", 8, "int", "int64", (_INT, 64), "q", True, ""),
        DType("bool", "bool", 1, "bool", "bool", (_BOOL, 8), "?", False, ""),
        # 32-bit words: the packed bool matrices' storage (``pack: 32``).
        DType("u32", "unsigned int", 4, "uint", "uint32", (_UINT, 32), "I", True, ""),
        # Half precision: IEEE binary16 (struct's "e"), and bfloat16 (NumPy's through ml_dtypes).
        DType("f16", "__half", 2, "float", "float16", (_FLOAT, 16), "e", True, _FP16),
        DType("bf16", "__nv_bfloat16", 2, "float", "bfloat16", (_BFLOAT, 16), "H", True, _BF16),
        DType("i8", "signed char", 1, "int", "int8", (_INT, 8), "b", False, ""),
        DType("u8", "unsigned char", 1, "uint", "uint8", (_UINT, 8), "B", False, ""),
        DType("i16", "short", 2, "int", "int16", (_INT, 16), "h", False, ""),
        DType("u16", "unsigned short", 2, "uint", "uint16", (_UINT, 16), "H", False, ""),
        DType("u64", "unsigned long long", 8, "uint", "uint64", (_UINT, 64), "Q", True, ""),
    )
}

# What a scalar parameter may be: its C type by name.
SCALAR_TYPES: Mapping[str, DType] = {name: d for name, d in DTYPES.items() if d.scalar}

_BY_NUMPY = {d.numpy: d for d in DTYPES.values()}
_BY_TYPESTR = {d.typestr: d for d in DTYPES.values() if d.typestr is not None}
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


def bf16_bits(value: float) -> int:
    """The bits of the bfloat16 nearest ``value`` as a float (f32), ties to even,
    as ``__float2bfloat16`` rounds: the one place a bf16 scalar is made. NaN
    stays NaN (its quiet bit kept); a finite value past bf16's range is an
    ``ArgumentError`` (``struct`` raises ``OverflowError`` for the other floats)."""
    import struct

    from aotc.errors import ArgumentError

    msg = f"{value!r} does not fit bf16"
    try:
        (bits,) = struct.unpack("<I", struct.pack("<f", value))
    except OverflowError:  # past float's range, so past bf16's
        raise ArgumentError(msg) from None
    if bits & 0x7FFFFFFF > 0x7F800000:  # NaN: keep the sign, make it quiet
        return (bits >> 16) | 0x0040
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    if rounded & 0x7FFF == 0x7F80 and bits & 0x7FFFFFFF != 0x7F800000:
        raise ArgumentError(msg)
    return rounded


def zero_bits(value: object) -> bool:
    """Whether a fill ``value`` is stored as all-zero bits, as a library's ``zeros``
    writes them (cheaper than its ``full``): 0 or False, but not -0.0 (its sign bit)."""
    if type(value) is float and value == 0:
        return not str(value).startswith("-")  # no math.copysign: an import statement here would run per call
    return value == 0


# NumPy's dtypes that a package adds: (the module, the name it is installed by).
_NUMPY_PACKAGES = {"bfloat16": ("ml_dtypes", "ml-dtypes")}


def numpy_dtype(dtype: DType, name: str) -> object:
    """NumPy's dtype of ``dtype``, for the argument ``name``: bf16's through
    ml_dtypes, imported here, when a bf16 array is first met; without it a
    one-line refusal naming the argument and the package."""
    import numpy as np

    package = _NUMPY_PACKAGES.get(dtype.numpy)
    if package is not None:
        import importlib

        module, install = package
        try:
            return np.dtype(getattr(importlib.import_module(module), dtype.numpy))
        except ImportError:
            from aotc.errors import ArgumentTypeError

            msg = f"{name}: NumPy has no {dtype.name} ({dtype.numpy}) without {module}; pip install {install}"
            raise ArgumentTypeError(msg) from None
    return np.dtype(dtype.numpy)
