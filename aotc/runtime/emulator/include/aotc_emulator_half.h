// aotc_emulator_half.h: __half and __nv_bfloat16 for the emulator, behind
// its cuda_fp16.h and cuda_bf16.h. The types, conversions, arithmetic,
// comparisons, the common math and the pair types (__half2, __nv_bfloat162),
// with CUDA's interface and rounding:
// - every operation rounds its result once, to nearest even, as the GPU's
//   add/sub/mul/div/fma.rn.f16 and .bf16 do. Sums, products and quotients are
//   computed in float and rounded once more: float has more than 2p + 2 bits
//   for both formats (p = 11 and 8), so the double rounding never shows. An
//   fma is computed in double, rounded to odd, then to the format: exact too.
// - conversions from float, double and integers take the _rn, _rz, _rd and
//   _ru roundings; NaN becomes the canonical NaN 0x7FFF, overflow becomes
//   infinity or the largest finite value as the rounding says. Conversions
//   to integers saturate, and NaN becomes 0, as cvt does.
// - math functions (hexp, hsin, hrsqrt, ...) are computed in float and
//   rounded once; the GPU's approximations may differ in the last bit.
#pragma once

struct __half;
struct __nv_bfloat16;

namespace aotc_emu::half {

using ::aotc_emu::Rounding;  // kNearest, kTowardZero, kDown, kUp (aotc_emulator.h)
using ::aotc_emu::kDown;
using ::aotc_emu::kNearest;
using ::aotc_emu::kTowardZero;
using ::aotc_emu::kUp;

// A 16-bit float format: bits of mantissa, least and greatest exponent.
template <int Mantissa, int MinExponent, int MaxExponent>
struct Format {
  static constexpr int kMantissa = Mantissa, kMinExponent = MinExponent, kMaxExponent = MaxExponent;
  static constexpr unsigned kInfinity = static_cast<unsigned>(MaxExponent - MinExponent + 2) << Mantissa;
};
using Binary16 = Format<10, -14, 15>;
using BFloat16 = Format<7, -126, 127>;
constexpr unsigned short kCanonicalNaN = 0x7FFF;

// The bits of negative * significand * 2^exponent in format F, rounded once.
template <class F>
inline unsigned short encode(bool negative, int exponent, unsigned long long significand, Rounding rounding) {
  const unsigned sign = negative ? 0x8000u : 0u;
  if (significand == 0) return static_cast<unsigned short>(sign);
  const int leading = exponent + 63 - __builtin_clzll(significand);
  bool up;
  unsigned magnitude;
  if (leading > F::kMaxExponent) {
    magnitude = F::kInfinity - 1;
    up = rounding == kNearest || (rounding == kDown && negative) || (rounding == kUp && !negative);
  } else {
    const int ulp = (leading > F::kMinExponent ? leading : F::kMinExponent) - F::kMantissa;
    const int shift = ulp - exponent;
    unsigned long long kept;
    unsigned __int128 rest = 0, half_ulp = 0;
    if (shift <= 0) {
      kept = significand << -shift;
    } else if (shift < 127) {
      const unsigned __int128 wide = significand;
      kept = static_cast<unsigned long long>(wide >> shift);
      rest = wide & ((static_cast<unsigned __int128>(1) << shift) - 1);
      half_ulp = static_cast<unsigned __int128>(1) << (shift - 1);
    } else {
      kept = 0;
      rest = significand;
      half_ulp = ~static_cast<unsigned __int128>(0);  // beyond any rest: never rounds to nearest upward
    }
    magnitude = (static_cast<unsigned>(ulp + F::kMantissa - F::kMinExponent) << F::kMantissa) + static_cast<unsigned>(kept);
    if (rounding == kNearest) {
      up = rest > half_ulp || (rest == half_ulp && rest != 0 && (kept & 1u) != 0);
    } else {
      up = rest != 0 && ((rounding == kDown && negative) || (rounding == kUp && !negative));
    }
  }
  return static_cast<unsigned short>(sign | (magnitude + (up ? 1u : 0u)));
}

template <class F>
inline unsigned short from_float(float value, Rounding rounding) {
  unsigned bits;
  __builtin_memcpy(&bits, &value, 4);
  const bool negative = (bits >> 31) != 0;
  const unsigned field = (bits >> 23) & 0xFFu, fraction = bits & 0x7FFFFFu;
  if (field == 0xFFu) return fraction != 0 ? kCanonicalNaN : static_cast<unsigned short>((negative ? 0x8000u : 0u) | F::kInfinity);
  if (field == 0) return encode<F>(negative, -149, fraction, rounding);
  return encode<F>(negative, static_cast<int>(field) - 150, fraction | 0x800000u, rounding);
}

template <class F>
inline unsigned short from_double(double value, Rounding rounding) {
  unsigned long long bits;
  __builtin_memcpy(&bits, &value, 8);
  const bool negative = (bits >> 63) != 0;
  const unsigned field = static_cast<unsigned>(bits >> 52) & 0x7FFu;
  const unsigned long long fraction = bits & 0xFFFFFFFFFFFFFull;
  if (field == 0x7FFu) return fraction != 0 ? kCanonicalNaN : static_cast<unsigned short>((negative ? 0x8000u : 0u) | F::kInfinity);
  if (field == 0) return encode<F>(negative, -1074, fraction, rounding);
  return encode<F>(negative, static_cast<int>(field) - 1075, fraction | (1ull << 52), rounding);
}

template <class F, class I>
inline unsigned short from_integer(I value, Rounding rounding) {
  const bool negative = value < 0;
  const unsigned long long magnitude =
      negative ? 0ull - static_cast<unsigned long long>(value) : static_cast<unsigned long long>(value);
  return encode<F>(negative, 0, magnitude, rounding);
}

// Exact: every value of both formats is a float.
template <class F>
inline float to_float(unsigned short bits) {
  unsigned result;
  if (F::kMantissa == 7) {
    result = static_cast<unsigned>(bits) << 16;
  } else {
    const unsigned sign = static_cast<unsigned>(bits & 0x8000u) << 16;
    const unsigned field = (bits >> 10) & 0x1Fu, fraction = bits & 0x3FFu;
    if (field == 0x1Fu) {
      result = sign | 0x7F800000u | (fraction << 13);
    } else if (field != 0) {
      result = sign | ((field + 112u) << 23) | (fraction << 13);
    } else {
      const float magnitude = static_cast<float>(fraction) * 0x1p-24f;
      __builtin_memcpy(&result, &magnitude, 4);
      result |= sign;
    }
  }
  float value;
  __builtin_memcpy(&value, &result, 4);
  return value;
}

// cvt's float-to-integer: rounded as asked, saturated, NaN to 0 (aotc_emulator.h).
template <class I>
inline I to_integer(float value, Rounding rounding) {
  return ::aotc_emu::to_integer<I, float>(value, rounding);
}

// a * b + c rounded once to format F: the product of two 16-bit floats is
// exact in double; the sum is rounded to odd there, which leaves the
// rounding to F correct.
template <class F>
inline unsigned short fused_multiply_add(float a, float b, float c) {
  const double product = static_cast<double>(a) * static_cast<double>(b);
  double sum = product + static_cast<double>(c);
  if (sum == sum && __builtin_isfinite(sum)) {
    const double back = sum - product;
    const double error = (product - (sum - back)) + (static_cast<double>(c) - back);
    unsigned long long bits;
    __builtin_memcpy(&bits, &sum, 8);
    if (error != 0.0 && (bits & 1u) == 0) {
      bits += (error > 0.0) == (sum > 0.0) ? 1 : -1;
      __builtin_memcpy(&sum, &bits, 8);
    }
  }
  return from_double<F>(sum, kNearest);
}

template <class T>
inline unsigned short bits_of(T value) {
  static_assert(sizeof(T) == 2, "a 16-bit float");
  unsigned short bits;
  __builtin_memcpy(&bits, &value, 2);
  return bits;
}

template <class T>
inline T from_bits(unsigned short bits) {
  T value;
  __builtin_memcpy(&value, &bits, 2);
  return value;
}

inline float saturate(float value) { return value > 0.0f ? (value < 1.0f ? value : 1.0f) : 0.0f; }  // NaN: +0

}  // namespace aotc_emu::half

