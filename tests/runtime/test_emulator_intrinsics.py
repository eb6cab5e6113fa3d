"""CUDA's integer intrinsics (__byte_perm, the funnel shifts, __dp4a and
__dp2a, __sad, the averages, __fns), the SIMD-in-a-word ones (__vadd4,
__vcmpgtu2, ...), the lane masks, normcdff and rnorm3df on the emulator, on
edge inputs, against Python written from CUDA's definitions
(intrinsics_reference.py). One build of emulator_kernels/intrinsics.cu, the
file nvcc compiles too, in one child process."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import aotc_env
from intrinsics_reference import SIMD, byte_perm, fns, integer_results, simd, simd_results

KERNEL = Path(__file__).parent / "emulator_kernels" / "intrinsics.cu"
EDGES = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x80808080, 0x7F7F7F7F, 0x8000FFFF, 0x7FFF0001, 0x01FF807F, 0x12345678]
SHIFTS = [0, 1, 31, 32, 33, 64, 0x80000000, 0xFFFFFFFF, 0x3210, 0x7654, 0x5140, 0x0000FFFF]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -8.0, 8.0, -20.0, 3e38, -3e38, 1e-45, -1e-38, math.inf, -math.inf, math.nan]

# The child prints one JSON object: each kernel's outputs as lists.
SCRIPT = """
import ctypes, json, sys
import numpy as np
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes

