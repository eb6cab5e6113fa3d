"""A caller's scalar argument as the kernel's parameter takes it, whichever
launcher launches (``_launch``, jaxlib's for JAX); each refusal one line."""

from __future__ import annotations

import struct
import sys

from aotc.dtypes import bf16_bits
from aotc.errors import ArgumentError, ArgumentTypeError, echo
from aotc.kernels._decision import INT_RANGES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CONVERTED", "F32_FINITE_PAST", "INT_PAST_F64", "scalar_argument"]

# The scalar kinds a caller's number is packed as only through scalar_argument:
# bf16 travels as its bits, and a finite f16 past 65504 is refused here. The
# generated plans call it for these; for an f32 they test F32_FINITE_PAST
# inline (a call per scalar cost a third of a plan's time) and leave a finite
# number past f32's range to the full path, which refuses it here (the
# launchers' native-order struct would pack it as inf without a word).
CONVERTED = frozenset({"f16", "bf16"})
F32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
# ``F32_FINITE_PAST.format(name)``: whether the number ``name`` is finite and past f32's range.
F32_FINITE_PAST = "(not -{F32_MAX!r} <= {{0}} <= {F32_MAX!r} and {{0}} - {{0}} == 0)".format(F32_MAX=F32_MAX)
# ``INT_PAST_F64.format(name)``: whether the int ``name`` is past every f64 (10**400),
# which the launchers' struct would refuse in its own words ("required argument is not a float").
INT_PAST_F64 = "not -{F64_MAX} <= {{0}} <= {F64_MAX}".format(F64_MAX=int(sys.float_info.max))
# The float kinds whose range struct checks in standard order (an f64 takes any float).
_PACKED_FLOATS = {"f16": "<e", "f32": "<f"}


def scalar_argument(value: Any, name: str, kind: str) -> Any:
    """A caller's scalar as the kernel takes it: an int in range, a float, or
    for a bf16 parameter the 16 bits of the nearest bfloat16 (its pack code is
    "H": ``struct`` has no bfloat16)."""
    what = "an integer" if kind in INT_RANGES else "a number"
    if isinstance(value, bool) or not hasattr(value, "__index__" if kind in INT_RANGES else "__float__"):
        msg = f"{name}: expected {what} ({kind}), got {echo(value)}"
        raise ArgumentTypeError(msg)
    shape = getattr(value, "shape", ())
    if shape:  # an array of one or more values: NumPy's and PyTorch's own words would name neither call nor argument
        msg = f"{name}: expected {what} ({kind}), got an array of shape {tuple(shape)}"
        raise ArgumentTypeError(msg)
    if kind in INT_RANGES:
        try:
            number = value.__index__()
        except (TypeError, ValueError, RuntimeError):  # a 0-d float array's __index__
            msg = f"{name}: expected {what} ({kind}), got {echo(value)}"
            raise ArgumentTypeError(msg) from None
        low, high = INT_RANGES[kind]
        if not low <= number <= high:
            msg = f"{name}: {number} does not fit {kind}"
            raise ArgumentError(msg)
        return number
    try:
        number = float(value)  # an int past every float (10**400) overflows here: it fits no float kind
    except OverflowError:
        msg = f"{name}: {echo(value)} does not fit {kind}"
        raise ArgumentError(msg) from None
    except (TypeError, ValueError, RuntimeError):  # a __float__ that refuses (a complex array, an object)
        msg = f"{name}: expected {what} ({kind}), got {echo(value)}"
        raise ArgumentTypeError(msg) from None
    try:
        if kind == "bf16":
            return bf16_bits(number)
        if kind in _PACKED_FLOATS:  # rounds to nearest even; a finite value past the type's range overflows
            struct.pack(_PACKED_FLOATS[kind], number)
    except (OverflowError, ArgumentError):  # struct's for f16 and f32, bf16_bits' for bf16
        msg = f"{name}: {number!r} does not fit {kind}"
        raise ArgumentError(msg) from None
    return number