struct __half_raw {
  unsigned short x;
};
struct __align__(4) __half2_raw {
  unsigned short x, y;
};
struct __nv_bfloat16_raw {
  unsigned short x;
};
struct __align__(4) __nv_bfloat162_raw {
  unsigned short x, y;
};

// One 16-bit float type with CUDA's members: NAME is __half or
// __nv_bfloat16, RAW its raw struct, FORMAT its aotc_emu::half format, OTHER
// the other type (an explicit conversion).
#define AOTC_EMU_FLOAT16_TYPE(NAME, RAW, FORMAT, OTHER)                                                        \
  struct __align__(2) NAME {                                                                                  \
   protected:                                                                                                 \
    unsigned short __x;                                                                                       \
                                                                                                              \
   public:                                                                                                    \
    NAME() = default;                                                                                         \
    constexpr NAME(const RAW& raw) : __x(raw.x) {}                                                            \
    NAME& operator=(const RAW& raw) {                                                                         \
      __x = raw.x;                                                                                            \
      return *this;                                                                                           \
    }                                                                                                         \
    operator RAW() const { return RAW{__x}; }                                                                 \
    explicit NAME(const OTHER value);                                                                         \
    NAME(const float f) : __x(::aotc_emu::half::from_float<FORMAT>(f, ::aotc_emu::half::kNearest)) {}         \
    NAME(const double f) : __x(::aotc_emu::half::from_double<FORMAT>(f, ::aotc_emu::half::kNearest)) {}       \
    NAME(const short v) : __x(::aotc_emu::half::from_integer<FORMAT>(v, ::aotc_emu::half::kNearest)) {}       \
    NAME(const unsigned short v) : __x(::aotc_emu::half::from_integer<FORMAT>(v, ::aotc_emu::half::kNearest)) {} \
    NAME(const int v) : __x(::aotc_emu::half::from_integer<FORMAT>(v, ::aotc_emu::half::kNearest)) {}         \
    NAME(const unsigned int v) : __x(::aotc_emu::half::from_integer<FORMAT>(v, ::aotc_emu::half::kNearest)) {} \
    NAME(const long v) : __x(::aotc_emu::half::from_integer<FORMAT>(v, ::aotc_emu::half::kNearest)) {}        \
    NAME(const unsigned long v) : __x(::aotc_emu::half::from_integer<FORMAT>(v, ::aotc_emu::half::kNearest)) {} \
    NAME(const long long v) : __x(::aotc_emu::half::from_integer<FORMAT>(v, ::aotc_emu::half::kNearest)) {}   \
    NAME(const unsigned long long v) : __x(::aotc_emu::half::from_integer<FORMAT>(v, ::aotc_emu::half::kNearest)) {} \
    operator float() const { return ::aotc_emu::half::to_float<FORMAT>(__x); }                                \
    NAME& operator=(const float f) { return *this = NAME(f); }                                                \
    NAME& operator=(const double f) { return *this = NAME(f); }                                               \
    NAME& operator=(const short v) { return *this = NAME(v); }                                                \
    NAME& operator=(const unsigned short v) { return *this = NAME(v); }                                       \
    NAME& operator=(const int v) { return *this = NAME(v); }                                                  \
    NAME& operator=(const unsigned int v) { return *this = NAME(v); }                                         \
    NAME& operator=(const long long v) { return *this = NAME(v); }                                            \
    NAME& operator=(const unsigned long long v) { return *this = NAME(v); }                                   \
    operator signed char() const { return truncated<signed char>(); }                                         \
    operator unsigned char() const { return truncated<unsigned char>(); }                                     \
    operator char() const { return truncated<char>(); }                                                       \
    operator short() const { return truncated<short>(); }                                                     \
    operator unsigned short() const { return truncated<unsigned short>(); }                                   \
    operator int() const { return truncated<int>(); }                                                         \
    operator unsigned int() const { return truncated<unsigned int>(); }                                       \
    operator long() const { return truncated<long>(); }                                                       \
    operator unsigned long() const { return truncated<unsigned long>(); }                                     \
    operator long long() const { return truncated<long long>(); }                                             \
    operator unsigned long long() const { return truncated<unsigned long long>(); }                           \
    constexpr operator bool() const { return (__x & 0x7FFFu) != 0; }                                          \
                                                                                                              \
   private:                                                                                                   \
    template <class I>                                                                                        \
    I truncated() const {                                                                                     \
      return ::aotc_emu::half::to_integer<I>(static_cast<float>(*this), ::aotc_emu::half::kTowardZero);       \
    }                                                                                                         \
  };

