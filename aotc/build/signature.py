"""The binary interface of a generated kernel: its signature (parameters in
order) and its launch geometry.

A family declares its kernel's interface in the manifest (``signature:`` and
``launch:``; parsed by ``aotc.build._family_fields``). This module is the
model that declaration becomes, resolved for one point of the family's
matrix: every dtype and every axis value is known, so each parameter has its
C type (``Param``: how the launcher packs it) and the launch its geometry
(``LaunchGeometry``).

Both sides read it. Codegen renders the parameter list into the template
(``params``) and appends a check that the compiled kernel takes exactly these
types (``parameter_check``); the index records it (``to_json``), and the
runtime packs arguments that match the compiled symbol by construction, and
its generated bindings (``aotc.kernels``) check, allocate and bind arrays
from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aotc.dtypes import DTYPES, DType
from aotc.dtypes import SCALAR_TYPES as _SCALAR_DTYPES
from aotc.index.schema import PACK_CODES, size_text

__all__ = [
    "ELEMENT_TYPES",
    "ROLES",
    "SCALAR_TYPES",
    "ArrayParam",
    "Extent",
    "LaunchGeometry",
    "Param",
    "ScalarParam",
    "Signature",
    "SizeExpression",
    "parameter_check",
]

ROLES = ("in", "out", "inout")
# Scalar parameter types: their C type. The names are the index's parameter kinds.
SCALAR_TYPES = {name: d.ctype for name, d in _SCALAR_DTYPES.items()}
# What an array may hold: every dtype of aotc's one table (``aotc.dtypes``),
# 32-bit words for arrays of packed bits (``pack``) among them.
ELEMENT_TYPES = DTYPES


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name, C type and how the runtime packs it (the
    index's ``struct`` codes: pointers travel as 64-bit device addresses)."""

    name: str
    ctype: str
    kind: str  # "ptr", or a scalar type (``SCALAR_TYPES``): "i32", "f32", "f16", ...

    @property
    def pack(self) -> str:
        return PACK_CODES[self.kind]

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


