"""The exact folds of the product kernels, broken on purpose, must fail on the
emulator; unbroken, they must pass.

Each case puts one pair (a, b) of a value table at one k of each output and
the semiring's zero of A everywhere else, so every output is the term a (x) b
of one pair, and every pair of the table is an output: the boundary sums and
products (exactly at the type's extremes, one past them, the zero on either
side) each decide a result. The pair's k is in a full tile or in the last,
partial one. The float argmax cases fold ties and NaNs in one exact tile, for
the rule that the first best k (and the first NaN) wins.

The folds and why they are exact: docs/design.md ("Exact folds").
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from aotc import reference
from aotc.build.codegen import render_kernel
from aotc.build.manifest import load_manifest
from aotc.runtime.cache import DiskCache
from aotc.runtime.emulator.backend import EmulatorBackend
from conftest import REPO
from kernel_harness import NUMPY_DTYPES, DeviceArrays
from tropical_manifest import tropical_manifest

MANIFEST = tropical_manifest(
    "exact_folds",
    {
        "maxplus": "{add: max, mul: add, zero: -inf, one: 0}",
        "minplus": "{add: min, mul: add, zero: +inf, one: 0}",
        "maxmul": "{add: max, mul: mul, zero: -inf, one: 1}",
    },
    [
        "{semiring: [maxplus, minplus], dtype: i32, pass: [forward, argmax], variant: single}",
        "{semiring: maxmul, dtype: i64, pass: [forward, argmax], variant: single}",
        "{semiring: [maxplus, minplus], dtype: f32, pass: argmax, variant: single}",
    ],
    tile="{block_m: 32, block_n: 32, block_k: 8, thread_m: 4, thread_n: 4}",
)
K = 19  # two full 8-deep tiles and a partial one

I32 = np.iinfo(np.int32)
I64 = np.iinfo(np.int64)
# Sums at and one past the extremes, the zero (MIN for max-plus, MAX for
# min-plus) beside values of both signs, and values that keep tiles exact.
I32_VALUES = [I32.min, I32.min + 1, I32.min + 2, -(2**30), -(2**28), -7, -1, 0, 1, 7, 2**28, 2**30, I32.max - 1, I32.max]
# Products at and one past 2^63 - 1 and -2^63, with high words set and clear.
ROOT = 3037000499  # ROOT^2 < 2^63 - 1 < (ROOT + 1)^2
I64_VALUES = [
    I64.min, I64.min + 1, -(2**62), -(2**32), -(ROOT + 1), -ROOT, -(2**31), -3, -2, -1, 0,
    1, 2, 3, 2**31, ROOT, ROOT + 1, 2**32, 2**62, I64.max - 1, I64.max,
]  # fmt: skip
VALUES = {"i32": I32_VALUES, "i64": I64_VALUES}

SEMIRING_H = "common/semiring.cuh.j2"
# name: (template, text, replacement, the kernels it breaks as (semiring, dtype))
MUTATIONS = {
    # The zero row no longer clamps b to 0: its terms become MIN + b.
    "zero-row-unclamped": (
        SEMIRING_H,
        "r.hi = (T)(0x7ffffffeu - (unsigned)max((T)((unsigned)a - 1u), -1));",
        "r.hi = (T)(0x7fffffffu - (unsigned)max(a, 0));",
        ("maxplus", "i32"),
    ),
    # lo one too high: a sum that reaches MIN exactly comes out MIN + 1.
    "low-bound-off-by-one": (
        SEMIRING_H,
        "r.lo = (T)(0x80000000u - (unsigned)min(a, 0));",
        "r.lo = (T)(0x80000001u - (unsigned)min(a, 0));",
        ("maxplus", "i32"),
    ),
    # hi one too high: a sum one past MAX wraps instead of saturating.
    "high-bound-off-by-one": (
        SEMIRING_H,
        "r.hi = (T)(0x7fffffffu - (unsigned)max(a, 0));",
        "r.hi = (T)(0x80000000u - (unsigned)max(a, 0));",
        ("minplus", "i32"),
    ),
    # A zero b no longer makes the term the zero: a + MIN for a >= 0.
    "zero-column-passes": (SEMIRING_H, "return b == AOTC_ZERO ? AOTC_ZERO : {{", "return (void)b, {{", None),
    # The zero row's deciding bound inside: for max-plus it clamps to -1, and MIN - 1 wraps.
    "clamp-order-swapped": (
        SEMIRING_H,
        "const T clamped = {{ outer }}({{ inner }}(b, ",
        "const T clamped = {{ inner }}({{ outer }}(b, ",
        ("maxplus", "i32"),
    ),
    # A product whose high word is set but whose low word is small wraps.
    "high-word-ignored": (SEMIRING_H, "if (__umul64hi(ua, ub) != 0 || low > limit)", "if (low > limit)", ("maxmul", "i64")),
    # The sign of a product from its operands' signs, wrongly.
    "sign-wrong": (SEMIRING_H, "const bool negative = (a ^ b) < 0;", "const bool negative = (a & b) < 0;", ("maxmul", "i64")),
    # A NaN best is beaten by a later term: the last NaN (or a later number) wins.
    "nan-best-replaced": (SEMIRING_H, "return best == best && !(term ", "return !(term ", ("maxplus", "f32")),
    # Ties take the later k.
    "ties-take-later-k": (SEMIRING_H, '!(term {{ "<=" if semiring.add == "max" else ">=" }} best)', '!(term {{ "<" if semiring.add == "max" else ">" }} best)', ("minplus", "f32")),
}  # fmt: skip
# Argmax folds the same terms as forward, and its k too. The column mutation
# must break both i32 semirings: it is checked on each.
BROKEN = [
    pytest.param(name, semiring, dtype, id=f"{name}-{semiring}-{dtype}")
    for name, (_, _, _, target) in MUTATIONS.items()
    for semiring, dtype in ([target] if target else [("maxplus", "i32"), ("minplus", "i32")])
]
KERNELS = [("maxplus", "i32"), ("minplus", "i32"), ("maxmul", "i64"), ("maxplus", "f32"), ("minplus", "f32")]


def pair_operands(dtype: str, semiring: reference.Semiring, at: int) -> tuple[np.ndarray, np.ndarray]:
    """A (n x K) and B (K x n): output (i, j) is values[i] (x) values[j], folded at k = ``at``."""
    values = np.array(VALUES[dtype], NUMPY_DTYPES[dtype])
    zero = reference.matmul(np.empty((1, 0), values.dtype), np.empty((0, 1), values.dtype), semiring)[0, 0]
    a = np.full((values.size, K), zero, values.dtype)
    b = np.random.default_rng(at).integers(-5, 6, (K, values.size)).astype(values.dtype)
    a[:, at], b[at, :] = values, values
    return a, b


def ties_and_nans(semiring: reference.Semiring) -> tuple[np.ndarray, np.ndarray]:
    """Every term is b (a = 0): columns of 0 and 1 with a few NaNs, so ties
    decide some outputs and NaNs others, in tiles that are all exact."""
    rng = np.random.default_rng(5)
    b = np.where(rng.random((K, 40)) < 0.04, np.float32(np.nan), rng.integers(0, 2, (K, 40)).astype(np.float32))
    return np.zeros((33, K), np.float32), b


def _run(tmp_path: Path, mutation: str | None, semiring: str, dtype: str, pass_name: str) -> None:
    """Render, compile and launch one kernel (mutated or not) on every case; assert each matches."""
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "aotc" / "build" / "templates" / "tropical", templates)
    if mutation:
        where, old, new, _ = MUTATIONS[mutation]
        path = templates / where
        text = path.read_text()
        assert text.count(old) == 1, f"the mutation {mutation!r} no longer matches the template"
        path.write_text(text.replace(old, new))
    (tmp_path / "manifest.yaml").write_text(MANIFEST)
    manifest = load_manifest(tmp_path / "manifest.yaml")
    kernel = next(k for k in manifest.kernels if (dict(k.axes)["semiring"], dict(k.axes)["dtype"], dict(k.axes)["pass"]) == (semiring, dtype, pass_name))
    backend = EmulatorBackend(cache=DiskCache(tmp_path / "cache"))
    function = backend.get_function(backend.load_module(render_kernel(manifest, kernel).encode(), name=kernel.name), kernel.symbol)
    sr = reference.SEMIRINGS[semiring]
    cases = [ties_and_nans(sr)] if dtype == "f32" else [pair_operands(dtype, sr, at) for at in (3, 17)]
    for a, b in cases:
        m, n = a.shape[0], b.shape[1]
        c, kstar = np.zeros((m, n), a.dtype), np.zeros((m, n), np.int32)
        memory = DeviceArrays(backend)
        try:
            values = {"A": memory.upload(a), "B": memory.upload(b), "C": memory.upload(c), "Kstar": memory.upload(kstar)}
            values.update(M=m, N=n, K=K, lda=K, ldb=n, ldc=n, ldk=n, block_y0=0, block_z0=0)
            params = struct.pack("@" + "".join(p.pack for p in kernel.params), *(values[p.name] for p in kernel.params))
            tile = dict(kernel.constants)
            grid = (-(-n // tile["block_n"]), -(-m // tile["block_m"]), 1)
            backend.launch(function, (grid, kernel.launch.block, 0), None, params)
            got_c, got_k = memory.download(values["C"], c), memory.download(values["Kstar"], kstar)
        finally:
            memory.free()
        want_c, want_k = reference.matmul_argmax(a, b, sr)
        np.testing.assert_array_equal(got_c, want_c)
        if pass_name == "argmax":
            np.testing.assert_array_equal(got_k, want_k)


@pytest.mark.parametrize(("semiring", "dtype"), KERNELS)
def test_the_unmutated_templates_pass(tmp_path: Path, semiring: str, dtype: str) -> None:
    for pass_name in ("argmax",) if dtype == "f32" else ("forward", "argmax"):
        _run(tmp_path / pass_name, None, semiring, dtype, pass_name)


@pytest.mark.parametrize(("mutation", "semiring", "dtype"), BROKEN)
def test_a_mutated_fold_is_caught(tmp_path: Path, mutation: str, semiring: str, dtype: str) -> None:
    with pytest.raises(AssertionError, match=r"(?i)mismatch"):
        _run(tmp_path, mutation, semiring, dtype, "argmax")