AOTC_EMU_FLOAT16_TYPE(__half, __half_raw, ::aotc_emu::half::Binary16, __nv_bfloat16)
AOTC_EMU_FLOAT16_TYPE(__nv_bfloat16, __nv_bfloat16_raw, ::aotc_emu::half::BFloat16, __half)
#undef AOTC_EMU_FLOAT16_TYPE

inline __half::__half(const __nv_bfloat16 value) : __half(static_cast<float>(value)) {}
inline __nv_bfloat16::__nv_bfloat16(const __half value) : __nv_bfloat16(static_cast<float>(value)) {}

#define AOTC_EMU_FLOAT16_PAIR(NAME, T, RAW)                                                           \
  struct __align__(4) NAME {                                                                         \
    T x, y;                                                                                          \
    NAME() = default;                                                                                \
    constexpr NAME(const T& a, const T& b) : x(a), y(b) {}                                           \
    NAME(const RAW& raw) : x(::aotc_emu::half::from_bits<T>(raw.x)), y(::aotc_emu::half::from_bits<T>(raw.y)) {} \
    NAME& operator=(const RAW& raw) { return *this = NAME(raw); }                                    \
    operator RAW() const {                                                                           \
      return RAW{::aotc_emu::half::bits_of(x), ::aotc_emu::half::bits_of(y)};                        \
    }                                                                                                \
  };

AOTC_EMU_FLOAT16_PAIR(__half2, __half, __half2_raw)
AOTC_EMU_FLOAT16_PAIR(__nv_bfloat162, __nv_bfloat16, __nv_bfloat162_raw)
#undef AOTC_EMU_FLOAT16_PAIR

typedef __half half;
typedef __half2 half2;
typedef __half __nv_half;
typedef __half2 __nv_half2;
typedef __half nv_half;
typedef __half2 nv_half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

namespace aotc_emu::half {
template <class T> struct Traits;
template <> struct Traits<__half> { using F = Binary16; using Pair = __half2; };
template <> struct Traits<__nv_bfloat16> { using F = BFloat16; using Pair = __nv_bfloat162; };

template <class T>
inline T round(float value) {
  return from_bits<T>(from_float<typename Traits<T>::F>(value, kNearest));
}
template <class T>
inline float value(T h) {
  return to_float<typename Traits<T>::F>(bits_of(h));
}
template <class T>
inline bool is_nan(T h) {
  return (bits_of(h) & 0x7FFFu) > Traits<T>::F::kInfinity;
}
template <class T>
inline T maximum(T a, T b, bool nan_wins) {
  if (is_nan(a) || is_nan(b)) {
    if (nan_wins || (is_nan(a) && is_nan(b))) return from_bits<T>(kCanonicalNaN);
    return is_nan(a) ? b : a;
  }
  const float x = value(a), y = value(b);
  if (x == y) return (bits_of(a) & 0x8000u) ? b : a;  // +0 > -0
  return x > y ? a : b;
}
template <class T>
inline T minimum(T a, T b, bool nan_wins) {
  if (is_nan(a) || is_nan(b)) {
    if (nan_wins || (is_nan(a) && is_nan(b))) return from_bits<T>(kCanonicalNaN);
    return is_nan(a) ? b : a;
  }
  const float x = value(a), y = value(b);
  if (x == y) return (bits_of(a) & 0x8000u) ? a : b;  // -0 < +0
  return x < y ? a : b;
}
template <class T>
inline T relu(T h) {
  if (is_nan(h)) return from_bits<T>(kCanonicalNaN);
  return value(h) < 0.0f ? from_bits<T>(0) : h;
}
}  // namespace aotc_emu::half

