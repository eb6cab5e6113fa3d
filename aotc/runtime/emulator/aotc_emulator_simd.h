// aotc_emulator_simd.h: CUDA's SIMD-in-a-word intrinsics (__vadd4, __vcmpgtu2,
// ...), included by aotc_emulator.h. Each splits its 32-bit arguments into two
// 16-bit halfwords (the names ending in 2) or four bytes (in 4), works on each
// part as a signed or unsigned integer, and packs the parts' results again.
// __vcmp* set a part to all ones where the comparison holds, __vset* to 1;
// __vsads*/__vsadu* return the sum of the parts' absolute differences.
#pragma once

namespace aotc_emu::simd {
// Part i of `word`, Bits wide, sign- or zero-extended.
template <int Bits, bool Signed>
inline int part(unsigned int word, int i) {
  const unsigned int bits = (word >> (Bits * i)) & ((1u << Bits) - 1u);
  return Signed ? static_cast<int>(bits << (32 - Bits)) >> (32 - Bits) : static_cast<int>(bits);
}
// op(x, y) of each pair of parts; each result clamped to the part's range
// (Saturated) or kept to its low Bits bits.
template <int Bits, bool Signed, bool Saturated, class Op>
inline unsigned int lanes(unsigned int a, unsigned int b, Op op) {
  constexpr int lowest = Signed ? -(1 << (Bits - 1)) : 0;
  constexpr int highest = Signed ? (1 << (Bits - 1)) - 1 : (1 << Bits) - 1;
  unsigned int result = 0;
  for (int i = 0; i < 32 / Bits; ++i) {
    int v = op(part<Bits, Signed>(a, i), part<Bits, Signed>(b, i));
    if (Saturated) v = v < lowest ? lowest : (v > highest ? highest : v);
    result |= (static_cast<unsigned int>(v) & ((1u << Bits) - 1u)) << (Bits * i);
  }
  return result;
}
template <int Bits, bool Signed>
inline unsigned int sum_of_absolute_differences(unsigned int a, unsigned int b) {
  unsigned int sum = 0;
  for (int i = 0; i < 32 / Bits; ++i) {
    const int d = part<Bits, Signed>(a, i) - part<Bits, Signed>(b, i);
    sum += static_cast<unsigned int>(d < 0 ? -d : d);
  }
  return sum;
}
// Signed rounded average: half away from zero (the sum's sign decides), as the PTX nvcc
// writes for __vavgs2/__vavgs4 does (test_emulator_intrinsics.py holds that sequence).
inline int rounded_average(int x, int y) {
  const int s = x + y;
  return s >= 0 ? (s + 1) >> 1 : s >> 1;
}
}  // namespace aotc_emu::simd

// NAME2 and NAME4 of two arguments, or of one (the unary forms).
#define AOTC_EMU_SIMD_BINARY(NAME, SIGNED, SATURATED, EXPRESSION)                                         \
  static inline unsigned int NAME##2(unsigned int a, unsigned int b) {                                    \
    return ::aotc_emu::simd::lanes<16, SIGNED, SATURATED>(a, b, [](int x, int y) { return EXPRESSION; }); \
  }                                                                                                       \
  static inline unsigned int NAME##4(unsigned int a, unsigned int b) {                                    \
    return ::aotc_emu::simd::lanes<8, SIGNED, SATURATED>(a, b, [](int x, int y) { return EXPRESSION; });  \
  }
#define AOTC_EMU_SIMD_UNARY(NAME, SATURATED, EXPRESSION)                                                  \
  static inline unsigned int NAME##2(unsigned int a) {                                                    \
    return ::aotc_emu::simd::lanes<16, true, SATURATED>(a, 0u, [](int x, int) { return EXPRESSION; });    \
  }                                                                                                       \
  static inline unsigned int NAME##4(unsigned int a) {                                                    \
    return ::aotc_emu::simd::lanes<8, true, SATURATED>(a, 0u, [](int x, int) { return EXPRESSION; });     \
  }
