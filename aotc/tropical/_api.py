"""``Tropical``: the semiring layer over a library's declared GEMM family.

The tropical library is a declared library like any other (``kernels/
manifest.yaml``): its ``gemm`` family's kernels are bound by aotc's
generated bindings (``aotc.kernels``), one layout per pass, which read the
arrays, choose the kernel from their dtypes and ranks (a batch, or one
matrix), bind the dimensions and strides (a 2-D operand broadcast over a
batch; counting's (value, count) pairs; packed words), allocate and check
the results, launch on the arrays' device and stream, keep call plans, and
carry PyTorch's ops and autograd and JAX's routes. What is left here is the
tropical vocabulary:

- semiring names, refused in tropical's own words;
- which pass a product takes: forward, or the argmax kernel's product where
  a library builds only that one for a semiring; the backward passes from
  the argmax kernel's declared gradient;
- packing bool operands, where it pays (``_packs``);
- the reference (``aotc.reference``).

The K = 0 rule (the semiring zero everywhere, k* -1) is the kernels' own:
with no k tile to fold they write what they start from.
"""

from __future__ import annotations

import sys

from aotc.errors import ArgumentError, ArgumentTypeError, echo

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PACK_MIN_K", "REFUSALS", "Tropical"]

# The shortest k for which matmul() packs 2-D NumPy bool operands itself: a
# word folds 32 terms, and packing reads each operand once, so a product
# whose k spans two words is already cheaper packed (see Tropical._packs).
PACK_MIN_K = 64
# The axes of a family the tropical templates build (aotc:tropical).
_AXES = ("semiring", "dtype", "pass", "variant")
# A refusal of a call's argument: named for the tropical function called, not
# the binding below it (``gemm_argmax``) that refused it.
REFUSALS = (ArgumentError, ArgumentTypeError)