// ---- what __half and __nv_bfloat16 share: the same names, overloaded ----------------
#define AOTC_EMU_FLOAT16_OPERATIONS(T, P)                                                                 \
  static inline T __hadd(const T a, const T b) { return ::aotc_emu::half::round<T>(static_cast<float>(a) + static_cast<float>(b)); } \
  static inline T __hsub(const T a, const T b) { return ::aotc_emu::half::round<T>(static_cast<float>(a) - static_cast<float>(b)); } \
  static inline T __hmul(const T a, const T b) { return ::aotc_emu::half::round<T>(static_cast<float>(a) * static_cast<float>(b)); } \
  static inline T __hdiv(const T a, const T b) { return ::aotc_emu::half::round<T>(static_cast<float>(a) / static_cast<float>(b)); } \
  static inline T __hadd_rn(const T a, const T b) { return __hadd(a, b); }                                \
  static inline T __hsub_rn(const T a, const T b) { return __hsub(a, b); }                                \
  static inline T __hmul_rn(const T a, const T b) { return __hmul(a, b); }                                \
  static inline T __hadd_sat(const T a, const T b) { return ::aotc_emu::half::round<T>(::aotc_emu::half::saturate(static_cast<float>(__hadd(a, b)))); } \
  static inline T __hsub_sat(const T a, const T b) { return ::aotc_emu::half::round<T>(::aotc_emu::half::saturate(static_cast<float>(__hsub(a, b)))); } \
  static inline T __hmul_sat(const T a, const T b) { return ::aotc_emu::half::round<T>(::aotc_emu::half::saturate(static_cast<float>(__hmul(a, b)))); } \
  static inline T __hfma(const T a, const T b, const T c) {                                               \
    return ::aotc_emu::half::from_bits<T>(::aotc_emu::half::fused_multiply_add<::aotc_emu::half::Traits<T>::F>( \
        static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));                            \
  }                                                                                                       \
  static inline T __hfma_sat(const T a, const T b, const T c) {                                           \
    return ::aotc_emu::half::round<T>(::aotc_emu::half::saturate(static_cast<float>(__hfma(a, b, c))));  \
  }                                                                                                       \
  static inline T __hfma_relu(const T a, const T b, const T c) { return ::aotc_emu::half::relu(__hfma(a, b, c)); } \
  static inline T __hneg(const T a) { return ::aotc_emu::half::from_bits<T>(::aotc_emu::half::bits_of(a) ^ 0x8000u); } \
  static inline T __habs(const T a) { return ::aotc_emu::half::from_bits<T>(::aotc_emu::half::bits_of(a) & 0x7FFFu); } \
  static inline T __hmax(const T a, const T b) { return ::aotc_emu::half::maximum(a, b, false); }         \
  static inline T __hmin(const T a, const T b) { return ::aotc_emu::half::minimum(a, b, false); }         \
  static inline T __hmax_nan(const T a, const T b) { return ::aotc_emu::half::maximum(a, b, true); }      \
  static inline T __hmin_nan(const T a, const T b) { return ::aotc_emu::half::minimum(a, b, true); }      \
  static inline bool __heq(const T a, const T b) { return static_cast<float>(a) == static_cast<float>(b); } \
  static inline bool __hne(const T a, const T b) { return static_cast<float>(a) < static_cast<float>(b) || static_cast<float>(a) > static_cast<float>(b); } \
  static inline bool __hlt(const T a, const T b) { return static_cast<float>(a) < static_cast<float>(b); } \
  static inline bool __hle(const T a, const T b) { return static_cast<float>(a) <= static_cast<float>(b); } \
  static inline bool __hgt(const T a, const T b) { return static_cast<float>(a) > static_cast<float>(b); } \
  static inline bool __hge(const T a, const T b) { return static_cast<float>(a) >= static_cast<float>(b); } \
  static inline bool __hequ(const T a, const T b) { return !__hne(a, b); }                                \
  static inline bool __hneu(const T a, const T b) { return !__heq(a, b); }                                \
  static inline bool __hltu(const T a, const T b) { return !__hge(a, b); }                                \
  static inline bool __hleu(const T a, const T b) { return !__hgt(a, b); }                                \
  static inline bool __hgtu(const T a, const T b) { return !__hle(a, b); }                                \
  static inline bool __hgeu(const T a, const T b) { return !__hlt(a, b); }                                \
  static inline bool __hisnan(const T a) { return ::aotc_emu::half::is_nan(a); }                          \
  static inline int __hisinf(const T a) {                                                                 \
    const unsigned short bits = ::aotc_emu::half::bits_of(a);                                             \
    if ((bits & 0x7FFFu) != ::aotc_emu::half::Traits<T>::F::kInfinity) return 0;                         \
    return (bits & 0x8000u) ? -1 : 1;                                                                     \
  }                                                                                                       \
  static inline T hsqrt(const T a) { return ::aotc_emu::half::round<T>(sqrtf(static_cast<float>(a))); }   \
  static inline T hrsqrt(const T a) { return ::aotc_emu::half::round<T>(1.0f / sqrtf(static_cast<float>(a))); } \
  static inline T hrcp(const T a) { return ::aotc_emu::half::round<T>(1.0f / static_cast<float>(a)); }    \
  static inline T hexp(const T a) { return ::aotc_emu::half::round<T>(expf(static_cast<float>(a))); }     \
  static inline T hexp2(const T a) { return ::aotc_emu::half::round<T>(exp2f(static_cast<float>(a))); }   \
  static inline T hexp10(const T a) { return ::aotc_emu::half::round<T>(powf(10.0f, static_cast<float>(a))); } \
  static inline T hlog(const T a) { return ::aotc_emu::half::round<T>(logf(static_cast<float>(a))); }     \
  static inline T hlog2(const T a) { return ::aotc_emu::half::round<T>(log2f(static_cast<float>(a))); }   \
  static inline T hlog10(const T a) { return ::aotc_emu::half::round<T>(log10f(static_cast<float>(a))); } \
  static inline T hsin(const T a) { return ::aotc_emu::half::round<T>(sinf(static_cast<float>(a))); }     \
  static inline T hcos(const T a) { return ::aotc_emu::half::round<T>(cosf(static_cast<float>(a))); }     \
  static inline T htanh(const T a) { return ::aotc_emu::half::round<T>(tanhf(static_cast<float>(a))); }   \
  static inline T htanh_approx(const T a) { return htanh(a); }                                            \
  static inline T hceil(const T a) { return ::aotc_emu::half::round<T>(ceilf(static_cast<float>(a))); }   \
  static inline T hfloor(const T a) { return ::aotc_emu::half::round<T>(floorf(static_cast<float>(a))); } \
  static inline T htrunc(const T a) { return ::aotc_emu::half::round<T>(truncf(static_cast<float>(a))); } \
  static inline T hrint(const T a) { return ::aotc_emu::half::round<T>(nearbyintf(static_cast<float>(a))); } \
  static inline T operator+(const T& a, const T& b) { return __hadd(a, b); }                              \
  static inline T operator-(const T& a, const T& b) { return __hsub(a, b); }                              \
  static inline T operator*(const T& a, const T& b) { return __hmul(a, b); }                              \
  static inline T operator/(const T& a, const T& b) { return __hdiv(a, b); }                              \
  static inline T& operator+=(T& a, const T& b) { return a = __hadd(a, b); }                              \
  static inline T& operator-=(T& a, const T& b) { return a = __hsub(a, b); }                              \
  static inline T& operator*=(T& a, const T& b) { return a = __hmul(a, b); }                              \
  static inline T& operator/=(T& a, const T& b) { return a = __hdiv(a, b); }                              \
  static inline T& operator++(T& a) { return a = __hadd(a, T(1.0f)); }                                    \
  static inline T& operator--(T& a) { return a = __hsub(a, T(1.0f)); }                                    \
  static inline T operator++(T& a, int) { const T old = a; ++a; return old; }                             \
  static inline T operator--(T& a, int) { const T old = a; --a; return old; }                             \
  static inline T operator+(const T& a) { return a; }                                                     \
  static inline T operator-(const T& a) { return __hneg(a); }                                             \
  static inline bool operator==(const T& a, const T& b) { return __heq(a, b); }                           \
  static inline bool operator!=(const T& a, const T& b) { return __hneu(a, b); }                          \
  static inline bool operator<(const T& a, const T& b) { return __hlt(a, b); }                            \
  static inline bool operator<=(const T& a, const T& b) { return __hle(a, b); }                           \
  static inline bool operator>(const T& a, const T& b) { return __hgt(a, b); }                            \
  static inline bool operator>=(const T& a, const T& b) { return __hge(a, b); }                           \
  /* pairs: each half on its own, as the GPU's .f16x2 and .bf16x2 instructions */                         \
  static inline P __hadd2(const P a, const P b) { return P(__hadd(a.x, b.x), __hadd(a.y, b.y)); }         \
  static inline P __hsub2(const P a, const P b) { return P(__hsub(a.x, b.x), __hsub(a.y, b.y)); }         \
  static inline P __hmul2(const P a, const P b) { return P(__hmul(a.x, b.x), __hmul(a.y, b.y)); }         \
  static inline P __h2div(const P a, const P b) { return P(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }         \
  static inline P __hadd2_rn(const P a, const P b) { return __hadd2(a, b); }                              \
  static inline P __hsub2_rn(const P a, const P b) { return __hsub2(a, b); }                              \
  static inline P __hmul2_rn(const P a, const P b) { return __hmul2(a, b); }                              \
  static inline P __hadd2_sat(const P a, const P b) { return P(__hadd_sat(a.x, b.x), __hadd_sat(a.y, b.y)); } \
  static inline P __hsub2_sat(const P a, const P b) { return P(__hsub_sat(a.x, b.x), __hsub_sat(a.y, b.y)); } \
  static inline P __hmul2_sat(const P a, const P b) { return P(__hmul_sat(a.x, b.x), __hmul_sat(a.y, b.y)); } \
  static inline P __hfma2(const P a, const P b, const P c) { return P(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); } \
  static inline P __hfma2_sat(const P a, const P b, const P c) { return P(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y)); } \
  static inline P __hfma2_relu(const P a, const P b, const P c) { return P(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y)); } \
  static inline P __hneg2(const P a) { return P(__hneg(a.x), __hneg(a.y)); }                              \
  static inline P __habs2(const P a) { return P(__habs(a.x), __habs(a.y)); }                              \
  static inline P __hmax2(const P a, const P b) { return P(__hmax(a.x, b.x), __hmax(a.y, b.y)); }         \
  static inline P __hmin2(const P a, const P b) { return P(__hmin(a.x, b.x), __hmin(a.y, b.y)); }         \
  static inline P __hmax2_nan(const P a, const P b) { return P(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); } \
  static inline P __hmin2_nan(const P a, const P b) { return P(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); } \
  static inline P __hisnan2(const P a) { return P(T(__hisnan(a.x) ? 1.0f : 0.0f), T(__hisnan(a.y) ? 1.0f : 0.0f)); } \
  static inline P h2sqrt(const P a) { return P(hsqrt(a.x), hsqrt(a.y)); }                                 \
  static inline P h2rsqrt(const P a) { return P(hrsqrt(a.x), hrsqrt(a.y)); }                              \
  static inline P h2rcp(const P a) { return P(hrcp(a.x), hrcp(a.y)); }                                    \
  static inline P h2exp(const P a) { return P(hexp(a.x), hexp(a.y)); }                                    \
  static inline P h2exp2(const P a) { return P(hexp2(a.x), hexp2(a.y)); }                                 \
  static inline P h2exp10(const P a) { return P(hexp10(a.x), hexp10(a.y)); }                              \
  static inline P h2log(const P a) { return P(hlog(a.x), hlog(a.y)); }                                    \
  static inline P h2log2(const P a) { return P(hlog2(a.x), hlog2(a.y)); }                                 \
  static inline P h2log10(const P a) { return P(hlog10(a.x), hlog10(a.y)); }                              \
  static inline P h2sin(const P a) { return P(hsin(a.x), hsin(a.y)); }                                    \
  static inline P h2cos(const P a) { return P(hcos(a.x), hcos(a.y)); }                                    \
  static inline P h2tanh(const P a) { return P(htanh(a.x), htanh(a.y)); }                                 \
  static inline P h2tanh_approx(const P a) { return h2tanh(a); }                                          \
  static inline P h2ceil(const P a) { return P(hceil(a.x), hceil(a.y)); }                                 \
  static inline P h2floor(const P a) { return P(hfloor(a.x), hfloor(a.y)); }                              \
  static inline P h2trunc(const P a) { return P(htrunc(a.x), htrunc(a.y)); }                              \
  static inline P h2rint(const P a) { return P(hrint(a.x), hrint(a.y)); }                                 \
  static inline P operator+(const P& a, const P& b) { return __hadd2(a, b); }                             \
  static inline P operator-(const P& a, const P& b) { return __hsub2(a, b); }                             \
  static inline P operator*(const P& a, const P& b) { return __hmul2(a, b); }                             \
  static inline P operator/(const P& a, const P& b) { return __h2div(a, b); }                             \
  static inline P& operator+=(P& a, const P& b) { return a = __hadd2(a, b); }                             \
  static inline P& operator-=(P& a, const P& b) { return a = __hsub2(a, b); }                             \
  static inline P& operator*=(P& a, const P& b) { return a = __hmul2(a, b); }                             \
  static inline P& operator/=(P& a, const P& b) { return a = __h2div(a, b); }                             \
  static inline P operator+(const P& a) { return a; }                                                     \
  static inline P operator-(const P& a) { return __hneg2(a); }                                            \
  static inline float __low2float(const P a) { return static_cast<float>(a.x); }                         \
  static inline float __high2float(const P a) { return static_cast<float>(a.y); }                         \
  static inline P __lowhigh2highlow(const P a) { return P(a.y, a.x); }                                    \
  static inline T atomicAdd(T* address, T value) {                                                        \
    AOTC_EMU_ACCUMULATING;                                                                                \
    unsigned short* bits = reinterpret_cast<unsigned short*>(address);                                    \
    unsigned short old = *bits, assumed;                                                                  \
    do {                                                                                                  \
      assumed = old;                                                                                      \
      old = atomicCAS(bits, assumed, ::aotc_emu::half::bits_of(__hadd(::aotc_emu::half::from_bits<T>(assumed), value))); \
    } while (old != assumed);                                                                             \
    return ::aotc_emu::half::from_bits<T>(old);                                                           \
  }                                                                                                       \
  static inline P atomicAdd(P* address, P value) {                                                        \
    AOTC_EMU_ACCUMULATING;                                                                                \
    unsigned int* bits = reinterpret_cast<unsigned int*>(address);                                        \
    unsigned int old = *bits, assumed;                                                                    \
    do {                                                                                                  \
      assumed = old;                                                                                      \
      P sum;                                                                                              \
      __builtin_memcpy(&sum, &assumed, 4);                                                                \
      sum = __hadd2(sum, value);                                                                          \
      unsigned int next;                                                                                  \
      __builtin_memcpy(&next, &sum, 4);                                                                   \
      old = atomicCAS(bits, assumed, next);                                                               \
    } while (old != assumed);                                                                             \
    P result;                                                                                             \
    __builtin_memcpy(&result, &old, 4);                                                                   \
    return result;                                                                                        \
  }

