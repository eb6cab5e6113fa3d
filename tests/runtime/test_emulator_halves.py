"""__half and __nv_bfloat16 on the emulator, bit for bit against NumPy's
float16 and ml_dtypes' bfloat16 (which round each operation to nearest even,
as CUDA does), and against exact rational arithmetic where neither has the
operation (fma, directed roundings, conversions from double)."""

from __future__ import annotations

import ctypes
import math
import subprocess
import sys
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import aotc_env

from aotc.runtime.emulator.checks import asan_environment
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import EmulatorLibrary, load_library_bytes

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 comes from ml_dtypes, which JAX brings")

KERNELS = Path(__file__).parent / "emulator_kernels"
SYMBOLS = ("half_operations", "bfloat16_operations", "half2_row_sums", "half_atomics", "softmax_f16", "softmax_bf16", "scale_halves")
# name: (dtype, mantissa bits, least exponent, greatest exponent, kernel)
FORMATS = {
    "f16": (np.float16, 10, -14, 15, "half_operations"),
    "bf16": (ml_dtypes.bfloat16, 7, -126, 127, "bfloat16_operations"),
}
RESULTS = (
    "add sub mul div fma op_add op_mul neg abs max min max_nan min_nan add_sat fma_relu "
    "float_rn float_rz float_rd float_ru double int_rn int_rz int_rd int_ru "
    "pair_add_x pair_add_y pair_mul_y pair_fma_y sqrt exp"
).split()
FLAGS = (
    "eq ne lt le gt ge equ neu ltu op_eq op_ne op_lt isnan isinf to_int_rn to_int_rz to_int_rd to_int_ru "
    "to_short_rn to_uint_rz low2float pair_beq pair_eq_mask"
).split()
ROUNDINGS = ("rn", "rz", "rd", "ru")


@pytest.fixture(autouse=True)
def _quiet_special_values() -> Iterator[None]:
    """The inputs hold every NaN and infinity: NumPy's warnings about them say nothing here."""
    with np.errstate(all="ignore"):
        yield


@pytest.fixture(scope="module")
def library() -> EmulatorLibrary:
    return load_library_bytes(compile_library_bytes(KERNELS / "halves.cu", SYMBOLS, source_name="halves.cu"))


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def round_exact(value: Fraction | float, fmt: str, rounding: str) -> int:
    """The bits of ``value`` rounded once to ``fmt``: the reference for every rounding."""
    dtype, mantissa, least, greatest, _ = FORMATS[fmt]
    if isinstance(value, float) and math.isnan(value):
        return 0x7FFF
    negative = value < 0 or (value == 0 and math.copysign(1.0, float(value)) < 0)
    infinity = (greatest - least + 2) << mantissa
    if isinstance(value, float) and math.isinf(value):
        return (0x8000 if negative else 0) | infinity
    magnitude = abs(Fraction(value))
    if magnitude == 0:
        return 0x8000 if negative else 0
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    exponent -= Fraction(2) ** exponent > magnitude
    ulp = Fraction(2) ** (max(exponent, least) - mantissa)
    units = magnitude / ulp
    kept, rest = math.floor(units), units - math.floor(units)
    up = {
        "rn": rest > Fraction(1, 2) or (rest == Fraction(1, 2) and kept % 2 == 1),
        "rz": False,
        "rd": rest != 0 and negative,
        "ru": rest != 0 and not negative,
    }[rounding]
    rounded = (kept + up) * ulp
    largest = (2 - Fraction(2) ** -mantissa) * Fraction(2) ** greatest
    if rounded > largest:
        away = rounding == "rn" or (rounding == "rd" and negative) or (rounding == "ru" and not negative)
        bits = infinity if away else infinity - 1
    else:
        bits = int(np.array(float(rounded), dtype).view(np.uint16))
    return (0x8000 if negative else 0) | bits


def exact(value: float) -> Fraction | float:
    """A float as round_exact takes it: exact, except the values a Fraction cannot hold (NaN, infinities, -0)."""
    value = float(value)
    return value if not math.isfinite(value) or value == 0 else Fraction(value)