inputs = json.loads(sys.stdin.read())
symbols = ["integer_intrinsics", "simd_intrinsics", "math_intrinsics", "lane_masks", "both_hadds"]
library = load_library_bytes(compile_library_bytes({path!r}, symbols, source_name="intrinsics.cu"))
p, I = lambda a: ctypes.c_void_p(a.ctypes.data), ctypes.c_int
u = lambda key: np.array(inputs[key], np.uint32)
a, b, c = u("a"), u("b"), u("c")
n = len(a); blocks = (n + 127) // 128
integer = np.zeros(n * 24, np.uint32)
library.launch("integer_intrinsics", blocks, 128, 0, [p(a), p(b), p(c), p(integer), I(n)])
sa, sb = u("simd_a"), u("simd_b")
packed = np.zeros(len(sa) * 82, np.uint32)
library.launch("simd_intrinsics", (len(sa) + 127) // 128, 128, 0, [p(sa), p(sb), p(packed), I(len(sa))])
fa, fb, fc = (np.array(inputs[k], np.float32) for k in ("fa", "fb", "fc"))
cdf, rnorm = np.zeros_like(fa), np.zeros_like(fa)
library.launch("math_intrinsics", 1, len(fa), 0, [p(fa), p(fb), p(fc), p(cdf), p(rnorm), I(len(fa))])
masks = np.zeros(5 * 6 * 7, np.uint32)
library.launch("lane_masks", 1, (6, 7), 0, [p(masks)])
x, y = (np.array(inputs[k], np.int32) for k in ("x", "y"))
hp, hq = (np.array(inputs[k], np.float16) for k in ("hp", "hq"))
averages, sums = np.zeros_like(x), np.zeros_like(hp)
library.launch("both_hadds", 1, len(x), 0, [p(x), p(y), p(hp), p(hq), p(averages), p(sums), I(len(x))])
print(json.dumps({{"integer": integer.tolist(), "simd": packed.tolist(), "cdf": cdf.tolist(), "rnorm": rnorm.tolist(),
                  "masks": masks.tolist(), "averages": averages.tolist(), "sums": sums.view(np.uint16).tolist()}}))
"""


@pytest.fixture(scope="module")
def run() -> tuple[dict, dict]:
    """The inputs, and what the emulator made of them."""
    rng = np.random.default_rng(7)
    triples = [*itertools.product(EDGES, EDGES, SHIFTS), *rng.integers(0, 2**32, (300, 3)).tolist()]
    pairs = [*itertools.product(EDGES, EDGES), *rng.integers(0, 2**32, (300, 2)).tolist()]
    floats = list(itertools.product(FLOATS, [0.0, 1.0, math.nan, 3e38, -math.inf]))
    ints = [-(2**31), 2**31 - 1, -1, 0, 1, -3, 5, -7]
    inputs = {
        "a": [t[0] for t in triples], "b": [t[1] for t in triples], "c": [t[2] for t in triples],
        "simd_a": [q[0] for q in pairs], "simd_b": [q[1] for q in pairs],
        "fa": [f[0] for f in floats], "fb": [f[1] for f in floats], "fc": [f[1] for f in floats[::-1]],
        "x": ints, "y": ints[::-1], "hp": [1.0, -2.5, 65504.0, 0.1, 3.0, -0.0, 1e-7, 2.0], "hq": [2.0] * 8,
    }  # fmt: skip
    script = SCRIPT.format(path=str(KERNEL))
    result = subprocess.run([sys.executable, "-c", script], input=json.dumps(inputs), env=aotc_env(),
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return inputs, json.loads(result.stdout)


def test_the_references_give_cudas_documented_examples() -> None:
    """The reference itself against the examples in CUDA's and PTX's documentation."""
    assert [fns(0xAAAAAAAA, 3, 1), fns(0xAAAAAAAA, 3, -1), fns(0xAAAAAAAA, 2, 1), fns(0xAAAAAAAA, 2, -1)] == [3, 3, 3, 1]
    assert simd("__vcmpeq", 16, 0x1234ABA5, 0x1234ABA6) == 0xFFFF0000
    assert simd("__vcmpges", 16, 0x1234ABA5, 0x1234ABA6) == 0xFFFF0000
    assert simd("__vcmplts", 16, 0x1234ABA5, 0x1234ABA6) == 0x0000FFFF
    assert byte_perm(0x33221100, 0x77665544, 0x7531) == 0x77553311


def _vavgs_as_nvcc_emits_it(a: int, b: int, bits: int) -> int:
    """``__vavgs2``/``__vavgs4`` as the PTX nvcc 13.0 writes for them (``nvcc -ptx``
    of a kernel calling them: the sequence, transcribed): CUDA's documentation
    says only "signed rounded average", so this fixes the rounding."""
    mask, low, high, sign = (0xFFFEFFFE, 0x00010001, 0x80008000, 15) if bits == 16 else (0xFEFEFEFE, 0x01010101, 0x80808080, 7)
    u, v, s, t = (a & mask) >> 1, (b & mask) >> 1, a ^ b, a & b
    carry, s, t = s & low, s & high, t & low
    r = ((u + v + t) & 0xFFFFFFFF) ^ s
    return (r + (~(r >> sign) & 0xFFFFFFFF & carry)) & 0xFFFFFFFF


def test_the_signed_average_rounds_as_nvccs_code_does() -> None:
    """The reference's half-away-from-zero against nvcc's own sequence."""
    parts = [0, 1, 2, 0x7E, 0x7F, 0x80, 0x81, 0xFE, 0xFF, 0x7FFF, 0x8000, 0x8001, 0xFFFE, 0xFFFF]
    for bits, x, y in itertools.product((16, 8), parts, parts):
        a, b = (sum((part & ((1 << bits) - 1)) << (bits * i) for i in range(32 // bits)) for part in (x, y))
        assert simd("__vavgs", bits, a, b) == _vavgs_as_nvcc_emits_it(a, b, bits), (bits, hex(a), hex(b))
    rng = np.random.default_rng(0)
    for a, b in rng.integers(0, 2**32, (2000, 2), dtype=np.uint64).tolist():
        for bits in (16, 8):
            assert simd("__vavgs", bits, a, b) == _vavgs_as_nvcc_emits_it(a, b, bits), (bits, hex(a), hex(b))

def _mismatches(names: list[str], rows: list[tuple[int, ...]], wanted: list[list[int]], got: list[int]) -> list[str]:
    """The first ten results of ``got`` (each row's, in ``names`` order) that differ from ``wanted``."""
    wrong = []
    for i, (row, want_row) in enumerate(zip(rows, wanted)):
        for name, want, have in zip(names, want_row, got[len(names) * i : len(names) * (i + 1)]):
            if want != have:
                wrong.append(f"{name}{tuple(map(hex, row))}: {have:#x}, not {want:#x}")
    return wrong[:10]


def test_integer_intrinsics_match_their_definitions(run: tuple[dict, dict]) -> None:
    inputs, got = run
    names = ("byte_perm funnelshift_l funnelshift_lc funnelshift_r funnelshift_rc sad usad hadd rhadd uhadd urhadd "
             "fns dp4a(int) dp4a(unsigned) dp4a(char4) dp4a(uchar4) dp2a_lo(int) dp2a_lo(unsigned) dp2a_lo(short2) "
             "dp2a_lo(ushort2) dp2a_hi(int) dp2a_hi(unsigned) dp2a_hi(short2) dp2a_hi(ushort2)").split()  # fmt: skip
    rows = list(zip(inputs["a"], inputs["b"], inputs["c"]))
    assert _mismatches(names, rows, [integer_results(*xyz) for xyz in rows], got["integer"]) == []


def test_simd_intrinsics_match_their_definitions(run: tuple[dict, dict]) -> None:
    inputs, got = run
    names = [f"{name}{form}" for name in SIMD for form in (2, 4)]
    rows = list(zip(inputs["simd_a"], inputs["simd_b"]))
    assert _mismatches(names, rows, [simd_results(*ab) for ab in rows], got["simd"]) == []


def test_lane_masks_read_the_linear_lane(run: tuple[dict, dict]) -> None:
    """A 6x7 block: 42 threads, a whole warp and a partial one."""
    _, got = run
    want = []
    for t in range(42):
        lane = t % 32
        lt = (1 << lane) - 1
        want += [1 << lane, lt, lt | 1 << lane, ~(lt | 1 << lane) & 0xFFFFFFFF, ~lt & 0xFFFFFFFF]
    assert got["masks"] == want


def ulps(have: float, want: Fraction | float) -> float:
    """How many float ulps of `want` apart the two are; 0 where both are NaN or equal."""
    if math.isnan(have) or (isinstance(want, float) and math.isnan(want)):
        return 0.0 if math.isnan(have) and isinstance(want, float) and math.isnan(want) else math.inf
    if isinstance(want, float) and math.isinf(want):
        return 0.0 if have == want else math.inf
    ulp = math.ulp(float(np.float32(want))) * 2.0 ** (52 - 23)
    return float(abs(Fraction(have) - Fraction(want)) / Fraction(max(ulp, 2.0**-149)))


def test_normcdff_and_rnorm3df_within_cudas_error_bounds(run: tuple[dict, dict]) -> None:
    """normcdff within 5 ulps, rnorm3df within 2 (CUDA's bounds); rnorm3df
    never overflows or underflows on the way, gives +0 beside any infinity even
    with a NaN, and +inf at the origin."""
    inputs, got = run
    for x, have in zip(inputs["fa"], got["cdf"]):
        want = math.nan if math.isnan(x) else 0.5 * math.erfc(-x / math.sqrt(2))
        assert ulps(have, want) <= 5, (x, have, want)
    for abc, have in zip(zip(inputs["fa"], inputs["fb"], inputs["fc"]), got["rnorm"]):
        if any(math.isinf(v) for v in abc):
            assert have == 0.0 and math.copysign(1, have) == 1, (abc, have)
        elif any(math.isnan(v) for v in abc):
            assert math.isnan(have), (abc, have)
        elif all(v == 0 for v in abc):
            assert have == math.inf
        else:
            square = sum(Fraction(np.float32(v).item()) ** 2 for v in abc)
            want = 1 / Fraction(math.sqrt(square))  # a double's sqrt of the exact sum: far inside a float ulp
            assert ulps(have, want) <= 2, (abc, have, float(want))


def test_integer_and_half_hadd_live_in_one_kernel(run: tuple[dict, dict]) -> None:
    """CUDA's int __hadd (the average, rounded down) beside cuda_fp16.h's __hadd."""
    inputs, got = run
    assert got["averages"] == [((x + y) >> 1) - 2 for x, y in zip(inputs["x"], inputs["y"])]
    want = (np.array(inputs["hp"], np.float16) + np.array(inputs["hq"], np.float16)).view(np.uint16).tolist()
    assert got["sums"] == want