#define AOTC_EMU_SIMD_COMPARE(SUFFIX, SIGNED, OP)                        \
  AOTC_EMU_SIMD_BINARY(__vcmp##SUFFIX, SIGNED, false, (x OP y) ? -1 : 0) \
  AOTC_EMU_SIMD_BINARY(__vset##SUFFIX, SIGNED, false, (x OP y) ? 1 : 0)

AOTC_EMU_SIMD_BINARY(__vadd, false, false, x + y)
AOTC_EMU_SIMD_BINARY(__vsub, false, false, x - y)
AOTC_EMU_SIMD_BINARY(__vaddss, true, true, x + y)
AOTC_EMU_SIMD_BINARY(__vaddus, false, true, x + y)
AOTC_EMU_SIMD_BINARY(__vsubss, true, true, x - y)
AOTC_EMU_SIMD_BINARY(__vsubus, false, true, x - y)
AOTC_EMU_SIMD_BINARY(__vavgs, true, false, ::aotc_emu::simd::rounded_average(x, y))
AOTC_EMU_SIMD_BINARY(__vavgu, false, false, (x + y + 1) >> 1)
AOTC_EMU_SIMD_BINARY(__vhaddu, false, false, (x + y) >> 1)
AOTC_EMU_SIMD_BINARY(__vabsdiffs, true, false, x > y ? x - y : y - x)
AOTC_EMU_SIMD_BINARY(__vabsdiffu, false, false, x > y ? x - y : y - x)
AOTC_EMU_SIMD_BINARY(__vmaxs, true, false, x > y ? x : y)
AOTC_EMU_SIMD_BINARY(__vmaxu, false, false, x > y ? x : y)
AOTC_EMU_SIMD_BINARY(__vmins, true, false, x < y ? x : y)
AOTC_EMU_SIMD_BINARY(__vminu, false, false, x < y ? x : y)
AOTC_EMU_SIMD_COMPARE(eq, false, ==)
AOTC_EMU_SIMD_COMPARE(ne, false, !=)
AOTC_EMU_SIMD_COMPARE(ges, true, >=)
AOTC_EMU_SIMD_COMPARE(geu, false, >=)
AOTC_EMU_SIMD_COMPARE(gts, true, >)
AOTC_EMU_SIMD_COMPARE(gtu, false, >)
AOTC_EMU_SIMD_COMPARE(les, true, <=)
AOTC_EMU_SIMD_COMPARE(leu, false, <=)
AOTC_EMU_SIMD_COMPARE(lts, true, <)
AOTC_EMU_SIMD_COMPARE(ltu, false, <)
AOTC_EMU_SIMD_UNARY(__vabs, false, x < 0 ? -x : x)
AOTC_EMU_SIMD_UNARY(__vabsss, true, x < 0 ? -x : x)
AOTC_EMU_SIMD_UNARY(__vneg, false, -x)
AOTC_EMU_SIMD_UNARY(__vnegss, true, -x)
#undef AOTC_EMU_SIMD_COMPARE
#undef AOTC_EMU_SIMD_UNARY
#undef AOTC_EMU_SIMD_BINARY

static inline unsigned int __vsads2(unsigned int a, unsigned int b) {
  return ::aotc_emu::simd::sum_of_absolute_differences<16, true>(a, b);
}
static inline unsigned int __vsads4(unsigned int a, unsigned int b) {
  return ::aotc_emu::simd::sum_of_absolute_differences<8, true>(a, b);
}
static inline unsigned int __vsadu2(unsigned int a, unsigned int b) {
  return ::aotc_emu::simd::sum_of_absolute_differences<16, false>(a, b);
}
static inline unsigned int __vsadu4(unsigned int a, unsigned int b) {
  return ::aotc_emu::simd::sum_of_absolute_differences<8, false>(a, b);
}
