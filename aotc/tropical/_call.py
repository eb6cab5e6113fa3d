"""One product, start to end: operands -> call plan -> launch.

``Tropical`` is the API over one library. A call reads its arrays once
(``aotc.arrays.operands``), checks them (``_operands`` for the product's
shapes and sizes, ``aotc.arrays.placement`` for devices, the stream and the
results), takes the launcher for its kind of product (with its argument
order, prepared once per (semiring, dtype, pass, variant)) and launches,
through staged copies where a GPU backend meets host arrays
(``aotc.arrays.memory``). Empty products launch nothing: M, N or the batch 0
gives an empty result, K = 0 the semiring zero (argmax -1).

A ``matmul`` of operands used in place then leaves a call plan
(``_plan_keeper``): NumPy arrays (``_plan``), or tensors inside the aotc:: ops
(``_torch_plan``). A repeat with operands alike in shape, strides, dtype (and
a tensor's device) is a key lookup, the per-object checks and a launch.
"""

from __future__ import annotations

import sys

from aotc.arrays.memory import Memory, on_host_memory, stageable
from aotc.arrays.operands import Operand, as_operand, fill
from aotc.arrays.placement import device_of, output, same, stream_handle
from aotc.arrays.streams import fill_on, hold_until_done, wait_for_producers
from aotc.errors import ArgumentError, ArgumentTypeError, echo
from aotc.tropical._backward import backward_product
from aotc.tropical._operands import GRID_YZ_MAX, check_batch, check_grid, pair, semiring_spec
from aotc.tropical._plan_keeper import keep_argmax_plan, keep_backward_plan, keep_plan
from aotc.tropical._jax_route import jax_calls, to_jax
from aotc.tropical._torch_route import inside_op, to_torch_op

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

    from aotc.tropical._plan import ArgmaxEntry, MatmulEntry, Plan
    from aotc.tropical._torch_plan import OpEntry

__all__ = ["PACK_MIN_K", "Tropical"]


# The shortest k for which matmul() packs 2-D NumPy bool operands itself: a
# word folds 32 terms, and packing reads each operand once, so a product
# whose k spans two words is already cheaper packed (see Tropical._packs).
PACK_MIN_K = 64

# The product kernels' parameters, in the order the call path lists them; a
# plan picks its kernel's subset, in the kernel's order, with one itemgetter.
_ARGUMENTS = (
    "A", "B", "C", "Kstar", "M", "N", "K", "lda", "ldb", "ldc", "ldk", "batch",
    "batch_stride_A", "batch_stride_B", "batch_stride_C", "batch_stride_Kstar",
)  # fmt: skip


_torch_calls: Any = None


def torch_calls() -> Any:
    """``aotc.tropical._torch``, imported on first use (it imports torch and
    registers the ops). Kept here: an import statement per call costs more
    than the rest of the route to the ops."""
    global _torch_calls  # noqa: PLW0603 - imported once per process
    if _torch_calls is None:
        from aotc.tropical import _torch

        _torch_calls = _torch
    return _torch_calls


def _zero(spec: dict[str, Any], dtype: str) -> Any:
    """The semiring's zero in ``dtype``, as K = 0 results hold it ((zero, 0) for counting)."""
    word = str(spec["zero"])
    if dtype == "bool":
        value: Any = word == "true"
    elif dtype in ("i32", "i64"):
        bits = 32 if dtype == "i32" else 64
        value = {"-inf": -(2 ** (bits - 1)), "+inf": 2 ** (bits - 1) - 1}.get(word) or int(float(word))
    else:
        value = float(word)
    return (value, 0.0) if spec.get("counting") else value