AOTC_EMU_FLOAT16_OPERATIONS(__half, __half2)
AOTC_EMU_FLOAT16_OPERATIONS(__nv_bfloat16, __nv_bfloat162)
#undef AOTC_EMU_FLOAT16_OPERATIONS

// Comparisons of pairs: T2 gives 1.0 or 0.0 per half, TB whether both
// halves hold, T2_mask 0xFFFF or 0 per half.
#define AOTC_EMU_PAIR_COMPARISON(NAME)                                                                      \
  static inline __half2 NAME##2(const __half2 a, const __half2 b) {                                         \
    return __half2(__half(NAME(a.x, b.x) ? 1.0f : 0.0f), __half(NAME(a.y, b.y) ? 1.0f : 0.0f));             \
  }                                                                                                         \
  static inline __nv_bfloat162 NAME##2(const __nv_bfloat162 a, const __nv_bfloat162 b) {                    \
    return __nv_bfloat162(__nv_bfloat16(NAME(a.x, b.x) ? 1.0f : 0.0f), __nv_bfloat16(NAME(a.y, b.y) ? 1.0f : 0.0f)); \
  }                                                                                                         \
  static inline unsigned NAME##2_mask(const __half2 a, const __half2 b) {                                   \
    return (NAME(a.x, b.x) ? 0xFFFFu : 0u) | (NAME(a.y, b.y) ? 0xFFFF0000u : 0u);                           \
  }                                                                                                         \
  static inline unsigned NAME##2_mask(const __nv_bfloat162 a, const __nv_bfloat162 b) {                     \
    return (NAME(a.x, b.x) ? 0xFFFFu : 0u) | (NAME(a.y, b.y) ? 0xFFFF0000u : 0u);                           \
  }
