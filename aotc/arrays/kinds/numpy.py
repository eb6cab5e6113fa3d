"""NumPy arrays, and what NumPy reads into one (lists, ``__array_interface__`` objects)."""

from __future__ import annotations

import sys

import numpy as np

from aotc.arrays.kinds._base import ArrayKind
from aotc.arrays.operands import Operand, data_pointers, direct_pointer, numpy_pointer
from aotc.dtypes import DTYPES, by_numpy, numpy_dtype, zero_bits
from aotc.errors import ArgumentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CONVERTED", "NUMPY", "NumpyKind"]

# NumPy's dtype.name is computed in Python and costs microseconds: dtypes are
# looked up by the dtype object itself, which hashes in C.
_dtype_names: dict[Any, str] = {}


def dtype_name(dt: Any) -> str:
    """aotc's name of the NumPy dtype ``dt``, or NumPy's own where aotc has none."""
    name = _dtype_names.get(dt)
    if name is None:
        found = by_numpy(dt.name)
        name = _dtype_names[dt] = found.name if found is not None and dt.isnative else dt.name
    return name


class NumpyKind(ArrayKind):
    name = "numpy"

    def read(self, obj: Any, name: str) -> Operand:
        array = obj
        dt = array.dtype
        if not dt.isnative:
            # Kernels read native words: a big-endian input is read through a
            # swapped copy (an out array of that order is refused: it would be lost).
            array = array.astype(dt.newbyteorder("="))
            dt = array.dtype
        itemsize = dt.itemsize
        strides = array.strides
        if not array.flags.c_contiguous and any(s % itemsize for s in strides):
            array = array.copy()  # strides of part-elements (a record array's field): copy
            strides = array.strides
        if len(strides) == 2:  # the common case, spelled out: a comprehension costs more than the rest
            elements = (strides[0] // itemsize, strides[1] // itemsize)
        else:
            elements = tuple([s // itemsize for s in strides])
        return Operand(array, self, dtype_name(dt), array.shape, elements, numpy_pointer(array), "cpu")

    def contiguous(self, op: Operand, name: str) -> Operand:
        return self.read(np.ascontiguousarray(op.obj), name)

    def allocate(self, like: Operand, shape: tuple[int, ...], dtype: str, stream: Any, name: str, fill: Any = None) -> Any:
        kind = numpy_dtype(DTYPES[dtype], name)
        if fill is None:
            return np.empty(shape, kind)
        return np.zeros(shape, kind) if zero_bits(fill) else np.full(shape, fill, kind)

    def writable(self, op: Operand) -> bool:
        return bool(op.obj.flags.writeable)

    def unwritable(self, obj: Any, name: str) -> str | None:
        if not obj.dtype.isnative:  # read would swap it into a copy, which the result would be lost in
            return f"{name}: has non-native byte order ({obj.dtype.str}); pass a native-endian array"
        return None

    def shares_memory(self, x: Operand, y: Operand) -> bool:
        return bool(np.shares_memory(x.obj, y.obj))

    def row_major(self, op: Operand) -> bool:
        return super().row_major(op) and op.obj.flags.c_contiguous

    def shape_of(self, obj: Any) -> tuple[int, ...]:  # the gradient operations' facts: no read, no copy
        return obj.shape

    def dtype_of(self, obj: Any) -> str:
        return dtype_name(obj.dtype if obj.dtype.isnative else obj.dtype.newbyteorder("="))

    # Call plans: on the arrays themselves (see ArrayKind).
    plan_operands = False

    def plan_key(self, var: str) -> tuple[str, ...]:
        return (f"{var}.shape", f"{var}.strides", f"{var}.dtype")

    def plan_pointer(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        if sys.maxsize > 2**32 and direct_pointer():
            # Where NumPy keeps it (aotc.arrays.operands.data_pointers): index id(array) >> 3.
            names["_aotc_numpy_pointers"] = data_pointers()
            return f"_aotc_numpy_pointers[id({var}) >> 3]"
        names["_aotc_numpy_pointer"] = numpy_pointer
        return f"_aotc_numpy_pointer({var})"

    def plan_result(self, var: str) -> str:
        return var

    def plan_writable(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str | None:
        return f"{var}.flags.writeable"

    def plan_copy(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        names["_aotc_numpy_contiguous"] = np.ascontiguousarray
        return f"_aotc_numpy_contiguous({var})"

    def plan_allocate(self, op: Operand, like: str, stream: str, prefix: str, names: dict[str, Any], fill: Any, name: str) -> str:
        names["_aotc_numpy_empty"], names["_aotc_numpy_full"] = np.empty, np.full
        names[f"{prefix}shape"], names[f"{prefix}dtype"] = op.shape, op.obj.dtype
        if fill is None:
            return f"_aotc_numpy_empty({prefix}shape, {prefix}dtype)"
        names[f"{prefix}fill"] = fill
        return f"_aotc_numpy_full({prefix}shape, {prefix}fill, {prefix}dtype)"

    def plan_fill(self, op: Operand, var: str, stream: str, prefix: str, names: dict[str, Any], value: Any, backend: Any) -> str:
        names[f"{prefix}fill"] = value
        return f"{var}[...] = {prefix}fill"

    def plan_stream(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        return "0"

    def plan_hold(self, op: Operand, var: str, stream: str, prefix: str, names: dict[str, Any]) -> str | None:
        return None


class ConvertedKind(NumpyKind):
    """Lists, tuples and ``__array_interface__`` objects: read through
    ``numpy.asarray``, so the operand (and a result like it) is a NumPy array."""

    per_type = False  # a list's kind is decided anew: it is no array type

    def unwritable(self, obj: Any, name: str) -> str | None:
        return None  # read makes a new array of it: output() says it is no array to write into

    def read(self, obj: Any, name: str) -> Operand:
        try:
            array = np.asarray(obj)
        except (ValueError, TypeError) as exc:  # ragged nesting, mixed objects
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            msg = f"{name}: NumPy cannot make an array of this {type(obj).__name__} ({reason})"
            raise ArgumentError(msg) from None
        return NUMPY.read(array, name)


NUMPY = NumpyKind()
CONVERTED = ConvertedKind()
