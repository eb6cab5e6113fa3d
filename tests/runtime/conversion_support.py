"""CUDA's float-to-integer intrinsics on their boundaries, as one table for the
emulator (test_emulator_conversions.py) and a lent GPU (test_family_gpu.py).

``__float2int_rn`` and its kin (rn, rz, rd, ru; to int, unsigned, long long,
unsigned long long; from float and double) are PTX's cvt.rni/rzi/rmi/rpi:
rounded to nearest even, toward zero, down or up, then clamped to the
destination's range, with NaN converted to 0. The expected value of each is
computed here from the input's exact rational value.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["CONVERSIONS", "MODES", "TARGETS", "boundaries", "mismatches"]

TARGETS = {"i32": (np.int32, "int"), "u32": (np.uint32, "uint"), "i64": (np.int64, "ll"), "u64": (np.uint64, "ull")}
MODES = ("rn", "rz", "rd", "ru")

# A family of one kernel per source type: out[4 * i + m] is input i under mode m.
CONVERSIONS = {
    "manifest.yaml": """\
library: conversions
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  convert:
    template: convert.cu.j2
    axes: {source: [f32, f64]}
    name: "convert_{source}"
    signature:
      x: {array: source, role: in, shape: [n]}
      i32: {array: i32, role: out, shape: [n, 4]}
      u32: {array: u32, role: out, shape: [n, 4]}
      i64: {array: i64, role: out, shape: [n, 4]}
      u64: {array: u64, role: out, shape: [n, 4]}
      n: i32
    launch:
      grid: ["cdiv(n, 128)"]
      block: [128]
""",
    "templates/convert.cu.j2": """\
// {{ kernel_name }}: every float-to-integer intrinsic of {{ ctype.x }}, in every rounding mode.
{% set from = "float" if source == "f32" else "double" %}
extern "C" __global__ void __launch_bounds__(128) {{ kernel_name }}({{ params }})
{
    int i = blockIdx.x * 128 + threadIdx.x;
    if (i >= n) return;
    {{ ctype.x }} v = x[i];
{% for target, name in [("i32", "int"), ("u32", "uint"), ("i64", "ll"), ("u64", "ull")] %}
{% for mode in ["rn", "rz", "rd", "ru"] %}
    {{ target }}[4 * i + {{ loop.index0 }}] = __{{ from }}2{{ name }}_{{ mode }}(v);
{% endfor %}
{% endfor %}
}
""",
}

_SHARED = [
    0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.75, -0.75, 1.0, -1.0,
    8388607.5, -8388607.5, 16777216.0,
    2.0**31 - 128, 2.0**31, -(2.0**31), -(2.0**31) - 256,  # int's range: floats at and past it
    2.0**32 - 256, 2.0**32,  # unsigned's
    2.0**63 - 2**39, 2.0**63, -(2.0**63), -(2.0**63) - 2**40,  # long long's
    2.0**64 - 2**40, 2.0**64,  # unsigned long long's
    math.inf, -math.inf, math.nan,
]
_F32 = [
    *_SHARED, 1e-45, -1e-45, 0.49999997, -0.49999997, 0.50000006, -0.50000006,
    3.4028235e38, -3.4028235e38,
]
_F64 = [
    *_SHARED, 5e-324, -5e-324, 0.49999999999999994, -0.49999999999999994,
    2147483647.5, 2147483647.4, 2147483646.5, -2147483648.5, -2147483648.6, -2147483647.5,
    4294967295.5, 4294967295.4, 4294967294.5, -0.4, -0.6,
    2.0**63 - 1024, -(2.0**63) - 2048, 2.0**64 - 2048, 2.0**52 - 0.5, -(2.0**52) + 0.5,
    1.7976931348623157e308, -1.7976931348623157e308,
]


def boundaries(source: str) -> np.ndarray:
    """The inputs of the table for ``source`` (f32 or f64)."""
    return np.array(_F32, np.float32) if source == "f32" else np.array(_F64, np.float64)


def _expected(value: float, target: str, mode: str) -> int:
    info = np.iinfo(TARGETS[target][0])
    low, high = int(info.min), int(info.max)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return high if value > 0 else low
    exact = Fraction(value)
    rounded = {"rn": round(exact), "rz": math.trunc(exact), "rd": math.floor(exact), "ru": math.ceil(exact)}[mode]
    return min(max(rounded, low), high)


def mismatches(source: str, values: np.ndarray, results: dict[str, np.ndarray]) -> list[str]:
    """Each result of ``results`` (target -> the kernel's (n, 4) array) that is not
    the table's, as ``__float2int_rn(nan): 0x80000000, expected 0x0``."""
    found = []
    prefix = "float" if source == "f32" else "double"
    for target, (dtype, name) in TARGETS.items():
        got = np.asarray(results[target]).reshape(len(values), 4).astype(dtype)
        for i, value in enumerate(values.tolist()):
            for m, mode in enumerate(MODES):
                want = _expected(value, target, mode)
                if int(got[i, m]) != want:
                    found.append(f"__{prefix}2{name}_{mode}({value!r}): {int(got[i, m]):#x}, expected {want:#x}")
    return found
