"""Tropical matrix products on the arrays you already have.

    from aotc import tropical
    c = tropical.matmul(a, b, "maxplus")              # C[i,j] = max_k A[i,k] + B[k,j]
    c, k = tropical.matmul_argmax(a, b, "minplus")    # and the k that won
    ga, gb = tropical.matmul_backward(gc, k, a, b, "maxplus")

Inputs are NumPy arrays, PyTorch tensors (CPU or CUDA), or anything with
``__cuda_array_interface__`` (CuPy, pycuda); the result is the same kind, on
the same device. 3-D inputs run batched, and a 2-D operand broadcasts over the
batch. The dtype comes from the inputs; a counting semiring takes and returns
a trailing axis of length 2 (value, count). PyTorch tensors that require
gradients get a ``torch.autograd.Function`` (see ``aotc.tropical._torch``).

Bool matrices for an or/and semiring can also be packed 32 values to a word
(``pack_bool``) and multiplied packed (``matmul_packed``), which folds 32
terms with one AND; repeated products (reachability, ``R = R (x) A``) can stay
packed (``packed=True``). ``matmul(a, b, "andor")`` packs by itself when it
pays (see ``Tropical._packs``).

Host arrays are used in place on host-memory backends (the CPU emulator) and
copied to the device and back on GPU backends. Strided or transposed inputs
are copied to row-major first. Errors are one line naming the argument.

The module's functions use the installed ``tropical`` library. Another
library built from the same templates (another project's manifest) has its
own handle, a ``Tropical``, with the same functions::

    lib = aotc.load("/path/to/otherlib")
    c = lib.tropical.matmul(a, b, "maxmin")

Handles share nothing but the backend, so any number of libraries are used
side by side; ``set_library`` changes which one the module's functions use.
"""

from __future__ import annotations

import operator
import os
import sys
import threading
from typing import Any

from aotc.errors import ArgumentError
from aotc.tropical._arrays import Operand, as_operand, contiguous, empty_like_kind, is_row_major, zeros_like_kind

__all__ = [
    "PackedBool",
    "Tropical",
    "matmul",
    "matmul_argmax",
    "matmul_backward",
    "matmul_packed",
    "matmul_packed_argmax",
    "pack_bool",
    "semirings",
    "set_library",
]

# The shortest k for which matmul() packs 2-D NumPy bool operands itself: a
# word folds 32 terms, and packing reads each operand once, so a product
# whose k spans two words is already cheaper packed (see Tropical._packs).
PACK_MIN_K = 64

_shared: dict[str, Any] = {"api": None}  # the Tropical the module's functions use
_lock = threading.Lock()
_ARGUMENTS = (
    "A", "B", "C", "Kstar", "M", "N", "K", "lda", "ldb", "ldc", "ldk", "batch",
    "batch_stride_A", "batch_stride_B", "batch_stride_C", "batch_stride_Kstar",
)  # fmt: skip


def set_library(library: Any = None, *, backend: Any = None) -> Any:
    """Use ``library`` (a Library, an installed name or a folder) for the module's
    functions; None goes back to the installed tropical library. Returns the Library.

    This changes the process-wide default; to use a second library beside the
    default, use its own handle, ``aotc.load(folder).tropical``, instead.
    """
    if isinstance(library, (str, os.PathLike)):
        from aotc.runtime.library import load

        library = load(library, backend=backend)
    api = None if library is None else _api_of(library)
    with _lock:
        _shared["api"] = api
    return library


def _api_of(library: Any) -> Tropical:
    # A Library keeps its handle, so its prepared plans are shared with lib.tropical.
    api = getattr(library, "tropical", None)
    return api if isinstance(api, Tropical) else Tropical(library)


def _api() -> Tropical:
    api = _shared["api"]
    if api is None:
        with _lock:
            if _shared["api"] is None:
                from aotc.runtime.library import load

                _shared["api"] = _api_of(load("tropical"))
            api = _shared["api"]
    return api


def _library() -> Any:
    """The Library the module's functions use."""
    return _api().library


def semirings() -> tuple[str, ...]:
    """The semiring names the library has kernels for."""
    return _api().semirings()


def _semiring(library: Any, semiring: str) -> dict[str, Any]:
    table = library.index["semirings"]
    spec = table.get(semiring) if isinstance(semiring, str) else None
    if spec is None:
        msg = f"semiring: unknown {semiring!r} (known: {', '.join(table)})"
        raise ArgumentError(msg)
    return spec