AOTC_EMU_PAIR_COMPARISON(__heq)
AOTC_EMU_PAIR_COMPARISON(__hne)
AOTC_EMU_PAIR_COMPARISON(__hlt)
AOTC_EMU_PAIR_COMPARISON(__hle)
AOTC_EMU_PAIR_COMPARISON(__hgt)
AOTC_EMU_PAIR_COMPARISON(__hge)
AOTC_EMU_PAIR_COMPARISON(__hequ)
AOTC_EMU_PAIR_COMPARISON(__hneu)
AOTC_EMU_PAIR_COMPARISON(__hltu)
AOTC_EMU_PAIR_COMPARISON(__hleu)
AOTC_EMU_PAIR_COMPARISON(__hgtu)
AOTC_EMU_PAIR_COMPARISON(__hgeu)
#undef AOTC_EMU_PAIR_COMPARISON
#define AOTC_EMU_PAIR_BOTH(NAME, EACH)                                                                   \
  static inline bool NAME(const __half2 a, const __half2 b) { return EACH(a.x, b.x) && EACH(a.y, b.y); } \
  static inline bool NAME(const __nv_bfloat162 a, const __nv_bfloat162 b) { return EACH(a.x, b.x) && EACH(a.y, b.y); }
AOTC_EMU_PAIR_BOTH(__hbeq2, __heq)
AOTC_EMU_PAIR_BOTH(__hbne2, __hne)
AOTC_EMU_PAIR_BOTH(__hblt2, __hlt)
AOTC_EMU_PAIR_BOTH(__hble2, __hle)
AOTC_EMU_PAIR_BOTH(__hbgt2, __hgt)
AOTC_EMU_PAIR_BOTH(__hbge2, __hge)
AOTC_EMU_PAIR_BOTH(__hbequ2, __hequ)
AOTC_EMU_PAIR_BOTH(__hbneu2, __hneu)
AOTC_EMU_PAIR_BOTH(__hbltu2, __hltu)
AOTC_EMU_PAIR_BOTH(__hbleu2, __hleu)
AOTC_EMU_PAIR_BOTH(__hbgtu2, __hgtu)
AOTC_EMU_PAIR_BOTH(__hbgeu2, __hgeu)
#undef AOTC_EMU_PAIR_BOTH
static inline bool operator==(const __half2& a, const __half2& b) { return __hbeq2(a, b); }
static inline bool operator!=(const __half2& a, const __half2& b) { return __hbneu2(a, b); }
static inline bool operator<(const __half2& a, const __half2& b) { return __hblt2(a, b); }
static inline bool operator<=(const __half2& a, const __half2& b) { return __hble2(a, b); }
static inline bool operator>(const __half2& a, const __half2& b) { return __hbgt2(a, b); }
static inline bool operator>=(const __half2& a, const __half2& b) { return __hbge2(a, b); }
static inline bool operator==(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hbeq2(a, b); }
static inline bool operator!=(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hbneu2(a, b); }
static inline bool operator<(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hblt2(a, b); }
static inline bool operator<=(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hble2(a, b); }
static inline bool operator>(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hbgt2(a, b); }
static inline bool operator>=(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hbge2(a, b); }