class Tropical:
    """The tropical API over one kernel library: ``aotc.tropical.over(lib)``.
    Its methods are the module's functions; it keeps the call plans it
    prepared, so each kind of product is looked up once."""

    def __init__(self, library: Any) -> None:
        self.library = library
        # (semiring, dtype, pass, variant, device) -> (launcher, picks its arguments from _ARGUMENTS' order)
        self._prepared: dict[tuple[str, str, str, str, int], tuple[Any, Any]] = {}
        self._counting: dict[str, bool] = {}  # semiring name -> whether its elements are (value, count) pairs
        self._packable: dict[str, bool] = {}  # semiring name -> whether the library has its packed forward kernel
        # matmul's call plans, keyed as matmul() spells the key; see _plan.
        self._call_plans: dict[tuple[Any, ...], Plan] = {}
        # matmul(a, b, semiring, out, stream): the full path until a plan is made,
        # then the plan lookups in front of it (_matmul_entry.planned_matmul).
        self._matmul: MatmulEntry = self._full_matmul
        self._argmax_plans: dict[tuple[Any, ...], Any] = {}  # matmul_argmax's, the same way
        self._matmul_argmax: ArgmaxEntry = self._full_matmul_argmax
        # The same for tensors, as the aotc:: ops' kernels call them (_torch_plan).
        self._op_plans: dict[tuple[Any, ...], Plan] = {}
        self.op_matmul: OpEntry = self._full_op_matmul
        self._op_argmax_plans: dict[tuple[Any, ...], Any] = {}
        self.op_matmul_argmax: Any = self._full_op_argmax
        self._op_backward_plans: dict[tuple[Any, ...], Any] = {}
        self.op_matmul_backward: Any = self._full_op_backward

    def __repr__(self) -> str:
        return f"<aotc.tropical.Tropical over library {getattr(self.library, 'name', self.library)!r}>"

    def semirings(self) -> tuple[str, ...]:
        """The semiring names this library has kernels for."""
        return tuple(self.library.index["semirings"])

    # --- the public methods ------------------------------------------------------

    def matmul(self, a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, stream: Any = None) -> Any:
        """``C = A (x) B`` under ``semiring``; see ``aotc.tropical``."""
        return self._matmul(a, b, semiring, out, stream)

    def _full_matmul(self, a: Any, b: Any, semiring: Any, out: Any, stream: Any) -> Any:
        """matmul, deciding everything from the operands (no plan, or its checks did not pass)."""
        if to_torch_op((a, b, out), semiring):
            return torch_calls().matmul(self, a, b, semiring, out, stream)
        if to_jax((a, b, out)):
            return jax_calls().matmul(self, a, b, semiring, out, stream)
        if self._packs(a, b, semiring):
            from aotc.tropical._packed import pack_bool

            return self._packed_product("forward", pack_bool(a, 1), pack_bool(b, 0), semiring, out, None, stream)[0]
        launched: list[Any] | None = [] if stream is None else None
        c = self._product("forward", a, b, semiring, out, None, stream, launched)[0]
        if launched:
            keep_plan(self, a, b, semiring, out, c, launched[0])
        return c

    # --- the aotc:: ops' kernels: the product itself, not the op again ------------

    def _full_op_matmul(self, a: Any, b: Any, semiring: str, out: Any) -> Any:
        return _as_op_kernel(self._full_matmul, a, b, semiring, out, None)

    def _full_op_argmax(self, a: Any, b: Any, semiring: str) -> tuple[Any, Any]:
        launched: list[Any] = []
        c, k = _as_op_kernel(self._product, "argmax", a, b, semiring, None, None, None, launched)
        if launched:
            keep_argmax_plan(self, a, b, semiring, (None, None), (c, k), launched[0])
        return c, k

    def _full_op_backward(self, grad_c: Any, k: Any, a: Any, b: Any, semiring: str) -> tuple[Any, Any]:
        launched: list[Any] = []
        grads = _as_op_kernel(backward_product, self, grad_c, k, a, b, semiring, None, launched)
        if launched:
            keep_backward_plan(self, grad_c, k, a, b, semiring, grads, launched)
        return grads

    # --- the other public methods ---------------------------------------------------

    def matmul_argmax(
        self, a: Any, b: Any, semiring: str = "maxplus", *, out: Any = None, k_out: Any = None, stream: Any = None
    ) -> tuple[Any, Any]:
        """``(C, k)``: the product and, per element, the k of its best term (ties
        to the smallest k; -1 where no term beats the semiring zero)."""
        return self._matmul_argmax(a, b, semiring, out, k_out, stream)

    def _full_matmul_argmax(self, a: Any, b: Any, semiring: Any, out: Any, k_out: Any, stream: Any) -> tuple[Any, Any]:
        """matmul_argmax, deciding everything from the operands."""
        if to_torch_op((a, b, out, k_out), semiring):
            return torch_calls().matmul_argmax(self, a, b, semiring, out, k_out, stream)
        if to_jax((a, b, out, k_out)):
            return jax_calls().matmul_argmax(self, a, b, semiring, out, k_out, stream)
        launched: list[Any] | None = [] if stream is None else None
        c, k = self._product("argmax", a, b, semiring, out, k_out, stream, launched)
        if launched:
            keep_argmax_plan(self, a, b, semiring, (out, k_out), (c, k), launched[0])
        return c, k

    def matmul_backward(
        self, grad_c: Any, k: Any, a: Any, b: Any, semiring: str = "maxplus", *, stream: Any = None
    ) -> tuple[Any, Any]:
        """``(grad_a, grad_b)`` from ``grad_c`` and the ``k`` that ``matmul_argmax`` returned.

        max-plus, min-plus: ``grad_a[i, k*] += grad_c[i, j]``, ``grad_b[k*, j] += grad_c[i, j]``;
        max-times multiplies each by the other operand. A 2-D operand that was
        broadcast over a batch gets the sum over the batch.
        """
        if to_torch_op((grad_c, k, a, b), semiring):
            return torch_calls().matmul_backward(self, grad_c, k, a, b, semiring, stream)
        if to_jax((grad_c, k, a, b)):
            return jax_calls().matmul_backward(self, grad_c, k, a, b, semiring, stream)
        return backward_product(self, grad_c, k, a, b, semiring, stream)

    def matmul_packed(
        self, pa: Any, pb: Any, semiring: str = "andor", *, packed: bool = False, out: Any = None, stream: Any = None
    ) -> Any:
        """``A (x) B`` for ``pa = pack_bool(A, 1)`` and ``pb = pack_bool(B, 0)``: a
        bool array, or with ``packed=True`` the result packed along its rows, ready
        to be the next left operand (``R = matmul_packed(R, pa_b, packed=True)``)."""
        if type(packed) is not bool:
            msg = f"packed: expected True or False, got {echo(packed)}"
            raise ArgumentTypeError(msg)
        c = self._packed_product("forward", pa, pb, semiring, out, None, stream)[0]
        if not packed:
            return c
        from aotc.tropical._packed import pack_bool

        return pack_bool(c, 1)

    def matmul_packed_argmax(
        self, pa: Any, pb: Any, semiring: str = "andor", *, out: Any = None, k_out: Any = None, stream: Any = None
    ) -> tuple[Any, Any]:
        """``(C, k)`` for packed operands: k is the first k with A[i,k] and B[k,j], or -1."""
        return self._packed_product("argmax", pa, pb, semiring, out, k_out, stream)

    def preload(self, semirings: Any = None, dtypes: Any = None, device: Any = None) -> tuple[str, ...]:
        """Load the kernels of ``semirings`` and ``dtypes`` (None: all) on ``device``
        (None: the current device) now, so a CUDA graph can capture calls to them."""
        wanted_semirings = None if semirings is None else {semirings} if isinstance(semirings, str) else set(semirings)
        wanted_dtypes = None if dtypes is None else {dtypes} if isinstance(dtypes, str) else set(dtypes)
        for wanted, known, what in ((wanted_semirings, self.semirings(), "semirings"), (wanted_dtypes, None, "dtypes")):
            unknown = sorted(map(str, wanted - set(known))) if wanted is not None and known is not None else []
            if unknown:
                msg = f"{what}: unknown {', '.join(unknown)} (known: {', '.join(known)})"
                raise ArgumentError(msg)
        names = [
            name for name, (semiring, dtype, _, _) in self.library.index.kinds().items()
            if (wanted_semirings is None or semiring in wanted_semirings)
            and (wanted_dtypes is None or dtype in wanted_dtypes)
        ]  # fmt: skip
        return self.library.preload(names, device)

    # --- the call path -----------------------------------------------------------

    def _prepared_launcher(
        self, semiring: str, dtype: str, pass_name: str, variant: str, device: int, stream: Any
    ) -> tuple[Any, Any]:
        """The product kernel's launcher on ``device`` and argument picker, prepared once."""
        key = (semiring, dtype, pass_name, variant, device)
        prepared = self._prepared.get(key)
        if prepared is None:
            from operator import itemgetter

            launcher = self._launcher(semiring, dtype, pass_name, variant, device, stream)
            picker = itemgetter(*(_ARGUMENTS.index(p) for p in launcher.params))
            prepared = self._prepared[key] = (launcher, picker)
        return prepared

    def _launcher(self, semiring: str, dtype: str, pass_name: str, variant: str, device: int, stream: Any) -> Any:
        try:
            return self.library.find(semiring, dtype, pass_name, variant, device=device, stream=stream)
        except KeyError:
            kinds = self.library.index.kinds().values()
            have = sorted({d for s, d, p, _ in kinds if s == semiring and p == pass_name})
            msg = f"a: no {pass_name} kernel for semiring {semiring!r} and dtype {dtype} (dtypes with one: {', '.join(have) or 'none'})"
            raise ArgumentError(msg) from None

    def _product(
        self, pass_name: str, a: Any, b: Any, semiring: Any, out: Any, k_out: Any, stream: Any, launched: Any = None
    ) -> tuple[Any, Any]:
        """The product; where ``launched`` is a list and the operands were used in
        place as given, it gets the launch bound to these sizes (for a call plan)."""
        counting = self._counting.get(semiring) if type(semiring) is str else None
        if counting is None:
            counting = self._counting[semiring] = bool(semiring_spec(self.library, semiring).get("counting", False))
        A, B = as_operand(a, "a"), as_operand(b, "b")
        device = device_of(A, "a", self.library)
        if B.device != A.device:
            device_of(B, "b", self.library)
        if B.dtype != A.dtype or B.device != A.device:
            same(A, B, "b")
        inputs = ((A, "a"), (B, "b"))  # as given: results must not share their memory
        given_stream, stream = stream, stream_handle(stream, A)
        backend = self.library.backend_on(device)
        host_memory = on_host_memory(backend)
        if host_memory and not A.on_host:
            Memory(backend, host_memory).check(A, "a")  # raises: this backend can't reach it
        if not host_memory:
            A, B = stageable(A, "a"), stageable(B, "b")
        A, B, (batch_a, batch_b, m, k, n, sa, sb, lda, ldb) = pair(A, B, counting)
        batched = batch_a is not None or batch_b is not None
        batch = (batch_a if batch_a is not None else batch_b) or 0
        launcher, pick = self._prepared_launcher(semiring, A.dtype, pass_name, "batched" if batched else "single", device, stream)

        lead = (batch,) if batched else ()
        C = output(out, "out", A, (*lead, m, n, 2) if counting else (*lead, m, n), A.dtype, inputs, self.library, stream)
        K_op = output(k_out, "k_out", A, (*lead, m, n), "i32", (*inputs, (C, "out")), self.library, stream) if pass_name == "argmax" else None
        _order_on(backend, stream, given_stream, (A, B, C, K_op))
        if not (m and n and k and (batch or not batched)):
            return self._empty(C, K_op, semiring, k, backend, stream)
        check_batch(batch)
        sizes = (
            m, n, k, lda, ldb, n, n, batch,
            sa if batch_a is not None else 0, sb if batch_b is not None else 0, m * n, m * n,
        )  # fmt: skip
        if host_memory:
            # Everything is host memory: the operands are used in place.
            args = pick((A.pointer, B.pointer, C.pointer, K_op.pointer if K_op is not None else 0, *sizes))
            if m > GRID_YZ_MAX:
                check_grid(launcher, args)
            launcher(*args, stream=stream)
            if A.on_host or B.on_host or C.on_host:
                backend.stream_synchronize(stream)  # the host reads or reuses them once this returns
            if launched is not None and A.obj is a and B.obj is b:
                _bind(launched, launcher, args, K_op is not None)
            return C.obj, (K_op.obj if K_op is not None else None)
        bind_into = launched if A.obj is a and B.obj is b else None  # used as given, unless staged
        return _launch(launcher, pick, sizes, (A, B, C, K_op), ("a", "b"), Memory(backend, host_memory, stream), stream, m, bind_into)

    def _empty(
        self, C: Operand, K_op: Operand | None, semiring: str, k: int, backend: Any, stream: int
    ) -> tuple[Any, Any]:
        """An empty product's result, without a launch: K = 0 sums no terms, so
        every element is the semiring zero and no k won (device results filled on
        the call's stream, which the host then waits for where the results are host memory)."""
        if k == 0 and 0 not in C.shape:
            zero = _zero(semiring_spec(self.library, semiring), C.dtype)
            for op, value in ((C, zero), (K_op, -1)):
                if op is None:
                    continue
                if op.on_host:
                    fill(op, value)
                else:
                    fill_on(backend, op, value, stream)
        return C.obj, (K_op.obj if K_op is not None else None)

    # --- packed bool -------------------------------------------------------------

    def _packs(self, a: Any, b: Any, semiring: Any) -> bool:
        """Whether matmul() multiplies packed: 2-D NumPy bool operands with at
        least PACK_MIN_K values of k, under a semiring with a packed kernel.
        Packing is NumPy work on the host, so tensors and device arrays (and
        batches) take the byte kernels."""
        # Cheapest first: this runs on every matmul() call.
        packable = self._packable.get(semiring) if type(semiring) is str else False
        if packable is None:
            kinds = self.library.index.kinds().values()  # what the index's lines say; find() checks the kernel
            packable = self._packable[semiring] = any(
                s == semiring and v == "packed" and p == "forward" for s, _, p, v in kinds
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
        self, pass_name: str, pa: Any, pb: Any, semiring: Any, out: Any, k_out: Any, stream: Any
    ) -> tuple[Any, Any]:
        from aotc.tropical._packed import PackedBool

        for p, name, axis in ((pa, "pa", 1), (pb, "pb", 0)):
            if not isinstance(p, PackedBool) or p.axis != axis:
                side = "pack_bool(A, 1), packed along each row" if axis == 1 else "pack_bool(B, 0), packed along each column"
                msg = f"{name}: expected {side}"
                raise ArgumentTypeError(msg) if not isinstance(p, PackedBool) else ArgumentError(msg)
        (m, k), (k2, n) = pa.shape, pb.shape
        if k2 != k:
            msg = f"pb: shape {pb.shape} does not fit pa's {pa.shape}: A has {k} columns, B has {k2} rows"
            raise ArgumentError(msg)
        semiring_spec(self.library, semiring)
        A, B = as_operand(pa.words, "pa"), as_operand(pb.words, "pb")
        device = device_of(A, "pa", self.library)
        inputs = ((A, "pa"), (B, "pb"))
        given_stream, stream = stream, stream_handle(stream, A)
        launcher, pick = self._prepared_launcher(semiring, "bool", pass_name, "packed", device, stream)
        C = output(out, "out", A, (m, n), "bool", inputs, self.library, stream)
        K_op = output(k_out, "k_out", A, (m, n), "i32", (*inputs, (C, "out")), self.library, stream) if pass_name == "argmax" else None
        backend = self.library.backend_on(device)
        _order_on(backend, stream, given_stream, (A, B, C, K_op))
        if not (m and n and k):
            return self._empty(C, K_op, semiring, k, backend, stream)
        sizes = (m, n, k, pa.words.shape[1], pb.words.shape[1], n, n, 0, 0, 0, 0, 0)
        return _launch(launcher, pick, sizes, (A, B, C, K_op), ("pa", "pb"), Memory(backend, on_host_memory(backend), stream), stream, m)


