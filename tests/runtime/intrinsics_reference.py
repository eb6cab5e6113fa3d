"""CUDA's integer and SIMD-in-a-word intrinsics in Python, written from their
definitions in the CUDA Math API (and PTX's fns for __fns), for
test_emulator_intrinsics.py. Every value is an unsigned 32-bit int."""

from __future__ import annotations

from collections.abc import Callable

MASK = 0xFFFFFFFF


def signed(v: int, bits: int = 32) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def parts(v: int, bits: int, is_signed: bool) -> list[int]:
    raw = [(v >> (bits * i)) & ((1 << bits) - 1) for i in range(32 // bits)]
    return [signed(p, bits) for p in raw] if is_signed else raw


def byte_perm(x: int, y: int, s: int) -> int:
    source = (y << 32) | x
    return sum(((source >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))


def funnelshift_l(lo: int, hi: int, shift: int, clamp: bool) -> int:
    n = min(shift, 32) if clamp else shift & 31
    return ((((hi << 32) | lo) << n) >> 32) & MASK


def funnelshift_r(lo: int, hi: int, shift: int, clamp: bool) -> int:
    n = min(shift, 32) if clamp else shift & 31
    return (((hi << 32) | lo) >> n) & MASK


def fns(mask: int, base: int, offset: int) -> int:
    """PTX's fns, as its pseudo-code reads."""
    if offset == 0:
        return base if (mask >> base) & 1 else MASK
    step, count = (1 if offset > 0 else -1), abs(offset) - 1
    pos = base
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += step
    return MASK


def dot(a: list[int], b: list[int], c: int) -> int:
    return (sum(x * y for x, y in zip(a, b)) + c) & MASK


def dp2a(x: int, y: int, z: int, is_signed: bool, high: bool) -> int:
    bytes_ = parts(y, 8, is_signed)[2:] if high else parts(y, 8, is_signed)[:2]
    return dot(parts(x, 16, is_signed), bytes_, signed(z) if is_signed else z)


def integer_results(x: int, y: int, z: int) -> list[int]:
    """In the order of integer_intrinsics in emulator_kernels/intrinsics.cu."""
    sx, sy, sz = signed(x), signed(y), signed(z)
    dp4a_s, dp4a_u = dot(parts(x, 8, True), parts(y, 8, True), sz), dot(parts(x, 8, False), parts(y, 8, False), z)
    # int, unsigned, short2 and char4, ushort2 and uchar4: signed, unsigned, signed, unsigned
    dp2as = [dp2a(x, y, z, s, high) for high in (False, True) for _ in range(2) for s in (True, False)]
    return [
        byte_perm(x, y, z),
        funnelshift_l(x, y, z, False),
        funnelshift_l(x, y, z, True),
        funnelshift_r(x, y, z, False),
        funnelshift_r(x, y, z, True),
        (abs(sx - sy) + z) & MASK,
        (abs(x - y) + z) & MASK,
        ((sx + sy) >> 1) & MASK,
        ((sx + sy + 1) >> 1) & MASK,
        (x + y) >> 1,
        (x + y + 1) >> 1,
        fns(x, z % 32, y % 67 - 33),
        dp4a_s, dp4a_u, dp4a_s, dp4a_u,
        *dp2as,
    ]  # fmt: skip


def _clamp(v: int, bits: int, is_signed: bool) -> int:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed else (0, (1 << bits) - 1)
    return min(max(v, low), high)


def _avgs(x: int, y: int) -> int:
    """Signed rounded average: half away from zero."""
    return (x + y + 1) >> 1 if x + y >= 0 else (x + y) >> 1


# name: (signed parts, saturate, operation of a pair of parts); one-argument
# forms take the part and 0.
Op = Callable[[int, int], int]
_COMPARISONS: dict[str, tuple[bool, Op]] = {
    "eq": (False, lambda x, y: x == y), "ne": (False, lambda x, y: x != y),
    "ges": (True, lambda x, y: x >= y), "geu": (False, lambda x, y: x >= y),
    "gts": (True, lambda x, y: x > y), "gtu": (False, lambda x, y: x > y),
    "les": (True, lambda x, y: x <= y), "leu": (False, lambda x, y: x <= y),
    "lts": (True, lambda x, y: x < y), "ltu": (False, lambda x, y: x < y),
}  # fmt: skip
PACKED: dict[str, tuple[bool, bool, Op]] = {
    "__vadd": (False, False, lambda x, y: x + y),
    "__vsub": (False, False, lambda x, y: x - y),
    "__vaddss": (True, True, lambda x, y: x + y),
    "__vaddus": (False, True, lambda x, y: x + y),
    "__vsubss": (True, True, lambda x, y: x - y),
    "__vsubus": (False, True, lambda x, y: x - y),
    "__vavgs": (True, False, _avgs),
    "__vavgu": (False, False, lambda x, y: (x + y + 1) >> 1),
    "__vhaddu": (False, False, lambda x, y: (x + y) >> 1),
    "__vabsdiffs": (True, False, lambda x, y: abs(x - y)),
    "__vabsdiffu": (False, False, lambda x, y: abs(x - y)),
    "__vmaxs": (True, False, max),
    "__vmaxu": (False, False, max),
    "__vmins": (True, False, min),
    "__vminu": (False, False, min),
    **{f"__vcmp{k}": (s, False, lambda x, y, f=f: -1 if f(x, y) else 0) for k, (s, f) in _COMPARISONS.items()},
    **{f"__vset{k}": (s, False, lambda x, y, f=f: 1 if f(x, y) else 0) for k, (s, f) in _COMPARISONS.items()},
}
SUMS = {"__vsads": True, "__vsadu": False}
UNARY: dict[str, tuple[bool, Op]] = {
    "__vabs": (False, lambda x, _: abs(x)),
    "__vabsss": (True, lambda x, _: abs(x)),
    "__vneg": (False, lambda x, _: -x),
    "__vnegss": (True, lambda x, _: -x),
}
SIMD = [*PACKED, *SUMS, *UNARY]  # the kernel's order


def simd(name: str, bits: int, a: int, b: int) -> int:
    """`name` with the part width `bits` (16 for the 2 forms, 8 for the 4 forms)."""
    if name in SUMS:
        return sum(abs(x - y) for x, y in zip(parts(a, bits, SUMS[name]), parts(b, bits, SUMS[name])))
    if name in UNARY:
        saturate, op = UNARY[name]
        is_signed, b = True, 0
    else:
        is_signed, saturate, op = PACKED[name]
    result = 0
    for i, (x, y) in enumerate(zip(parts(a, bits, is_signed), parts(b, bits, is_signed))):
        v = op(x, y)
        v = _clamp(v, bits, is_signed) if saturate else v
        result |= (v & ((1 << bits) - 1)) << (bits * i)
    return result


def simd_results(a: int, b: int) -> list[int]:
    """In the order of simd_intrinsics in emulator_kernels/intrinsics.cu."""
    return [simd(name, bits, a, b) for name in SIMD for bits in (16, 8)]