// ---- conversions, by the names of each header ---------------------------------------------
// TO names the type in conversions to it (__float2half, __int2bfloat16_rn),
// FROM in conversions from it (__half2float, __bfloat162int_rn), AS in bit
// casts, PAIR_NAME the pair (__floats2half2_rn).
#define AOTC_EMU_FLOAT16_CONVERSIONS(T, P, TO, FROM, AS, PAIR_NAME)                                           \
  static inline T __float2##TO(const float a) { return T(a); }                                                \
  static inline T __float2##TO##_rn(const float a) { return T(a); }                                           \
  static inline T __float2##TO##_rz(const float a) {                                                          \
    return ::aotc_emu::half::from_bits<T>(::aotc_emu::half::from_float<::aotc_emu::half::Traits<T>::F>(a, ::aotc_emu::half::kTowardZero)); \
  }                                                                                                           \
  static inline T __float2##TO##_rd(const float a) {                                                          \
    return ::aotc_emu::half::from_bits<T>(::aotc_emu::half::from_float<::aotc_emu::half::Traits<T>::F>(a, ::aotc_emu::half::kDown)); \
  }                                                                                                           \
  static inline T __float2##TO##_ru(const float a) {                                                          \
    return ::aotc_emu::half::from_bits<T>(::aotc_emu::half::from_float<::aotc_emu::half::Traits<T>::F>(a, ::aotc_emu::half::kUp)); \
  }                                                                                                           \
  static inline T __double2##TO(const double a) { return T(a); }                                              \
  static inline float FROM##2float(const T a) { return static_cast<float>(a); }                               \
  static inline P __float2##PAIR_NAME##_rn(const float a) { return P(T(a), T(a)); }                           \
  static inline P __floats2##PAIR_NAME##_rn(const float a, const float b) { return P(T(a), T(b)); }           \
  static inline P __float22##PAIR_NAME##_rn(const float2 a) { return P(T(a.x), T(a.y)); }                     \
  static inline float2 FROM##22float2(const P a) { return make_float2(static_cast<float>(a.x), static_cast<float>(a.y)); } \
  static inline T __low2##TO(const P a) { return a.x; }                                                       \
  static inline T __high2##TO(const P a) { return a.y; }                                                      \
  static inline P __halves2##PAIR_NAME(const T a, const T b) { return P(a, b); }                             \
  static inline P FROM##2##PAIR_NAME(const T a) { return P(a, a); }                                           \
  static inline P __lows2##PAIR_NAME(const P a, const P b) { return P(a.x, b.x); }                            \
  static inline P __highs2##PAIR_NAME(const P a, const P b) { return P(a.y, b.y); }                           \
  static inline P __low2##PAIR_NAME(const P a) { return P(a.x, a.x); }                                        \
  static inline P __high2##PAIR_NAME(const P a) { return P(a.y, a.y); }                                       \
  static inline short AS##_as_short(const T a) { return static_cast<short>(::aotc_emu::half::bits_of(a)); }  \
  static inline unsigned short AS##_as_ushort(const T a) { return ::aotc_emu::half::bits_of(a); }             \
  static inline T __short_as_##TO(const short i) { return ::aotc_emu::half::from_bits<T>(static_cast<unsigned short>(i)); } \
  static inline T __ushort_as_##TO(const unsigned short i) { return ::aotc_emu::half::from_bits<T>(i); }      \
  static inline signed char FROM##2char_rz(const T a) { return ::aotc_emu::half::to_integer<signed char>(a, ::aotc_emu::half::kTowardZero); } \
  static inline unsigned char FROM##2uchar_rz(const T a) { return ::aotc_emu::half::to_integer<unsigned char>(a, ::aotc_emu::half::kTowardZero); } \
  AOTC_EMU_FLOAT16_INTEGER(T, TO, FROM, int, int)                                                             \
  AOTC_EMU_FLOAT16_INTEGER(T, TO, FROM, uint, unsigned int)                                                   \
  AOTC_EMU_FLOAT16_INTEGER(T, TO, FROM, short, short)                                                         \
  AOTC_EMU_FLOAT16_INTEGER(T, TO, FROM, ushort, unsigned short)                                               \
  AOTC_EMU_FLOAT16_INTEGER(T, TO, FROM, ll, long long)                                                        \
  AOTC_EMU_FLOAT16_INTEGER(T, TO, FROM, ull, unsigned long long)