def _order_on(backend: Any, stream: int, given_stream: Any, ops: tuple[Any, ...]) -> None:
    """Queue the call's work on ``stream`` after the operands' producers; with a
    stream the caller named, keep PyTorch from reusing its tensors' memory early."""
    wait_for_producers(backend, stream, ops)
    if given_stream is not None:
        hold_until_done(ops, stream)


def _as_op_kernel(call: Any, *args: Any) -> Any:
    """``call(*args)`` marked as an op's kernel (``_torch_route.inside_op``), so
    that tensors reaching the call path run the product instead of the op."""
    inside_op.active = True
    try:
        return call(*args)
    finally:
        inside_op.active = False


def _bind(launched: list[Any], launcher: Any, args: Any, with_k: bool) -> None:
    """Append the launch bound to ``args``' sizes, taking the pointers (A, B, C
    and k* for argmax), where the kernel's parameters lead with them."""
    leading = ("A", "B", "C", "Kstar") if with_k else ("A", "B", "C")
    if tuple(launcher.params[: len(leading)]) == leading:
        bound = launcher.bind(args, len(leading))
        if bound is not None:
            launched.append(bound)


def _launch(
    launcher: Any,
    pick: Any,
    sizes: tuple[int, ...],
    ops: tuple[Any, ...],
    names: tuple[str, str],
    memory: Memory,
    stream: Any,
    m: int,
    bind_into: list[Any] | None = None,
) -> tuple[Any, Any]:
    """One product launch: the operands' pointers (staged by ``memory`` where the
    backend needs it), the arguments in the kernel's order, the grid checked.
    Where nothing was staged, the launch bound to these sizes goes into
    ``bind_into`` (a list; None: not wanted), for a call plan."""
    A, B, C, K_op = ops
    try:
        pointers = (
            memory.pointer(A, names[0]), memory.pointer(B, names[1]), memory.pointer(C, "out", result=True),
            memory.pointer(K_op, "k_out", result=True) if K_op is not None else 0,
        )  # fmt: skip
        args = pick((*pointers, *sizes))  # in _ARGUMENTS' order
        if m > GRID_YZ_MAX:
            check_grid(launcher, args)
        launcher(*args, stream=stream)
    finally:
        memory.finish()
    if bind_into is not None and not memory.staged:
        _bind(bind_into, launcher, args, K_op is not None)
    return C.obj, (K_op.obj if K_op is not None else None)
