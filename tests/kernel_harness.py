"""Run one tropical kernel through the loader and check it against the reference.

Used by the emulator's differential tests and by the GPU suite: the same code
drives any backend. Outputs are poisoned before each launch and surrounded by
guard bands, so a kernel that skips an element or writes past its array fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aotc import reference

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

    @property
    def id(self) -> str:
        text = f"{self.m}x{self.n}x{self.k}{'-misaligned' if self.misaligned else ''}"
        if self.batch:
            text += f"-b{self.batch}{'' if self.a_batched else '-bcastA'}{'' if self.b_batched else '-bcastB'}"
        return text


class DeviceArrays:
    """Host arrays mirrored on the backend, with guard bands around outputs."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.pointers: list[int] = []

    def upload(self, array: np.ndarray, *, offset: int = 0) -> int:
        """Copy ``array`` to the device, ``offset`` bytes past an aligned address."""
        array = np.ascontiguousarray(array)
        pointer = self.backend.alloc(array.nbytes + offset + 2 * GUARD)
        self.pointers.append(pointer)
        self.backend.copy_to_device(pointer, np.full(array.nbytes + offset + 2 * GUARD, GUARD_BYTE, np.uint8))
        self.backend.copy_to_device(pointer + GUARD + offset, array)
        return pointer + GUARD + offset

    def download(self, pointer: int, like: np.ndarray) -> np.ndarray:
        raw = np.empty(like.nbytes + 2 * GUARD, np.uint8)
        self.backend.copy_to_host(raw, pointer - GUARD)
        guards = np.concatenate([raw[:GUARD], raw[-GUARD:]])
        assert (guards == GUARD_BYTE).all(), "the kernel wrote outside its output array"
        return raw[GUARD:-GUARD].view(like.dtype).reshape(like.shape).copy()

    def free(self) -> None:
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


def reference_semiring(index: dict[str, Any], name: str) -> reference.Semiring:
    """The reference's semiring for the index's declaration of ``name``, so a
    semiring a manifest adds is checked with its own operations."""
    spec = index["semirings"][name]
    return reference.semiring_from_ops(
        spec["add"], spec["mul"], spec["zero"], spec["one"], name=name, counting=spec.get("counting", False)
    )


def operands(case: Case, dtype: str, counting: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a_shape = ((case.batch,) if case.batch and case.a_batched else ()) + (case.m, case.k)
    b_shape = ((case.batch,) if case.batch and case.b_batched else ()) + (case.k, case.n)
    if counting:
        a = np.stack([_values(rng, a_shape, dtype), rng.integers(1, 4, a_shape).astype(NUMPY_DTYPES[dtype])], -1)
        b = np.stack([_values(rng, b_shape, dtype), rng.integers(1, 4, b_shape).astype(NUMPY_DTYPES[dtype])], -1)
        return a, b
    return _values(rng, a_shape, dtype), _values(rng, b_shape, dtype)


def _poisoned(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = 0x5A  # no kernel computes this pattern by accident
    return out


def run_and_check(library: Any, entry_kind: tuple[str, str, str, str], case: Case, seed: int = 0) -> None:
    """Launch the kernel (semiring, dtype, pass, variant) on ``case``; assert it matches."""
    name, dtype, pass_name, variant = entry_kind
    launcher = library.find(name, dtype, pass_name, variant)
    backend = library.backend
    semiring = reference_semiring(library.index, name)
    a, b = operands(case, dtype, semiring.counting, seed)
    lead = (case.batch,) if case.batch else ()
    pair = (2,) if semiring.counting else ()
    c_like = np.empty(lead + (case.m, case.n) + pair, NUMPY_DTYPES[dtype])
    k_like = np.empty(lead + (case.m, case.n), np.int32)
    memory = DeviceArrays(backend)
    try:
        values: dict[str, int] = {"M": case.m, "N": case.n, "K": case.k, "batch": case.batch}
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
                np.testing.assert_array_equal(c, reference.matmul(a, b, semiring))
            else:
                want_c, want_k = reference.matmul_argmax(a, b, semiring)
                np.testing.assert_array_equal(c, want_c)
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