#define AOTC_EMU_FLOAT16_INTEGER_ROUNDING(T, TO, FROM, SHORT, I, SUFFIX, ROUNDING)                            \
  static inline I FROM##2##SHORT##SUFFIX(const T a) { return ::aotc_emu::half::to_integer<I>(a, ::aotc_emu::half::ROUNDING); } \
  static inline T __##SHORT##2##TO##SUFFIX(const I i) {                                                       \
    return ::aotc_emu::half::from_bits<T>(::aotc_emu::half::from_integer<::aotc_emu::half::Traits<T>::F>(i, ::aotc_emu::half::ROUNDING)); \
  }
#define AOTC_EMU_FLOAT16_INTEGER(T, TO, FROM, SHORT, I)                          \
  AOTC_EMU_FLOAT16_INTEGER_ROUNDING(T, TO, FROM, SHORT, I, _rn, kNearest)       \
  AOTC_EMU_FLOAT16_INTEGER_ROUNDING(T, TO, FROM, SHORT, I, _rz, kTowardZero)    \
  AOTC_EMU_FLOAT16_INTEGER_ROUNDING(T, TO, FROM, SHORT, I, _rd, kDown)          \
  AOTC_EMU_FLOAT16_INTEGER_ROUNDING(T, TO, FROM, SHORT, I, _ru, kUp)

AOTC_EMU_FLOAT16_CONVERSIONS(__half, __half2, half, __half, __half, half2)
AOTC_EMU_FLOAT16_CONVERSIONS(__nv_bfloat16, __nv_bfloat162, bfloat16, __bfloat16, __bfloat16, bfloat162)
#undef AOTC_EMU_FLOAT16_CONVERSIONS
#undef AOTC_EMU_FLOAT16_INTEGER
#undef AOTC_EMU_FLOAT16_INTEGER_ROUNDING

static inline __half2 make_half2(const __half x, const __half y) { return __half2(x, y); }
static inline __nv_bfloat162 make_bfloat162(const __nv_bfloat16 x, const __nv_bfloat16 y) { return __nv_bfloat162(x, y); }

// Shuffles of the 16-bit types and their pairs, as cuda_fp16.h and cuda_bf16.h add them.
#define AOTC_EMU_FLOAT16_SHUFFLES(T)                                                                          \
  static inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize, AOTC_EMU_SITE) {      \
    return ::aotc_emu::detail::shuffle(::aotc_emu::detail::kShuffleIndex, mask, var, src_lane, width, "__shfl_sync", file, line); \
  }                                                                                                           \
  static inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize, AOTC_EMU_SITE) { \
    return ::aotc_emu::detail::shuffle(::aotc_emu::detail::kShuffleUp, mask, var, static_cast<int>(delta), width, "__shfl_up_sync", file, line); \
  }                                                                                                           \
  static inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize, AOTC_EMU_SITE) { \
    return ::aotc_emu::detail::shuffle(::aotc_emu::detail::kShuffleDown, mask, var, static_cast<int>(delta), width, "__shfl_down_sync", file, line); \
  }                                                                                                           \
  static inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize, AOTC_EMU_SITE) { \
    return ::aotc_emu::detail::shuffle(::aotc_emu::detail::kShuffleXor, mask, var, lane_mask, width, "__shfl_xor_sync", file, line); \
  }
AOTC_EMU_FLOAT16_SHUFFLES(__half)
AOTC_EMU_FLOAT16_SHUFFLES(__half2)
AOTC_EMU_FLOAT16_SHUFFLES(__nv_bfloat16)
AOTC_EMU_FLOAT16_SHUFFLES(__nv_bfloat162)
#undef AOTC_EMU_FLOAT16_SHUFFLES

#define CUDART_INF_FP16 __ushort_as_half(static_cast<unsigned short>(0x7C00U))
#define CUDART_NAN_FP16 __ushort_as_half(static_cast<unsigned short>(0x7FFFU))
#define CUDART_MIN_DENORM_FP16 __ushort_as_half(static_cast<unsigned short>(0x0001U))
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half(static_cast<unsigned short>(0x7BFFU))
#define CUDART_NEG_ZERO_FP16 __ushort_as_half(static_cast<unsigned short>(0x8000U))
#define CUDART_ZERO_FP16 __ushort_as_half(static_cast<unsigned short>(0x0000U))
#define CUDART_ONE_FP16 __ushort_as_half(static_cast<unsigned short>(0x3C00U))
#define CUDART_INF_BF16 __ushort_as_bfloat16(static_cast<unsigned short>(0x7F80U))
#define CUDART_NAN_BF16 __ushort_as_bfloat16(static_cast<unsigned short>(0x7FFFU))
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16(static_cast<unsigned short>(0x0001U))
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16(static_cast<unsigned short>(0x7F7FU))
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16(static_cast<unsigned short>(0x8000U))
#define CUDART_ZERO_BF16 __ushort_as_bfloat16(static_cast<unsigned short>(0x0000U))
#define CUDART_ONE_BF16 __ushort_as_bfloat16(static_cast<unsigned short>(0x3F80U))