@dataclass(frozen=True)
class SizeExpression:
    """An extent that is an expression of the signature's integer scalars: a
    sum of ``terms`` (coefficient, the names multiplied), divided by ``div``
    rounding up (``cdiv(n, 32)``); ``indptr``'s ``rows + 1``. A call checks an in
    array's extent against it, and sizes an out array by it; it binds nothing."""

    terms: tuple[tuple[int, tuple[str, ...]], ...]
    div: int = 1

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for _, names in self.terms for n in names))

    @property
    def text(self) -> str:
        """As messages show it (``rows + 1``)."""
        return size_text(self.terms, self.div)

    def at(self, values: dict[str, object]) -> SizeExpression | int:
        """This expression with the names ``values`` holds (a point's axes and
        constants, integers) replaced: another expression, or a number where none is left."""
        terms: dict[tuple[str, ...], int] = {}
        for coef, names in self.terms:
            left = tuple(n for n in names if n not in values)
            product = coef
            for n in names:
                if n in values:
                    product *= values[n]  # type: ignore[assignment, operator]
            terms[left] = terms.get(left, 0) + product
        kept = tuple((coef, names) for names, coef in terms.items() if coef)
        if any(names for _, names in kept):
            return SizeExpression(kept, self.div)
        return -(-sum(coef for coef, _ in kept) // self.div)

    def to_json(self) -> dict[str, object]:
        entry: dict[str, object] = {"terms": [[coef, *names] for coef, names in self.terms]}
        if self.div != 1:
            entry["div"] = self.div
        return entry


@dataclass(frozen=True)
class ArrayParam:
    """A device pointer to a contiguous row-major array of ``shape``.

    Each entry of ``shape`` is a dimension's name (a scalar of the signature),
    a fixed extent, or a ``SizeExpression`` of dimensions (``rows + 1``). An ``in`` array is read only, so its pointer is const.
    ``optional`` names the leading dimensions a call may leave out (a batch:
    ``[batch, rows, cols]`` takes ``(rows, cols)`` arrays too, with batch 1).
    ``strides``, where declared, gives each dimension's stride in elements: a
    scalar of the signature the call binds from the array (so the array is
    read where it lies, a view or a broadcast), or 1 where the kernel needs
    the dimension dense. Without it the array is contiguous and row-major.

    Two layouts are for libraries that bind their own arrays (the generated
    bindings refuse them): ``lanes`` values of ``dtype`` make one element
    (tropical counting's (value, count) pairs), and ``pack`` values of one bit
    each fill a word of ``dtype`` along the last dimension (packed bool
    matrices). Shapes and strides count elements, words for a packed stride.

    ``arg`` is the bindings' name for it, where the manifest gives one (the C
    code keeps ``name``). An out array with a ``fill`` is set to that value,
    of its dtype's kind, before the launch (kernels that add into it).
    """

    name: str
    dtype: DType
    role: str  # one of ROLES
    shape: tuple[str | int | SizeExpression, ...]
    optional: tuple[str, ...] = ()
    strides: tuple[str | int, ...] = ()
    lanes: int = 1
    pack: int = 0
    arg: str = ""  # "": the name
    fill: int | float | bool | None = None

    @property
    def ctype(self) -> str:
        return f"{'const ' if self.role == 'in' else ''}{self.dtype.ctype}*"

    @property
    def kind(self) -> str:
        return "ptr"

    def to_json(self) -> dict[str, object]:
        shape = [e.to_json() if isinstance(e, SizeExpression) else e for e in self.shape]
        array: dict[str, object] = {"dtype": self.dtype.name, "role": self.role, "shape": shape}
        # Written only where declared: indexes without them read as before.
        if self.optional:
            array["optional"] = list(self.optional)
        if self.strides:
            array["strides"] = list(self.strides)
        if self.lanes != 1:
            array["lanes"] = self.lanes
        if self.pack:
            array["pack"] = self.pack
        if self.fill is not None:
            # JSON has no infinity: the index spells it as the manifest does.
            infinite = isinstance(self.fill, float) and abs(self.fill) == float("inf")
            array["fill"] = ("+inf" if self.fill > 0 else "-inf") if infinite else self.fill
        return {"name": self.name, **_arg(self.name, self.arg), "array": array}


@dataclass(frozen=True)
class ScalarParam:
    """A scalar: one the binder sets (``dim``: a dimension named bare in an in
    or inout array's shape, a stride, or a launch's ``split`` offset), or an
    argument the caller passes. An ``extent`` is an integer argument that sizes
    or bounds the call: named in shapes but bound by no in or inout array, or
    tied to a dimension the arrays bind (at most ``max``, a dimension or a
    number; exactly ``equals``). ``split`` names the grid axis ("x", "y", "z")
    the binder may launch in parts, setting this scalar to each part's first
    block index there. ``arg`` as for ``ArrayParam``."""

    name: str
    type: str  # one of SCALAR_TYPES
    dim: bool
    arg: str = ""  # "": the name
    extent: bool = False
    max: str | int | None = None
    equals: str | None = None
    split: str = ""

    @property
    def ctype(self) -> str:
        return SCALAR_TYPES[self.type]

    @property
    def kind(self) -> str:
        return self.type

    def to_json(self) -> dict[str, object]:
        entry: dict[str, object] = {"name": self.name, **_arg(self.name, self.arg), "scalar": self.type, "dim": self.dim}
        # Written only where true or declared: indexes without them read as before.
        if self.extent:
            entry["extent"] = True
        if self.max is not None:
            entry["max"] = self.max
        if self.equals is not None:
            entry["equals"] = self.equals
        if self.split:
            entry["split"] = self.split
        return entry


def _arg(name: str, arg: str) -> dict[str, str]:
    """A parameter's ``arg`` for its index entry: written only where it differs from its name."""
    return {"arg": arg} if arg and arg != name else {}


@dataclass(frozen=True)
class Extent:
    """One grid axis: ``ceil(scale * product(factors) / tile)`` blocks, where the
    factors are scalar parameters' names. Written to the index as the launch
    geometry's ``(extent, tile)``: the factors and a scale other than 1 joined
    by ``*`` (``"rows*heads"``, ``"4*n"``), or a number."""

    factors: tuple[str, ...]
    scale: int = 1
    tile: int = 1

    @property
    def text(self) -> str:
        if not self.factors:
            return str(-(-self.scale // self.tile) if self.scale else 0)
        return "*".join(((str(self.scale),) if self.scale != 1 else ()) + self.factors)

    def grid_entry(self) -> tuple[str, int]:
        return (self.text, self.tile if self.factors else 1)


@dataclass(frozen=True)
class Signature:
    """A kernel's parameters in order."""

    params: tuple[ArrayParam | ScalarParam, ...]

    @property
    def arrays(self) -> tuple[ArrayParam, ...]:
        return tuple(p for p in self.params if isinstance(p, ArrayParam))

    @property
    def headers(self) -> tuple[str, ...]:
        """The CUDA headers that declare its parameters' C types (``__half``'s
        cuda_fp16.h, ``__nv_bfloat16``'s cuda_bf16.h), sorted; none for C's own."""
        dtypes = (p.dtype if isinstance(p, ArrayParam) else DTYPES[p.type] for p in self.params)
        return tuple(sorted({d.header for d in dtypes} - {""}))

    def to_json(self) -> list[dict[str, object]]:
        return [p.to_json() for p in self.params]


def parameter_check(family: str, symbol: str, ctypes: tuple[tuple[str, str], ...]) -> str:
    """C++ that fails to compile unless kernel ``symbol`` takes exactly the
    parameters ``ctypes`` ((name, C type), in order), each failure one line
    naming the family and the parameter.

    The rendered source may spell its own parameter list instead of using
    ``params``; this holds it to the declaration, in the same compile that
    builds the kernel. It is types and constants only: no code, no symbol, so
    the compiled image is the same bytes with or without it. It uses no
    header, as generated sources include none of their own (nvcc, NVRTC and
    the emulator's host compiler all take it).
    """
    count = len(ctypes)
    lines = [
        "",
        f"// aotc: {symbol} must take the parameters its family's signature declares.",
        "namespace aotc_signature_check {",
        "template <int N, class F> struct param;",
        "template <class R, class A, class... As> struct param<0, R (*)(A, As...)> { typedef A type; };",
        "template <int N, class R, class A, class... As> struct param<N, R (*)(A, As...)> : param<N - 1, R (*)(As...)> {};",
        "template <int N, class R> struct param<N, R (*)()> { typedef void type; };  // past the last: the count fails",
        "template <class F> struct arity;",
        "template <class R, class... As> struct arity<R (*)(As...)> { static const int value = sizeof...(As); };",
        "template <class A, class B> struct same { static const bool value = false; };",
        "template <class A> struct same<A, A> { static const bool value = true; };",
        f"typedef decltype(&::{symbol}) kernel_type;",
        f'static_assert(arity<kernel_type>::value == {count}, "aotc: family {family}: {symbol} must take {count} parameters, '
        f'as its signature declares");',
    ]
    for i, (name, ctype) in enumerate(ctypes):
        message = f"aotc: family {family}: parameter {name} ({i + 1} of {count}) must be {ctype}, as its signature declares"
        lines.append(f'static_assert(same<param<{i}, kernel_type>::type, {ctype}>::value, "{message}");')
    lines.append("}  // namespace aotc_signature_check")
    return "\n".join(lines) + "\n"