class Tropical:
    """The tropical API over one kernel library: ``aotc.tropical.over(lib)``."""

    def __init__(self, library: Any) -> None:
        from aotc.kernels import over

        self.library = library
        bindings = over(library)
        families = [bindings.family(name) for name in bindings.names]
        family = next((f for f in families if set(_AXES) <= set(f.axes)), None)
        if family is None:
            msg = f"library: {library.name} has no family of tropical kernels (axes {', '.join(_AXES)}; families: {', '.join(bindings.names) or 'none'})"
            raise ArgumentError(msg)
        self.family = family
        layouts = {(_one(layout.axes.get("pass")), "packed" in layout.axes.get("variant", ())): layout for layout in family.layouts.values()}
        self._forward, self._argmax = layouts.get(("forward", False)), layouts.get(("argmax", False))
        self._forward_packed, self._argmax_packed = layouts.get(("forward", True)), layouts.get(("argmax", True))
        self.names = tuple(family.axes["semiring"])
        # Semirings a 2-D NumPy bool product may pack for (matmul() checks these first).
        self._packable = frozenset(self._forward_packed.axes["semiring"]) if self._forward_packed is not None else frozenset()
        # The semirings whose argmax kernels declare a gradient (their backward kernels exist).
        backward = layouts.get(("backward_a", False))
        self._differentiable = frozenset(backward.axes["semiring"]) if backward is not None else frozenset()
        forward = self._forward
        self._plain = frozenset(forward.axes["semiring"]) - self._packable if forward is not None and forward.entry is not None else frozenset()
        # The semirings whose matmul_argmax is the argmax layout's entry, the semiring its keyword.
        argmax = self._argmax
        chosen = argmax is not None and argmax.entry is not None and "semiring" in argmax.open_axes
        self._plain_argmax = frozenset(argmax.axes["semiring"]) if chosen else frozenset()
        # Their entries' guards by array type, which the module's functions ask first (aotc.kernels._entry).
        self._forward_guards = forward.entry.guards if self._plain else {}
        self._argmax_guards = argmax.entry.guards if chosen else {}

    def __repr__(self) -> str:
        return f"<aotc.tropical.Tropical over library {self.library.name!r}>"

    def semirings(self) -> tuple[str, ...]:
        """The semiring names this library has kernels for."""
        return self.names

    def semiring(self, semiring: Any) -> str:
        """``semiring`` checked: a name this library has kernels for (a str-valued Enum names its value)."""
        if not isinstance(semiring, str):
            msg = f"semiring: expected a semiring name (str) such as 'maxplus' (known: {', '.join(self.names)}), got {echo(semiring)}"
            raise ArgumentTypeError(msg)
        if semiring not in self.names:
            msg = f"semiring: unknown {echo(semiring)} (known: {', '.join(self.names)})"
            raise ArgumentError(msg)
        return str.__str__(semiring)  # a str-valued Enum's value, not its name

    # --- the products --------------------------------------------------------------

    def matmul(self, a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, stream: Any = None) -> Any:
        """``C = A (x) B`` under ``semiring``; see ``aotc.tropical``."""
        try:
            name = self.semiring(semiring)
            if name in self._packable and self._packs(a, b):
                from aotc.tropical._packed import pack_bool

                pa, pb = pack_bool(a, 1), pack_bool(b, 0)
                return self._call(self._forward_packed, (pa.words, pb.words), name, out=out, stream=stream, K=pa.shape[1])
            if self._forward is None or name not in self._forward.axes["semiring"]:
                # This library builds only the argmax kernel for the semiring: its product.
                return self.matmul_argmax(a, b, name, out=out, stream=stream)[0]
            return self._call(self._forward, (a, b), name, out=out, stream=stream)
        except REFUSALS as exc:
            exc.function = "tropical.matmul"
            raise

    def matmul_argmax(self, a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, k_out: Any = None, stream: Any = None) -> tuple[Any, Any]:
        """``(C, k)``: the product and, per element, the k of its best term (ties to
        the smallest k; -1 where no term beats the semiring zero)."""
        try:
            return self._call(self._argmax, (a, b), self.semiring(semiring), out=out, k_out=k_out, stream=stream)
        except REFUSALS as exc:
            exc.function = "tropical.matmul_argmax"
            raise

    def matmul_backward(self, grad_c: Any, k: Any, a: Any, b: Any, semiring: str = "maxplus", *, stream: Any = None) -> tuple[Any, Any]:
        """``(grad_a, grad_b)`` from ``grad_c`` and the ``k`` that ``matmul_argmax`` returned.

        max-plus, min-plus: ``grad_a[i, k*] += grad_c[i, j]``, ``grad_b[k*, j] += grad_c[i, j]``;
        max-times multiplies each by the other operand. A 2-D operand that was
        broadcast over a batch gets the sum over the batch. A k* outside
        ``0 .. K-1`` sends no gradient, as -1 does (unchecked per call: on a
        GPU that would be a reduction and a wait; the reference refuses it).
        """
        try:
            name = self.semiring(semiring)
            layout = self._need(self._argmax, "argmax")
            if name not in self._differentiable:
                msg = f"semiring: {name!r} has no gradient (needs add max/min and mul add/mul)"
                raise ArgumentError(msg)
            grads = layout.gradients({"a": a, "b": b, "k_out": k}, {"out": grad_c}, {"semiring": name}, stream)
            return grads["a"], grads["b"]
        except REFUSALS as exc:
            exc.function = "tropical.matmul_backward"
            raise

    def matmul_packed(self, pa: Any, pb: Any, semiring: str = "andor", *, packed: bool = False, out: Any = None, stream: Any = None) -> Any:
        """``A (x) B`` for ``pa = pack_bool(A, 1)`` and ``pb = pack_bool(B, 0)``: a
        bool array, or with ``packed=True`` the result packed along its rows, ready
        to be the next left operand (``R = matmul_packed(R, pa_b, packed=True)``)."""
        try:
            if type(packed) is not bool:
                msg = f"packed: expected True or False, got {echo(packed)}"
                raise ArgumentTypeError(msg)
            layout = self._need(self._forward_packed, "packed forward")
            c = self._call(layout, _words(pa, pb), self.semiring(semiring), out=out, stream=stream, K=pa.shape[1])
            if not packed:
                return c
            from aotc.tropical._packed import pack_bool

            return pack_bool(c, 1)
        except REFUSALS as exc:
            exc.function = "tropical.matmul_packed"
            raise

    def matmul_packed_argmax(self, pa: Any, pb: Any, semiring: str = "andor", *, out: Any = None, k_out: Any = None, stream: Any = None) -> tuple[Any, Any]:
        """``(C, k)`` for packed operands: k is the first k with A[i,k] and B[k,j], or -1."""
        try:
            layout = self._need(self._argmax_packed, "packed argmax")
            return self._call(layout, _words(pa, pb), self.semiring(semiring), out=out, k_out=k_out, stream=stream, K=pa.shape[1])
        except REFUSALS as exc:
            exc.function = "tropical.matmul_packed_argmax"
            raise

    def preload(self, semirings: Any = None, dtypes: Any = None, device: Any = None) -> tuple[str, ...]:
        """Load the kernels of ``semirings`` and ``dtypes`` (None: all) on ``device``
        (None: the current device) now, so a CUDA graph can capture calls to them."""
        try:
            wanted = {"semiring": semirings, "dtype": dtypes}
            for axis, value in wanted.items():
                chosen = None if value is None else {value} if isinstance(value, str) else set(value)
                known = self.family.axes[axis]
                unknown = sorted(map(str, chosen - set(known))) if chosen is not None else []
                if unknown:
                    msg = f"{axis}s: unknown {', '.join(unknown)} (known: {', '.join(map(str, known))})"
                    raise ArgumentError(msg)
                wanted[axis] = chosen
            names = [
                name for name, axes, _ in self.family.catalog.members()
                if all(chosen is None or axes[axis] in chosen for axis, chosen in wanted.items())
            ]  # fmt: skip
            return self.library.preload(names, device)
        except REFUSALS as exc:
            exc.function = "tropical.preload"
            raise

    # --- the call -------------------------------------------------------------------

    def _call(self, layout: Any, arrays: tuple[Any, Any], semiring: str, **keywords: Any) -> Any:
        """The layout's entry (its plans first), with the semiring as its axis."""
        call = layout.entry or layout
        if "semiring" in layout.open_axes:
            keywords["semiring"] = semiring
        elif semiring not in layout.axes["semiring"]:
            raise layout.not_a_value("semiring", semiring)
        return call(*arrays, **keywords)

    def _need(self, layout: Any, what: str) -> Any:
        if layout is None:
            msg = f"library: {self.library.name} has no {what} kernels"
            raise ArgumentError(msg)
        return layout

    def _packs(self, a: Any, b: Any) -> bool:
        """Whether matmul() multiplies packed: 2-D NumPy bool operands with at
        least PACK_MIN_K values of k, under a semiring with a packed kernel.
        Packing is NumPy work on the host, so tensors and device arrays (and
        batches) take the byte kernels."""
        numpy = sys.modules.get("numpy")
        if numpy is None or type(a) is not numpy.ndarray or type(b) is not numpy.ndarray:
            return False
        if a.dtype.kind != "b" or b.dtype.kind != "b" or a.ndim != 2 or b.ndim != 2:
            return False
        return a.shape[1] >= PACK_MIN_K and a.shape[1] == b.shape[0]


def _one(values: Any) -> Any:
    return values[0] if values and len(values) == 1 else None


def _words(pa: Any, pb: Any) -> tuple[Any, Any]:
    """The packed operands' words, once each is checked as what its side takes."""
    from aotc.tropical._packed import PackedBool

    for p, name, axis in ((pa, "pa", 1), (pb, "pb", 0)):
        if not isinstance(p, PackedBool) or p.axis != axis:
            side = "pack_bool(A, 1), packed along each row" if axis == 1 else "pack_bool(B, 0), packed along each column"
            msg = f"{name}: expected {side}"
            raise ArgumentTypeError(msg) if not isinstance(p, PackedBool) else ArgumentError(msg)
    if pb.shape[0] != pa.shape[1]:
        msg = f"pb: shape {pb.shape} does not fit pa's {pa.shape}: A has {pa.shape[1]} columns, B has {pb.shape[0]} rows"
        raise ArgumentError(msg)
    return pa.words, pb.words
