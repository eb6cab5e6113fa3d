"""The vocabulary a manifest may use: dtypes, semiring operations and constants.

A semiring is declared in the manifest as data (its add and mul operation names
and its zero and one), so a new semiring is a manifest edit. The names here are
what the templates know how to implement; the manifest validator checks against
them, and the shared device header renders them.
"""

from __future__ import annotations

from dataclasses import dataclass

from aotc.dtypes import DTYPES as ALL_DTYPES
from aotc.dtypes import DType
from aotc.errors import ArgumentError, echo

__all__ = [
    "ADD_OPS",
    "CONSTANTS",
    "DTYPES",
    "IDENTITY_OF_ADD",
    "IDENTITY_OF_MUL",
    "MUL_OPS",
    "DType",
    "Semiring",
]


# The dtypes a semiring computes in: the dtype table's (``aotc.dtypes``) less
# the storage-only ones (u32 words of packed bits).
DTYPES: dict[str, DType] = {name: ALL_DTYPES[name] for name in ("f32", "f64", "i32", "i64", "bool")}

# Operation names a semiring may use, with the dtype kinds each one supports.
ADD_OPS: dict[str, frozenset[str]] = {
    "max": frozenset({"float", "int"}),
    "min": frozenset({"float", "int"}),
    "or": frozenset({"bool"}),
}
MUL_OPS: dict[str, frozenset[str]] = {
    "add": frozenset({"float", "int"}),
    "mul": frozenset({"float", "int"}),
    "min": frozenset({"float", "int"}),
    "max": frozenset({"float", "int"}),
    "and": frozenset({"bool"}),
}

# Constants a semiring's zero and one may take. For integers "-inf" and "+inf"
# mean the type's lowest and highest values.
CONSTANTS: dict[str, frozenset[str]] = {
    "-inf": frozenset({"float", "int"}),
    "+inf": frozenset({"float", "int"}),
    "0": frozenset({"float", "int"}),
    "1": frozenset({"float", "int"}),
    "false": frozenset({"bool"}),
    "true": frozenset({"bool"}),
}

# A semiring's zero is the identity of its (+) and its one the identity of (x);
# a declaration that says otherwise is a typo, not a new semiring.
IDENTITY_OF_ADD = {"max": "-inf", "min": "+inf", "or": "false"}
IDENTITY_OF_MUL = {"add": "0", "mul": "1", "and": "true", "min": "+inf", "max": "-inf"}


@dataclass(frozen=True)
class Semiring:
    """A semiring as the manifest declares it."""

    name: str
    add: str
    mul: str
    zero: str
    one: str
    # Elements are (value, count) pairs: (+) adds counts on a tie of values,
    # (x) multiplies them. Stored as two adjacent values of the dtype.
    counting: bool = False

    def validate(self) -> None:
        """Raise ValueError("<field>: <why>") for the first rule this declaration
        breaks; the manifest adds the file and line, the reference raises as is."""
        for field, op, vocabulary in (("add", self.add, ADD_OPS), ("mul", self.mul, MUL_OPS)):
            # A declaration is data from a file: an op may be any YAML value, a list included.
            if not isinstance(op, str) or op not in vocabulary:
                msg = f"{field}: unknown operation {echo(op)} (known: {', '.join(vocabulary)})"
                raise ArgumentError(msg)
        if (self.add == "or") != (self.mul == "and"):
            msg = f"mul: {self.mul!r} cannot pair with add {self.add!r} ('or' pairs only with 'and')"
            raise ArgumentError(msg)
        if self.add == self.mul:
            msg = f"mul: {self.mul!r} cannot equal add: the zero would not absorb"
            raise ArgumentError(msg)
        for field, value, identity in (
            ("zero", self.zero, IDENTITY_OF_ADD[self.add]),
            ("one", self.one, IDENTITY_OF_MUL[self.mul]),
        ):
            if not isinstance(value, str) or value not in CONSTANTS:
                msg = f"{field}: unknown value {echo(value)} (known: {', '.join(CONSTANTS)})"
                raise ArgumentError(msg)
            if value != identity:
                msg = f"{field}: {value!r} is not the identity of {self.add}/{self.mul}; expected {identity!r}"
                raise ArgumentError(msg)
        if self.counting and (self.add == "or" or self.mul != "add"):
            msg = "counting: needs add 'max' or 'min' and mul 'add'"
            raise ArgumentError(msg)

    @property
    def is_boolean(self) -> bool:
        return self.add == "or"

    def supports(self, dtype: DType) -> bool:
        """Whether every operation and constant is defined for ``dtype``."""
        return (
            dtype.kind in ADD_OPS[self.add]
            and dtype.kind in MUL_OPS[self.mul]
            and dtype.kind in CONSTANTS[self.zero]
            and dtype.kind in CONSTANTS[self.one]
            and (not self.counting or dtype.is_float)
        )

    @property
    def has_gradient(self) -> bool:
        """Whether backward passes exist: (+) selects one term, (x) is + or *."""
        return not self.counting and self.add in ("max", "min") and self.mul in ("add", "mul")

    def has_plain_tiles(self, dtype: DType) -> bool:
        """Whether kernels fold tiles whose values can't meet NaN, saturation or
        the absorbing zero with unguarded operations (docs/design.md, "Plain tiles")."""
        return dtype.kind == "float" or (dtype.kind == "int" and not self.counting)

    def element_size(self, dtype: DType) -> int:
        return dtype.size * (2 if self.counting else 1)