def special_bits(fmt: str) -> np.ndarray:
    _, mantissa, least, greatest, _ = FORMATS[fmt]
    infinity = (greatest - least + 2) << mantissa
    values = [0, 1, 2, (1 << mantissa) - 1, 1 << mantissa, infinity - 1, infinity, infinity + 1, 0x7FFF]
    values += [1 << (mantissa + 1) | 0x10, (greatest - least + 1) << mantissa]  # ordinary numbers, 1.0-ish
    return np.array(values + [v | 0x8000 for v in values], np.uint16)


def inputs(fmt: str, seed: int = 0) -> dict[str, np.ndarray]:
    dtype, mantissa, *_ = FORMATS[fmt]
    rng = np.random.default_rng(seed)
    specials = special_bits(fmt)
    n = 4096
    bits = {name: rng.integers(0, 1 << 16, n, dtype=np.uint16) for name in "abc"}
    for name in "abc":
        bits[name][: len(specials)] = rng.permutation(specials)
    # Floats and doubles near the format's rounding points: its values, and
    # midpoints nudged either way, plus any float at all.
    grid = bits["a"].view(dtype).astype(np.float64)
    grid = grid[np.isfinite(grid)]
    ulps = np.abs(grid) * 2.0 ** -mantissa + 2.0**-200
    picks = rng.integers(0, len(grid), n)
    nudge = rng.choice([0.0, 0.5, -0.5, 0.5 + 2**-30, 0.5 - 2**-30, 0.25], n)
    doubles = grid[picks] + nudge * ulps[picks]
    floats = np.where(rng.random(n) < 0.7, doubles.astype(np.float32), rng.integers(0, 1 << 32, n, dtype=np.uint32).view(np.float32))
    floats[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 65520.0, 65519.996, 2.0**-25]
    doubles[:4] = [2.0**-25 + 2.0**-60, 1 + 2.0**-11 + 2.0**-40, -65520.0, 1e300]  # double rounding would fail these
    ints = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    ints[: n // 2] //= 1 << rng.integers(0, 31, n // 2)  # small ones too
    return {**bits, "f": floats.astype(np.float32), "d": doubles, "ints": ints}


def run(library: EmulatorLibrary, fmt: str, data: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    n = len(data["a"])
    out = np.zeros((len(RESULTS), n), np.uint16)
    flags = np.zeros((len(FLAGS), n), np.int32)
    args = [ptr(data[name]) for name in ("a", "b", "c", "f", "d", "ints")] + [ptr(out), ptr(flags), ctypes.c_int(n)]
    library.launch(FORMATS[fmt][4], (n + 127) // 128, 128, 0, args)
    return dict(zip(RESULTS, out)), dict(zip(FLAGS, flags))


def same_bits(got: np.ndarray, want: np.ndarray, dtype: type) -> None:
    """Equal bits, except that any NaN matches any NaN."""
    nan = np.isnan(want.view(dtype).astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.view(dtype).astype(np.float32)), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])


@pytest.mark.parametrize("fmt", FORMATS)
def test_arithmetic_rounds_each_operation_to_nearest_even(library: EmulatorLibrary, fmt: str) -> None:
    dtype = FORMATS[fmt][0]
    data = inputs(fmt)
    got, _ = run(library, fmt, data)
    x, y = data["a"].view(dtype), data["b"].view(dtype)
    for name, want in {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y}.items():
        same_bits(got[name], want.view(np.uint16), dtype)
        assert (got[name][np.isnan(want.astype(np.float32))] == 0x7FFF).all()  # CUDA's canonical NaN
    np.testing.assert_array_equal(got["op_add"], got["add"])
    np.testing.assert_array_equal(got["op_mul"], got["mul"])
    np.testing.assert_array_equal(got["neg"], data["a"] ^ 0x8000)
    np.testing.assert_array_equal(got["abs"], data["a"] & 0x7FFF)
    np.testing.assert_array_equal(got["pair_add_x"], got["add"])
    # sqrt: computed in float and rounded once, which is exact for both formats
    same_bits(got["sqrt"], np.sqrt(x.astype(np.float32)).astype(dtype).view(np.uint16), dtype)


@pytest.mark.parametrize("fmt", FORMATS)
def test_fma_rounds_once(library: EmulatorLibrary, fmt: str) -> None:
    dtype = FORMATS[fmt][0]
    data = inputs(fmt, seed=1)
    got, _ = run(library, fmt, data)
    a, b, c = (data[name].view(dtype).astype(np.float64) for name in "abc")
    for i in range(len(a)):
        if not (np.isfinite(a[i]) and np.isfinite(b[i]) and np.isfinite(c[i])):
            continue
        exact = Fraction(a[i]) * Fraction(b[i]) + Fraction(c[i])
        want = round_exact(exact, fmt, "rn")
        if exact == 0:  # the sign of an exact zero sum follows IEEE: -0 only if both addends are -0
            want = 0x8000 if math.copysign(1, a[i] * b[i]) < 0 and math.copysign(1, c[i]) < 0 else 0
        assert got["fma"][i] == want, (i, a[i], b[i], c[i])
        relu = 0 if (want & 0x8000 and want & 0x7FFF) else want
        assert got["fma_relu"][i] == relu, i
    # The pair forms are the scalar forms, half by half: (x, y) + (y, z), ...
    same_bits(got["pair_mul_y"], (data["b"].view(dtype) * data["c"].view(dtype)).view(np.uint16), dtype)


@pytest.mark.parametrize("fmt", FORMATS)
def test_max_min_and_saturation_follow_cuda(library: EmulatorLibrary, fmt: str) -> None:
    dtype = FORMATS[fmt][0]
    data = inputs(fmt, seed=2)
    got, _ = run(library, fmt, data)
    x, y = data["a"].view(dtype).astype(np.float32), data["b"].view(dtype).astype(np.float32)
    for i in range(len(x)):
        a_bits, b_bits = int(data["a"][i]), int(data["b"][i])
        nan_a, nan_b = math.isnan(x[i]), math.isnan(y[i])
        if nan_a or nan_b:
            # __hmax/__hmin: the other input, or canonical NaN for two; _nan: canonical NaN.
            one = 0x7FFF if nan_a and nan_b else (b_bits if nan_a else a_bits)
            assert (got["max"][i], got["min"][i], got["max_nan"][i], got["min_nan"][i]) == (one, one, 0x7FFF, 0x7FFF), i
            continue
        if x[i] == y[i]:  # +0 > -0
            high = a_bits if not a_bits & 0x8000 else b_bits
            low = b_bits if not a_bits & 0x8000 else a_bits
        else:
            high, low = (a_bits, b_bits) if x[i] > y[i] else (b_bits, a_bits)
        assert (got["max"][i], got["min"][i], got["max_nan"][i], got["min_nan"][i]) == (high, low, high, low), i
    total = (data["a"].view(dtype) + data["b"].view(dtype)).astype(np.float32)
    clamped = np.where(np.isnan(total), 0.0, np.clip(total, 0.0, 1.0)).astype(dtype).view(np.uint16)
    np.testing.assert_array_equal(got["add_sat"], clamped)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_conversions_round_as_named(library: EmulatorLibrary, fmt: str, rounding: str) -> None:
    dtype = FORMATS[fmt][0]
    data = inputs(fmt, seed=3)
    got, _ = run(library, fmt, data)
    floats, ints = data["f"], data["ints"]
    want = [round_exact(exact(v), fmt, rounding) for v in floats]
    np.testing.assert_array_equal(got[f"float_{rounding}"], np.array(want, np.uint16))
    want = [round_exact(Fraction(int(v)), fmt, rounding) for v in ints]
    np.testing.assert_array_equal(got[f"int_{rounding}"], np.array(want, np.uint16))
    if rounding == "rn":
        same_bits(got["float_rn"], floats.astype(dtype).view(np.uint16), dtype)
        want = [round_exact(exact(v), fmt, "rn") for v in data["d"]]
        np.testing.assert_array_equal(got["double"], np.array(want, np.uint16))


@pytest.mark.parametrize("fmt", FORMATS)
def test_comparisons_and_integer_conversions(library: EmulatorLibrary, fmt: str) -> None:
    dtype = FORMATS[fmt][0]
    data = inputs(fmt, seed=4)
    _, flags = run(library, fmt, data)
    x, y = data["a"].view(dtype).astype(np.float32), data["b"].view(dtype).astype(np.float32)
    ordered = {"eq": x == y, "ne": (x < y) | (x > y), "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}
    unordered = {"equ": ~ordered["ne"], "neu": x != y, "ltu": ~(x >= y)}
    for name, want in {**ordered, **unordered}.items():
        np.testing.assert_array_equal(flags[name], want.astype(np.int32), err_msg=name)
    np.testing.assert_array_equal(flags["op_eq"], flags["eq"])
    np.testing.assert_array_equal(flags["op_ne"], flags["neu"])  # operator!= is unordered, as CUDA's
    np.testing.assert_array_equal(flags["op_lt"], flags["lt"])
    np.testing.assert_array_equal(flags["isnan"], np.isnan(x).astype(np.int32))
    np.testing.assert_array_equal(flags["isinf"], np.where(np.isinf(x), np.sign(x), 0).astype(np.int32))
    as_double = x.astype(np.float64)
    rounders = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
    for rounding, rounder in rounders.items():
        want = np.where(np.isnan(as_double), 0, np.clip(rounder(np.nan_to_num(as_double)), -(2**31), 2**31 - 1))
        np.testing.assert_array_equal(flags[f"to_int_{rounding}"], want.astype(np.int64).astype(np.int32), err_msg=rounding)
    want = np.where(np.isnan(as_double), 0, np.clip(np.rint(np.nan_to_num(as_double)), -(2**15), 2**15 - 1))
    np.testing.assert_array_equal(flags["to_short_rn"], want.astype(np.int32))
    want = np.where(np.isnan(as_double), 0, np.clip(np.trunc(np.nan_to_num(as_double)), 0, 2**32 - 1))
    np.testing.assert_array_equal(flags["to_uint_rz"].view(np.uint32), want.astype(np.uint32))
    assert flags["low2float"][~np.isnan(x)].all()


def test_half2_loads_shuffles_and_atomics(library: EmulatorLibrary) -> None:
    rows, pairs = 3, 50
    values = np.random.default_rng(5).standard_normal((rows, 2 * pairs)).astype(np.float16)
    sums = np.zeros(rows, np.float16)
    library.launch("half2_row_sums", rows, 32, 0, [ptr(values), ptr(sums), ctypes.c_int(pairs)])
    np.testing.assert_allclose(sums.astype(np.float32), values.astype(np.float32).sum(axis=1), rtol=2e-3, atol=2e-3)
    total, pair = np.zeros(1, np.float16), np.zeros(2, ml_dtypes.bfloat16)
    ones = np.full(64, 0.25, np.float16)
    library.launch("half_atomics", 1, 64, 0, [ptr(total), ptr(pair), ptr(ones)])
    assert total[0] == 16.0 and pair.astype(np.float32).tolist() == [64.0, 32.0]



def test_half_parameters_are_two_byte_scalars(library: EmulatorLibrary) -> None:
    """A kernel declared with __half and __nv_bfloat16 parameters launches as
    any other: pointers, and 2-byte values holding the bits."""
    kernel = library.kernel("scale_halves")
    assert kernel.sizes == (8, 8, 2, 2, 4) and kernel.kinds == "ppooi"
    x = np.linspace(-2, 2, 40).astype(np.float16)
    out = np.zeros_like(x)
    factor = ctypes.c_uint16(int(np.array(1.5, np.float16).view(np.uint16)))
    offset = ctypes.c_uint16(int(np.array(0.25, ml_dtypes.bfloat16).view(np.uint16)))
    kernel.launch(1, 64, 0, [ptr(x), ptr(out), factor, offset, ctypes.c_int(40)])
    np.testing.assert_array_equal(out, (x * np.float16(1.5)) + np.float16(0.25))
    with pytest.raises(TypeError, match=r"argument 2 of kernel scale_halves: the parameter takes a struct of 2 bytes, got c_float"):
        kernel.launch(1, 64, 0, [ptr(x), ptr(out), ctypes.c_float(1.5), offset, ctypes.c_int(40)])

# Tolerances per dtype: the output's rounding (half an ulp: 2**-11 for f16,
# 2**-8 for bf16, relative) and the inputs' (the reference reads the same
# rounded inputs, in float64).
SOFTMAX_TOLERANCE = {"f16": 2e-3, "bf16": 8e-3}


def softmax_case(fmt: str, rows: int = 6, cols: int = 100) -> tuple[np.ndarray, np.ndarray]:
    dtype = FORMATS[fmt][0]
    x = (4 * np.random.default_rng(17).standard_normal((rows, cols))).astype(dtype)
    wide = x.astype(np.float64)
    want = np.exp(wide - wide.max(axis=1, keepdims=True))
    return x, want / want.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_warp_per_row_softmax(library: EmulatorLibrary, fmt: str) -> None:
    x, want = softmax_case(fmt)
    out = np.zeros_like(x)
    rows, cols = x.shape
    library.launch(f"softmax_{fmt}", (rows + 3) // 4, 128, 0, [ptr(x), ptr(out), ctypes.c_int(rows), ctypes.c_int(cols)])
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=SOFTMAX_TOLERANCE[fmt], atol=1e-6)


# Every kernel of these tests that is right must be clean under all the
# checks, the memory check included, which needs libasan first in the process.
ALL_CHECKS_SCRIPT = """
import ctypes, numpy as np, ml_dtypes
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes
kernels = {kernels!r}
p = lambda a: ctypes.c_void_p(a.ctypes.data)
def load(name, symbols):
    return load_library_bytes(compile_library_bytes(kernels + "/" + name, symbols, source_name=name))
halves = load("halves.cu", ("softmax_f16", "softmax_bf16", "half_atomics"))
for symbol, dtype in (("softmax_f16", np.float16), ("softmax_bf16", ml_dtypes.bfloat16)):
    x = np.ones((5, 70), dtype); out = np.zeros_like(x)
    halves.launch(symbol, 2, 128, 0, [p(x), p(out), ctypes.c_int(5), ctypes.c_int(70)])
    assert (out.astype(np.float32) == np.float32(dtype(1 / 70))).all(), symbol
total, pair = np.zeros(1, np.float16), np.zeros(2, ml_dtypes.bfloat16)
quarters = np.full(64, 0.25, np.float16)
halves.launch("half_atomics", 1, 64, 0, [p(total), p(pair), p(quarters)])
assert total[0] == 16 and pair.astype(np.float32).tolist() == [64, 32]
warps = load("warps.cu", ("row_sum_max", "warp_tree_sum"))
x = np.ones((4, 40), np.float32); sums = np.zeros((4, 32), np.float32); top = np.zeros(4, np.float32)
warps.launch("row_sum_max", 1, 128, 0, [p(x), p(sums), p(top), ctypes.c_int(40)])
groups = load("groups.cu", ("tile_collectives", "staged_sum", "pipeline_copies"))
ints, floats = np.arange(64, dtype=np.int32), np.ones(64, np.float32)
results, sums = np.zeros(13 * 64, np.int32), np.zeros(128, np.float32)
groups.launch("tile_collectives", 1, 64, 0, [p(ints), p(floats), p(results), p(sums)])
staged = np.ones(2 * 3 * 64, np.float32); out = np.zeros(128, np.float32)
groups.launch("staged_sum", 2, 64, 0, [p(staged), p(out), ctypes.c_int(3), ctypes.c_int(0)])
assert (out == 3).all()
copied, grouped = np.zeros(64, np.float32), np.zeros(68, np.float32)
groups.launch("pipeline_copies", 1, 64, 0, [p(floats), p(copied), p(grouped), ctypes.c_int(64)])
assert (copied == 1).all() and (grouped[:64] == 1).all()
print("clean")
"""


def test_half_warp_and_group_kernels_are_clean_under_all_checks() -> None:
    script = ALL_CHECKS_SCRIPT.format(kernels=str(KERNELS))
    env = aotc_env({**asan_environment(), "AOTC_EMULATOR_CHECK": "all"})
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["clean"]