# --- operand checks ------------------------------------------------------------


def _matrix(op: Operand, name: str, counting: bool) -> tuple[Operand, int, int, int, int, int]:
    """(operand, batch or 0, rows, cols, batch stride, row stride), in elements
    (pairs for counting), copying the operand when its rows aren't contiguous."""
    shape, strides = op.shape, op.strides
    if counting:
        if not shape or shape[-1] != 2:
            msg = f"{name}: a counting semiring needs a trailing axis of length 2 (value, count), got shape {shape}"
            raise ArgumentError(msg)
        if strides[-1] != 1 or any(s % 2 for s in strides[:-1]):
            op = contiguous(op, name)
            shape, strides = op.shape, op.strides
        shape, strides = shape[:-1], tuple(s // 2 for s in strides[:-1])
    if len(shape) not in (2, 3):
        what = "(..., 2) " if counting else ""
        msg = f"{name}: expected a 2-D or 3-D {what}array, got shape {op.shape}"
        raise ArgumentError(msg)
    rows, cols = shape[-2], shape[-1]
    row_stride, col_stride = strides[-2], strides[-1]
    # An empty array's strides are whatever NumPy chose (often 0), and copying
    # it keeps them: nothing is read, so take it as it is.
    if 0 not in shape and ((col_stride != 1 and cols > 1) or row_stride < 0 or (len(shape) == 3 and strides[0] < 0)):
        return _matrix(contiguous(op, name), name, counting)
    batch = shape[0] if len(shape) == 3 else 0
    batch_stride = strides[0] if len(shape) == 3 else 0
    # A single row's stride is arbitrary; a stride of 0 (a broadcast row) is kept.
    return op, batch, rows, cols, batch_stride, row_stride if rows > 1 else cols


def _same(a: Operand, other: Operand, name: str) -> None:
    if other.dtype != a.dtype:
        msg = f"{name}: dtype {other.dtype} does not match a's {a.dtype}"
        raise ArgumentError(msg)
    if other.device != a.device:
        msg = f"{name}: on {other.device}, but a is on {a.device}"
        raise ArgumentError(msg)


def _pair(A: Operand, B: Operand, counting: bool) -> tuple[Operand, Operand, tuple[int, ...]]:
    """Check that a and b multiply; return them (row-major where needed) and
    (batch_a, batch_b, m, k, n, batch stride a, batch stride b, lda, ldb)."""
    A, batch_a, m, k, sa, lda = _matrix(A, "a", counting)
    B, batch_b, k2, n, sb, ldb = _matrix(B, "b", counting)
    if k2 != k:
        msg = f"b: shape {B.shape} does not fit a's {A.shape}: a has {k} columns, b has {k2} rows"
        raise ArgumentError(msg)
    if batch_a and batch_b and batch_a != batch_b:
        msg = f"b: batch of {batch_b} does not match a's batch of {batch_a}"
        raise ArgumentError(msg)
    return A, B, (batch_a, batch_b, m, k, n, sa, sb, lda, ldb)


def _launcher(library: Any, semiring: str, dtype: str, pass_name: str, variant: str) -> Any:
    try:
        return library.find(semiring, dtype, pass_name, variant)
    except KeyError:
        kernels = library.index["kernels"].values()
        have = sorted({e["dtype"] for e in kernels if e["semiring"] == semiring and e["pass"] == pass_name})
        msg = f"a: no {pass_name} kernel for semiring {semiring!r} and dtype {dtype} (dtypes with one: {', '.join(have) or 'none'})"
        raise ArgumentError(msg) from None


def _stream(stream: Any, op: Operand) -> Any:
    if stream is not None or op.kind == "numpy":
        return stream or 0
    if op.kind == "torch" and not op.on_host:
        return sys.modules["torch"].cuda.current_stream(op.obj.device).cuda_stream
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(op.obj, cupy.ndarray):
        return cupy.cuda.get_current_stream().ptr
    return 0


# --- running a kernel on host or device memory -----------------------------------


class _Memory:
    """Pointers the kernel can use: operands in place, or staged device copies of
    host arrays when the backend runs on a GPU."""

    def __init__(self, backend: Any, host_backend: bool) -> None:
        self.backend = backend
        self.host_backend = host_backend
        self.staged: list[tuple[int, Any, bool]] = []  # (device pointer, host array, copy back)

    def check(self, op: Operand, name: str) -> None:
        """Refuse, before anything is allocated, arrays this backend cannot reach."""
        if self.host_backend and not op.on_host:
            msg = f"{name}: a {op.device} array, but the {self.backend.name} backend runs on host memory"
            raise ArgumentError(msg)

    def pointer(self, op: Operand, name: str, *, result: bool = False, zeroed: bool = False) -> int:
        self.check(op, name)
        if self.host_backend:
            return op.pointer
        if not op.on_host:
            return op.pointer
        host = op.obj.numpy() if op.kind == "torch" else op.obj
        size = host.nbytes
        device = self.backend.alloc(max(size, 1))
        self.staged.append((device, host, result))
        if size and (not result or zeroed):
            self.backend.copy_to_device(device, host)
        return device

    def finish(self) -> None:
        try:
            if self.staged:
                self.backend.synchronize()
            for device, host, result in self.staged:
                if result and host.nbytes:
                    self.backend.copy_to_host(memoryview(host.reshape(-1).view("uint8")), device)
        finally:
            for device, _, _ in self.staged:
                self.backend.free(device)


def _stageable(op: Operand, name: str) -> Operand:
    """A host operand bound for a GPU is copied there byte for byte, so its
    layout must be plain row-major first (a padded or broadcast view is not)."""
    return contiguous(op, name) if op.on_host and not is_row_major(op) else op


def _host_backend(backend: Any) -> bool:
    return getattr(backend, "memory", "device") == "host"


def _output(out: Any, name: str, like: Operand, shape: tuple[int, ...], dtype: str) -> Operand:
    if out is None:
        return as_operand(empty_like_kind(like, shape, dtype), name)
    op = as_operand(out, name)
    if op.shape != shape or op.dtype != dtype:
        msg = f"{name}: expected shape {shape} and dtype {dtype}, got {op.shape} and {op.dtype}"
        raise ArgumentError(msg)
    if op.device != like.device:
        msg = f"{name}: on {op.device}, but a is on {like.device}"
        raise ArgumentError(msg)
    if not (op.obj.flags.c_contiguous if op.kind == "numpy" else is_row_major(op)):
        msg = f"{name}: must be a contiguous row-major array"
        raise ArgumentError(msg)
    return op


def _wants_autograd(a: Any, b: Any) -> bool:
    torch = sys.modules.get("torch")
    return (
        torch is not None
        and isinstance(a, torch.Tensor)
        and torch.is_grad_enabled()
        and (a.requires_grad or (isinstance(b, torch.Tensor) and b.requires_grad))
    )


class Tropical:
    """The tropical API over one kernel library's kernels: ``lib.tropical`` of an
    ``aotc.load()`` result. Its methods are the module's functions; it keeps the
    launchers it prepared, so each kind of product is looked up once."""

    def __init__(self, library: Any) -> None:
        self.library = library
        # (semiring, dtype, pass, variant) -> (launcher, picks its arguments from _ARGUMENTS' order)
        self._plans: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
        self._counting: dict[str, bool] = {}  # semiring name -> whether its elements are (value, count) pairs
        self._packable: dict[str, bool] = {}  # semiring name -> whether the library has its packed forward kernel

    def __repr__(self) -> str:
        return f"<aotc.tropical.Tropical over library {getattr(self.library, 'name', self.library)!r}>"

    def semirings(self) -> tuple[str, ...]:
        """The semiring names this library has kernels for."""
        return tuple(self.library.index["semirings"])

    def _plan(self, semiring: str, dtype: str, pass_name: str, variant: str) -> tuple[Any, Any]:
        """The product kernel's launcher and argument picker, prepared once."""
        key = (semiring, dtype, pass_name, variant)
        plan = self._plans.get(key)
        if plan is None:
            launcher = _launcher(self.library, semiring, dtype, pass_name, variant)
            picker = operator.itemgetter(*(_ARGUMENTS.index(p) for p in launcher.params))
            plan = self._plans[key] = (launcher, picker)
        return plan

    def _product(
        self, pass_name: str, a: Any, b: Any, semiring: str, out: Any, k_out: Any, stream: Any
    ) -> tuple[Any, Any]:
        library = self.library
        counting = self._counting.get(semiring)
        if counting is None:
            counting = self._counting[semiring] = bool(_semiring(library, semiring).get("counting", False))
        A, B = as_operand(a, "a"), as_operand(b, "b")
        if B.dtype != A.dtype or B.device != A.device:
            _same(A, B, "b")
        host_backend = _host_backend(library.backend)
        if host_backend and A.device != "cpu":
            _Memory(library.backend, host_backend).check(A, "a")  # raises: this backend can't reach it
        if not host_backend:
            A, B = _stageable(A, "a"), _stageable(B, "b")
        A, B, (batch_a, batch_b, m, k, n, sa, sb, lda, ldb) = _pair(A, B, counting)
        batch = batch_a or batch_b
        launcher, pick = self._plan(semiring, A.dtype, pass_name, "batched" if batch else "single")

        lead = (batch,) if batch else ()
        C = _output(out, "out", A, (*lead, m, n, 2) if counting else (*lead, m, n), A.dtype)
        K_op = _output(k_out, "k_out", A, (*lead, m, n), "i32") if pass_name == "argmax" else None
        sizes = (m, n, k, lda, ldb, n, n, batch, sa if batch_a else 0, sb if batch_b else 0, m * n, m * n)
        if host_backend:
            # Everything is host memory: the operands are used in place.
            pointers = (A.pointer, B.pointer, C.pointer, K_op.pointer if K_op is not None else 0)
            launcher(*pick(pointers + sizes), stream=_stream(stream, A))
            return C.obj, (K_op.obj if K_op is not None else None)
        memory = _Memory(library.backend, host_backend)
        try:
            pointers = (
                memory.pointer(A, "a"), memory.pointer(B, "b"), memory.pointer(C, "out", result=True),
                memory.pointer(K_op, "k_out", result=True) if K_op is not None else 0,
            )  # fmt: skip
            launcher(*pick(pointers + sizes), stream=_stream(stream, A))  # in _ARGUMENTS' order
        finally:
            memory.finish()
        return C.obj, (K_op.obj if K_op is not None else None)

    def matmul(self, a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, stream: Any = None) -> Any:
        """``C = A (x) B`` under ``semiring``; see the module docstring."""
        if _wants_autograd(a, b):
            if out is not None:
                msg = "out: not supported while autograd records; call under torch.no_grad() or drop out="
                raise ArgumentError(msg)
            from aotc.tropical._torch import tropical_matmul

            return tropical_matmul(a, b, semiring, self)
        if self._packs(a, b, semiring):
            return self._packed_product("forward", pack_bool(a, 1), pack_bool(b, 0), semiring, out, None, stream)[0]
        return self._product("forward", a, b, semiring, out, None, stream)[0]

    def matmul_argmax(
        self, a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, k_out: Any = None, stream: Any = None
    ) -> tuple[Any, Any]:
        """``(C, k)``: the product and, per element, the k of its best term (ties
        to the smallest k; -1 where no term beats the semiring zero)."""
        return self._product("argmax", a, b, semiring, out, k_out, stream)

    def matmul_backward(
        self, grad_c: Any, k: Any, a: Any, b: Any, semiring: str = "maxplus", *, stream: Any = None
    ) -> tuple[Any, Any]:
        """``(grad_a, grad_b)`` from ``grad_c`` and the ``k`` that ``matmul_argmax`` returned.

        max-plus, min-plus: ``grad_a[i, k*] += grad_c[i, j]``, ``grad_b[k*, j] += grad_c[i, j]``;
        max-times multiplies each by the other operand. A 2-D operand that was
        broadcast over a batch gets the sum over the batch.
        """
        library = self.library
        spec = _semiring(library, semiring)
        if spec.get("counting") or spec["add"] not in ("max", "min") or spec["mul"] not in ("add", "mul"):
            msg = f"semiring: {semiring!r} has no gradient (needs add max/min and mul add/mul)"
            raise ArgumentError(msg)
        A, B = as_operand(a, "a"), as_operand(b, "b")
        G, Kop = as_operand(grad_c, "grad_c"), as_operand(k, "k")
        _same(A, B, "b")
        _same(A, G, "grad_c")
        if not _host_backend(library.backend):
            A, B, G, Kop = (_stageable(op, n) for op, n in ((A, "a"), (B, "b"), (G, "grad_c"), (Kop, "k")))
        A, B, (batch_a, batch_b, m, kk, n, sa, sb, lda, ldb) = _pair(A, B, False)
        batch = batch_a or batch_b
        lead = (batch,) if batch else ()
        G, batch_g, gm, gn, sg, ldgc = _matrix(G, "grad_c", False)
        if (gm, gn) != (m, n) or batch_g != batch:
            msg = f"grad_c: shape {G.shape} does not match the product's {(*lead, m, n)}"
            raise ArgumentError(msg)
        if Kop.dtype != "i32" or Kop.shape != (*lead, m, n) or Kop.device != A.device:
            msg = f"k: expected the int32 {(*lead, m, n)} array matmul_argmax returned on {A.device}, got {Kop.dtype} {Kop.shape} on {Kop.device}"
            raise ArgumentError(msg)
        Kop, _, _, _, sk, ldk = _matrix(Kop, "k", False)
        variant = "batched" if batch else "single"
        _Memory(library.backend, _host_backend(library.backend)).check(A, "a")
        grads = []
        for pass_name, target, target_op, stride in (("backward_a", "grad_A", A, sa), ("backward_b", "grad_B", B, sb)):
            launcher = _launcher(library, semiring, A.dtype, pass_name, variant)
            grad = as_operand(zeros_like_kind(target_op, target_op.shape, A.dtype), target)
            memory = _Memory(library.backend, _host_backend(library.backend))
            values = {"M": m, "N": n, "K": kk, "lda": lda, "ldb": ldb, "ldgc": ldgc, "ldk": ldk, "batch": batch}
            values.update(ldga=kk, ldgb=n, batch_stride_grad_C=sg, batch_stride_Kstar=sk)
            values.update(batch_stride_A=sa if batch_a else 0, batch_stride_B=sb if batch_b else 0)
            values.update(batch_stride_grad_A=m * kk if batch_a else 0, batch_stride_grad_B=kk * n if batch_b else 0)
            try:
                values["grad_C"] = memory.pointer(G, "grad_c")
                values["Kstar"] = memory.pointer(Kop, "k")
                values["A"] = memory.pointer(A, "a")
                values["B"] = memory.pointer(B, "b")
                values[target] = memory.pointer(grad, target, result=True, zeroed=True)
                launcher(*[values[p] for p in launcher.params], stream=_stream(stream, A))
            finally:
                memory.finish()
            grads.append(grad.obj)
        return grads[0], grads[1]


# --- the module's functions: the default library's handle -------------------------

    # --- packed bool ---------------------------------------------------------

    def matmul_packed(
        self, pa: Any, pb: Any, semiring: str = "andor", *, packed: bool = False, out: Any = None, stream: Any = None
    ) -> Any:
        """``A (x) B`` for ``pa = pack_bool(A, 1)`` and ``pb = pack_bool(B, 0)``: a
        bool array, or with ``packed=True`` the result packed along its rows, ready
        to be the next left operand (``R = matmul_packed(R, pa_b, packed=True)``)."""
        c = self._packed_product("forward", pa, pb, semiring, out, None, stream)[0]
        return pack_bool(c, 1) if packed else c

    def matmul_packed_argmax(
        self, pa: Any, pb: Any, semiring: str = "andor", *, out: Any = None, k_out: Any = None, stream: Any = None
    ) -> tuple[Any, Any]:
        """``(C, k)`` for packed operands: k is the first k with A[i,k] and B[k,j], or -1."""
        return self._packed_product("argmax", pa, pb, semiring, out, k_out, stream)

    def _packs(self, a: Any, b: Any, semiring: str) -> bool:
        """Whether matmul() multiplies packed: 2-D NumPy bool operands with at
        least PACK_MIN_K values of k, under a semiring with a packed kernel.
        Packing is NumPy work on the host, so tensors and device arrays (and
        batches) take the byte kernels."""
        # Cheapest first: this runs on every matmul() call.
        packable = self._packable.get(semiring) if isinstance(semiring, str) else False
        if packable is None:
            kernels = self.library.index["kernels"].values()
            packable = self._packable[semiring] = any(
                e["semiring"] == semiring and e["variant"] == "packed" and e["pass"] == "forward" for e in kernels
            )
        if not packable:
            return False
        numpy = sys.modules.get("numpy")
        if numpy is None or type(a) is not numpy.ndarray or type(b) is not numpy.ndarray:
            return False
        if a.dtype.kind != "b" or b.dtype.kind != "b" or a.ndim != 2 or b.ndim != 2:
            return False
        return a.shape[1] >= PACK_MIN_K and a.shape[1] == b.shape[0]

    def _packed_product(
        self, pass_name: str, pa: Any, pb: Any, semiring: str, out: Any, k_out: Any, stream: Any
    ) -> tuple[Any, Any]:
        from aotc.tropical._packed import PackedBool

        for p, name, axis in ((pa, "pa", 1), (pb, "pb", 0)):
            if not isinstance(p, PackedBool) or p.axis != axis:
                side = "pack_bool(A, 1), packed along each row" if axis == 1 else "pack_bool(B, 0), packed along each column"
                msg = f"{name}: expected {side}"
                raise ArgumentError(msg)
        (m, k), (k2, n) = pa.shape, pb.shape
        if k2 != k:
            msg = f"pb: shape {pb.shape} does not fit pa's {pa.shape}: A has {k} columns, B has {k2} rows"
            raise ArgumentError(msg)
        library = self.library
        _semiring(library, semiring)
        launcher, pick = self._plan(semiring, "bool", pass_name, "packed")
        A, B = as_operand(pa.words, "pa"), as_operand(pb.words, "pb")
        C = _output(out, "out", A, (m, n), "bool")
        K_op = _output(k_out, "k_out", A, (m, n), "i32") if pass_name == "argmax" else None
        sizes = (m, n, k, pa.words.shape[1], pb.words.shape[1], n, n, 0, 0, 0, 0, 0)
        memory = _Memory(library.backend, _host_backend(library.backend))
        try:
            pointers = (
                memory.pointer(A, "pa"), memory.pointer(B, "pb"), memory.pointer(C, "out", result=True),
                memory.pointer(K_op, "k_out", result=True) if K_op is not None else 0,
            )  # fmt: skip
            launcher(*pick(pointers + sizes), stream=_stream(stream, A))
        finally:
            memory.finish()
        return C.obj, (K_op.obj if K_op is not None else None)


def matmul(a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, stream: Any = None) -> Any:
    """``C = A (x) B`` under ``semiring``; see the module docstring."""
    return (_shared["api"] or _api()).matmul(a, b, semiring, out=out, stream=stream)


def matmul_argmax(
    a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, k_out: Any = None, stream: Any = None
) -> tuple[Any, Any]:
    """``(C, k)``: the product and, per element, the k of its best term (ties
    to the smallest k; -1 where no term beats the semiring zero)."""
    return (_shared["api"] or _api()).matmul_argmax(a, b, semiring, out=out, k_out=k_out, stream=stream)


def matmul_backward(grad_c: Any, k: Any, a: Any, b: Any, semiring: str = "maxplus", *, stream: Any = None) -> tuple[Any, Any]:
    """``(grad_a, grad_b)`` from ``grad_c`` and the ``k`` that ``matmul_argmax``
    returned; see ``Tropical.matmul_backward``."""
    return (_shared["api"] or _api()).matmul_backward(grad_c, k, a, b, semiring, stream=stream)


def matmul_packed(pa: Any, pb: Any, semiring: str = "andor", *, packed: bool = False, out: Any = None, stream: Any = None) -> Any:
    """Packed bool product; see ``Tropical.matmul_packed``."""
    return (_shared["api"] or _api()).matmul_packed(pa, pb, semiring, packed=packed, out=out, stream=stream)


def matmul_packed_argmax(
    pa: Any, pb: Any, semiring: str = "andor", *, out: Any = None, k_out: Any = None, stream: Any = None
) -> tuple[Any, Any]:
    """``(C, k)`` for packed operands; see ``Tropical.matmul_packed_argmax``."""
    return (_shared["api"] or _api()).matmul_packed_argmax(pa, pb, semiring, out=out, k_out=k_out, stream=stream)


def pack_bool(a: Any, axis: int = 1) -> Any:
    """``a`` (a 2-D NumPy bool array) packed 32 values to a uint32 word along
    ``axis``: 1 for a left operand (each row), 0 for a right one (each column).
    Returns a ``PackedBool``; its ``unpack()`` gives the bool matrix back."""
    from aotc.tropical._packed import pack_bool as pack

    return pack(a, axis)


def __getattr__(name: str) -> Any:
    if name == "PackedBool":  # imported on first use, like NumPy itself
        from aotc.tropical._packed import PackedBool

        return PackedBool
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
