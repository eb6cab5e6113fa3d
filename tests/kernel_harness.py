"""Run one tropical kernel through the loader and check it against the reference.

Used by the emulator's differential tests and by the GPU suite: the same code
drives any backend. Outputs are poisoned before each launch and surrounded by
guard bands, so a kernel that skips an element or writes past its array fails.
On host memory the guard bands are poisoned for AddressSanitizer, so the
emulator's memory check (AOTC_EMULATOR_CHECK=memory) sees a read of them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aotc import reference
from aotc.runtime.emulator.checks import poison, unpoison

NUMPY_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_}
GUARD = 64  # bytes of guard band on each side of an output
GUARD_BYTE = 0xA5


@dataclass(frozen=True)
class Case:
    """One launch: sizes, and which operands carry a batch axis."""

    m: int
    n: int
    k: int
    batch: int = 0  # 0: not batched
    a_batched: bool = True
    b_batched: bool = True
    # Inputs start one element past an aligned address: vector loads must fall back.
    misaligned: bool = False
    # "salted": random values salted with specials. "plain": only values that
    # plain tiles fold (see plain_values), with a row of A and a column of B
    # all the zero. "slab": the same, but in A's first 32 rows each value no
    # plain tile may take gets a k slab of its own, [8 + 16i, 16 + 16i), with
    # plain slabs between: with 8-deep k tiles, plain and exact tiles
    # alternate in one output, and blocks of rows with and without differ.
    # "pairs": the slabs again, plus row 4 of A and column 6 of B holding the
    # zero but for each slab's value, so some outputs are decided by the terms
    # of those values, with each other too. Counting kernels get these values
    # with counts that include -0 (a sign a plain fold must keep). For bool
    # there is "bytes": sparse true values whose bytes are 1, 2, 4 or 0x80, so
    # that many outputs hang on one pair of true bytes with no bit in common.
    pattern: str = "salted"

    @property
    def id(self) -> str:
        text = f"{self.m}x{self.n}x{self.k}{'-misaligned' if self.misaligned else ''}"
        if self.pattern != "salted":
            text += f"-{self.pattern}"
        if self.batch:
            text += f"-b{self.batch}{'' if self.a_batched else '-bcastA'}{'' if self.b_batched else '-bcastB'}"
        return text


class DeviceArrays:
    """Host arrays mirrored on the backend, with guard bands around outputs."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.pointers: list[int] = []
        self.sizes: dict[int, int] = {}  # guarded pointer -> array bytes
        self.host = getattr(backend, "memory", "") == "host"

    def _guards(self, pointer: int, poisoned: bool) -> None:
        if self.host:
            mark = poison if poisoned else unpoison
            mark(pointer - GUARD, GUARD)
            mark(pointer + self.sizes[pointer], GUARD)

    def upload(self, array: np.ndarray, *, offset: int = 0) -> int:
        """Copy ``array`` to the device, ``offset`` bytes past an aligned address."""
        array = np.ascontiguousarray(array)
        pointer = self.backend.alloc(array.nbytes + offset + 2 * GUARD)
        self.pointers.append(pointer)
        self.backend.copy_to_device(pointer, np.full(array.nbytes + offset + 2 * GUARD, GUARD_BYTE, np.uint8))
        self.backend.copy_to_device(pointer + GUARD + offset, array)
        self.sizes[pointer + GUARD + offset] = array.nbytes
        self._guards(pointer + GUARD + offset, poisoned=True)
        return pointer + GUARD + offset

    def download(self, pointer: int, like: np.ndarray) -> np.ndarray:
        raw = np.empty(like.nbytes + 2 * GUARD, np.uint8)
        self._guards(pointer, poisoned=False)
        self.backend.copy_to_host(raw, pointer - GUARD)
        self._guards(pointer, poisoned=True)
        guards = np.concatenate([raw[:GUARD], raw[-GUARD:]])
        assert (guards == GUARD_BYTE).all(), "the kernel wrote outside its output array"
        return raw[GUARD:-GUARD].view(like.dtype).reshape(like.shape).copy()

    def free(self) -> None:
        for pointer in self.sizes:
            self._guards(pointer, poisoned=False)
        for pointer in self.pointers:
            self.backend.free(pointer)


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Random inputs salted with the values that break kernels: ties, infinities,
    NaN, integer extremes, and negatives (which matter under max-times)."""
    if dtype == "bool":
        return rng.random(shape) < 0.3
    np_type = NUMPY_DTYPES[dtype]
    # Small integers make ties common, and so exercise the smallest-k rule.
    values = rng.integers(-6, 7, size=shape).astype(np_type)
    if np.issubdtype(np_type, np.floating):
        values += rng.choice(np.array([0, 0.5, 0.25], dtype=np_type), size=shape)
        specials = np.array([np.inf, -np.inf, np.nan], dtype=np_type)
    else:
        info = np.iinfo(np_type)
        specials = np.array([info.min, info.max, info.min + 1, info.max - 1], dtype=np_type)
    if values.size >= 8:
        flat = values.reshape(-1)
        picks = rng.choice(flat.size, size=max(1, flat.size // 40), replace=False)
        flat[picks] = rng.choice(specials, size=picks.size)
    return values


def plain_values(semiring: reference.Semiring, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Values a plain tile may fold for this semiring and dtype, and values just
    past those bounds, per the rules in docs/design.md ("Plain tiles")."""
    np_type = NUMPY_DTYPES[dtype]
    small = np.arange(-6, 7).astype(np_type)
    if np.issubdtype(np_type, np.floating):
        big = np.finfo(np_type).max / 2  # sums and products of these overflow to inf
        nan, inf = np_type(np.nan), np_type(np.inf)
        if semiring.mul == "add":
            zero = -inf if semiring.add == "max" else inf
            return np.array([*small, 0.5, -0.25, big, -big, zero], np_type), np.array([nan, -zero], np_type)
        if semiring.mul == "mul":
            return np.array([*small, 0.5, -0.25, big, -big, -0.0], np_type), np.array([nan, inf, -inf], np_type)
        return np.array([*small, inf, -inf], np_type), np.array([nan], np_type)
    info = np.iinfo(np_type)
    bits = info.bits
    if semiring.mul == "add":
        r = 1 << (bits - 4)
        zero = info.min if semiring.add == "max" else info.max
        inside = [-r, r - 1, -r + 1, zero]
        # Past the bounds: the other extreme, and the sentinel values themselves.
        outside = [r, -r - 1, info.max if zero == info.min else info.min, -3 * r, 3 * r, 1 << (bits - 2)]
    elif semiring.mul == "mul":
        r = 1 << (bits // 2 - 1)
        inside, outside = [-r, r - 1, -r + 1], [r, -r - 1, info.min, info.max, 1 << (bits // 2)]
    else:
        inside, outside = [info.min, info.max, info.min + 1], []
    return np.array([*small, *inside], np_type), np.array(outside or [info.max], np_type)


def _patterned(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str, semiring: reference.Semiring, pattern: str, operand: str
) -> np.ndarray:
    inside, outside = plain_values(semiring, dtype)
    values = rng.choice(inside, size=shape)
    zero = reference.matmul(np.empty((1, 0), values.dtype), np.empty((0, 1), values.dtype), semiring)[0, 0]
    # A row of A and a column of B that are all the zero: every term of some
    # outputs has the zero, and plain folds must still give the zero (and -1).
    if operand == "A" and shape[-2] > 3:
        values[..., 3, :] = zero
    if operand == "B" and shape[-1] > 5:
        values[..., :, 5] = zero
    if pattern not in ("slab", "pairs"):
        return values
    depth = shape[-1] if operand == "A" else shape[-2]
    assert depth >= 16 * len(outside), f"K = {depth} leaves no slab for some of {outside}"
    slabs = [slice(8 + 16 * i, 16 + 16 * i) for i in range(len(outside))]
    outside = np.random.default_rng(depth).permutation(outside)  # A and B agree; cases differ in which comes first
    if operand == "A":
        for ks, value in zip(slabs, outside):
            slab = values[..., :32, ks]
            slab[rng.random(slab.shape) < 0.1] = value
    if pattern == "pairs" and shape[-2] > 4 and shape[-1] > 6:
        line = values[..., 4, :] if operand == "A" else values[..., :, 6]  # a view, along k
        line[...] = zero
        for ks, value in zip(slabs, outside):
            line[..., ks] = value
    return values


def reference_semiring(index: dict[str, Any], name: str) -> reference.Semiring:
    """The reference's semiring for the index's declaration of ``name``, so a
    semiring a manifest adds is checked with its own operations."""
    spec = index["semirings"][name]
    return reference.semiring_from_ops(
        spec["add"], spec["mul"], spec["zero"], spec["one"], name=name, counting=spec.get("counting", False)
    )


def operands(case: Case, dtype: str, semiring: str | reference.Semiring, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(semiring, str):
        semiring = reference.SEMIRINGS[semiring]
    rng = np.random.default_rng(seed)
    a_shape = ((case.batch,) if case.batch and case.a_batched else ()) + (case.m, case.k)
    b_shape = ((case.batch,) if case.batch and case.b_batched else ()) + (case.k, case.n)
    if case.pattern == "bytes":
        assert dtype == "bool", "pattern 'bytes' is for bool kernels"
        return _bytes(rng, a_shape), _bytes(rng, b_shape)
    if case.pattern != "salted" and semiring.counting:
        # The values of the semiring's (+) and (x) without counts, then counts.
        values = reference.semiring_from_ops(semiring.add, semiring.mul, semiring.zero, semiring.one)
        counts = np.array([1, 2, 3, -1, -0.0, 0.5], NUMPY_DTYPES[dtype])
        return (
            np.stack([_patterned(rng, a_shape, dtype, values, case.pattern, "A"), rng.choice(counts, a_shape)], -1),
            np.stack([_patterned(rng, b_shape, dtype, values, case.pattern, "B"), rng.choice(counts, b_shape)], -1),
        )
    if case.pattern != "salted":
        assert dtype != "bool", f"pattern {case.pattern!r} is for plain-tile kernels"
        return (
            _patterned(rng, a_shape, dtype, semiring, case.pattern, "A"),
            _patterned(rng, b_shape, dtype, semiring, case.pattern, "B"),
        )
    if semiring.counting:
        a = np.stack([_values(rng, a_shape, dtype), rng.integers(1, 4, a_shape).astype(NUMPY_DTYPES[dtype])], -1)
        b = np.stack([_values(rng, b_shape, dtype), rng.integers(1, 4, b_shape).astype(NUMPY_DTYPES[dtype])], -1)
        return a, b
    return _values(rng, a_shape, dtype), _values(rng, b_shape, dtype)


def _bytes(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Bools whose true bytes are not all 1: NumPy (and the reference) count any
    nonzero byte as true; a kernel that folds raw bytes with & does not."""
    raw = np.where(rng.random(shape) < 0.15, rng.choice(np.array([1, 2, 4, 0x80], np.uint8), shape), 0)
    return raw.astype(np.uint8).view(np.bool_)


def _poisoned(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = 0x5A  # no kernel computes this pattern by accident
    return out


def assert_same(got: np.ndarray, want: np.ndarray, semiring: reference.Semiring) -> None:
    """Equal values; for counting, counts also agree in sign (a -0 count stays -0)."""
    np.testing.assert_array_equal(got, want)
    if semiring.counting:
        numbers = ~np.isnan(want[..., 1])  # a NaN's sign is the hardware's choice
        signs = np.signbit(got[..., 1][numbers]), np.signbit(want[..., 1][numbers])
        np.testing.assert_array_equal(*signs, err_msg="count signs")


def _run_packed(launcher: Any, memory: DeviceArrays, a: np.ndarray, b: np.ndarray, case: Case, pass_name: str, semiring: reference.Semiring) -> None:
    """The packed variant: A packed along k per row, B along k per column."""
    from aotc.tropical._packed import pack_bool

    pa, pb = pack_bool(a, 1), pack_bool(b, 0)
    values = {"M": case.m, "N": case.n, "K": case.k, "ldc": case.n, "ldk": case.n, "block_y0": 0}  # one launch: its parts start at 0
    values.update(lda=pa.words.shape[1], ldb=pb.words.shape[1], A=memory.upload(pa.words), B=memory.upload(pb.words))
    c_like, k_like = np.empty((case.m, case.n), np.bool_), np.empty((case.m, case.n), np.int32)
    values["C"], values["Kstar"] = memory.upload(_poisoned(c_like.shape, np.bool_)), memory.upload(_poisoned(k_like.shape, np.int32))
    launcher(*(values[p] for p in launcher.params))
    memory.backend.synchronize()
    c = memory.download(values["C"], c_like)
    assert (c.view(np.uint8) <= 1).all(), "bools are written as bytes 0 and 1"
    want_c, want_k = reference.matmul_argmax(a, b, semiring)
    np.testing.assert_array_equal(c, want_c)
    if pass_name == "argmax":
        np.testing.assert_array_equal(memory.download(values["Kstar"], k_like), want_k)


def kernel_named(index: Any, **axes: str) -> str:
    """The one kernel of ``index`` whose axes are these (``pass_`` for pass)."""
    want = {key.rstrip("_"): value for key, value in axes.items()}
    found = [name for name, kernel in index.kernels.items() if {a: kernel.axes.get(a) for a in want} == want]
    assert len(found) == 1, f"{len(found)} kernels have the axes {want}: {found}"
    return found[0]


def run_and_check(library: Any, entry_kind: tuple[str, str, str, str], case: Case, seed: int = 0) -> None:
    """Launch the kernel (semiring, dtype, pass, variant) on ``case``; assert it matches."""
    name, dtype, pass_name, variant = entry_kind
    launcher = library.kernel(kernel_named(library.index, semiring=name, dtype=dtype, pass_=pass_name, variant=variant))
    backend = library.backend
    semiring = reference_semiring(library.index, name)
    a, b = operands(case, dtype, semiring, seed)
    lead = (case.batch,) if case.batch else ()
    pair = (2,) if semiring.counting else ()
    c_like = np.empty((*lead, case.m, case.n, *pair), NUMPY_DTYPES[dtype])
    k_like = np.empty((*lead, case.m, case.n), np.int32)
    memory = DeviceArrays(backend)
    if variant == "packed":
        try:
            _run_packed(launcher, memory, a, b, case, pass_name, semiring)
        finally:
            memory.free()
        return
    try:
        values: dict[str, int] = {"M": case.m, "N": case.n, "K": case.k, "batch": case.batch, "block_y0": 0, "block_z0": 0}  # one launch: no split
        # Leading dimensions count elements, or (value, count) pairs for counting.
        values.update(lda=case.k, ldb=case.n, ldc=case.n, ldk=case.n, ldgc=case.n, ldga=case.k, ldgb=case.n)
        strides = {"A": case.m * case.k, "B": case.k * case.n, "C": case.m * case.n, "Kstar": case.m * case.n}
        strides.update(grad_C=strides["C"], grad_A=strides["A"], grad_B=strides["B"])
        if not case.a_batched:
            strides["A"] = strides["grad_A"] = 0
        if not case.b_batched:
            strides["B"] = strides["grad_B"] = 0
        values.update({f"batch_stride_{name}": s for name, s in strides.items()})
        offset = a.itemsize * (2 if semiring.counting else 1) if case.misaligned else 0
        values["A"], values["B"] = memory.upload(a, offset=offset), memory.upload(b, offset=offset)

        if pass_name in ("forward", "argmax"):
            values["C"] = memory.upload(_poisoned(c_like.shape, c_like.dtype))
            values["Kstar"] = memory.upload(_poisoned(k_like.shape, np.int32))
            launcher(*(values[p] for p in launcher.params))
            backend.synchronize()
            c = memory.download(values["C"], c_like)
            if pass_name == "forward":
                assert_same(c, reference.matmul(a, b, semiring), semiring)
            else:
                want_c, want_k = reference.matmul_argmax(a, b, semiring)
                assert_same(c, want_c, semiring)
                np.testing.assert_array_equal(memory.download(values["Kstar"], k_like), want_k)
            return

        # Backward: k* from the reference, accumulated into zeroed gradients.
        _, kstar = reference.matmul_argmax(a, b, semiring)
        grad_c = np.random.default_rng(seed + 1).standard_normal(c_like.shape).astype(c_like.dtype)
        values["grad_C"], values["Kstar"] = memory.upload(grad_c), memory.upload(kstar)
        target, like = ("grad_A", a) if pass_name == "backward_a" else ("grad_B", b)
        values[target] = memory.upload(np.zeros_like(like))
        launcher(*(values[p] for p in launcher.params))
        backend.synchronize()
        got = memory.download(values[target], like)
        fn = reference.matmul_backward_a if pass_name == "backward_a" else reference.matmul_backward_b
        want = fn(grad_c, kstar, a, b, semiring)
        # Atomic accumulation order differs from the reference's: compare closely, not bitwise.
        tolerance = 1e-5 if dtype == "f32" else 1e-12
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    finally:
        memory.free()
