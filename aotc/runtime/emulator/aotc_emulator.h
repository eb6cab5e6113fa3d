// aotc_emulator.h: runs a CUDA kernel source as host C++ with OpenMP.
//
// aotc.runtime.emulator.compile force-includes this header (g++ -include)
// before the .cu, then appends one launch trampoline per kernel symbol.
// Supported subset and its limits: README.md next to this file. How a grid
// runs (blocks one after another, a block's threads as fibers on an OpenMP
// team or as one OpenMP thread each): aotc_emulator_runtime.h.
//
// __shared__ is a function-local `static`: one object that every thread of
// the block sees. Blocks run one at a time, so one object is enough. Every
// such object goes into the ELF section aotc_shared, which each launch fills
// with 0xFF bytes (shared memory starts as garbage on a GPU) and the checks
// shadow byte by byte. (-fno-weak lets objects of inline functions join the
// section; those of function templates stay outside it.)
#pragma once

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "aotc_emulator.h needs C++17 (-std=c++17)"
#endif

// The standard headers come before the CUDA keyword macros below: libstdc++
// uses spellings such as __noinline__ that those macros would break.
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <omp.h>
#include <sys/mman.h>

#if AOTC_EMU_CHECKS  // the checks read the library's own symbols and find libasan
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#endif

#if defined(__x86_64__) && defined(__ELF__) && !defined(AOTC_EMU_UCONTEXT)
#define AOTC_EMU_ASM_SWITCH 1
#else
#define AOTC_EMU_ASM_SWITCH 0
#include <ucontext.h>
#endif

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
// Declared here instead of including <unistd.h>, whose many global names
// (sync, access, link, ...) could collide with a kernel's helper functions.
extern "C" long syscall(long number, ...) noexcept;
#else
#include <condition_variable>
#include <thread>
#endif

#define AOTC_EMULATOR 1

// ---- CUDA keywords ---------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __shared__ static __attribute__((section("aotc_shared")))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __maxnreg__(n)
// __restrict__ and __inline__ are GNU keywords already.

// ---- vector types, with CUDA's alignments ----------------------------------
#define AOTC_VECTOR_TYPES(T, name)                                                      \
  struct name##1 { T x; };                                                              \
  struct __attribute__((aligned(2 * sizeof(T)))) name##2 { T x, y; };                   \
  struct name##3 { T x, y, z; };                                                        \
  struct __attribute__((aligned(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)))) name##4 {    \
    T x, y, z, w;                                                                       \
  };                                                                                    \
  static inline name##1 make_##name##1(T x) { return name##1{x}; }                      \
  static inline name##2 make_##name##2(T x, T y) { return name##2{x, y}; }              \
  static inline name##3 make_##name##3(T x, T y, T z) { return name##3{x, y, z}; }      \
  static inline name##4 make_##name##4(T x, T y, T z, T w) { return name##4{x, y, z, w}; }

AOTC_VECTOR_TYPES(signed char, char)
AOTC_VECTOR_TYPES(unsigned char, uchar)
AOTC_VECTOR_TYPES(short, short)
AOTC_VECTOR_TYPES(unsigned short, ushort)
AOTC_VECTOR_TYPES(int, int)
AOTC_VECTOR_TYPES(unsigned int, uint)
AOTC_VECTOR_TYPES(long, long)
AOTC_VECTOR_TYPES(unsigned long, ulong)
AOTC_VECTOR_TYPES(long long, longlong)
AOTC_VECTOR_TYPES(unsigned long long, ulonglong)
AOTC_VECTOR_TYPES(float, float)
AOTC_VECTOR_TYPES(double, double)
#undef AOTC_VECTOR_TYPES

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

static constexpr int warpSize = 32;

#include "aotc_emulator_runtime.h"

namespace aotc_emu {
namespace detail {
template <class To, class From>
inline To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To to;
  __builtin_memcpy(&to, &from, sizeof(To));
  return to;
}
}  // namespace detail

// The compile step rewrites `extern __shared__ T name[];` to a reference to
// this buffer: every dynamic shared array of a kernel starts at one address,
// as in CUDA. Under the checks the address is hidden from the compiler, as a
// pointer argument's is: an access through the array then takes the
// alignment its type promises, as on a GPU, rather than the one the compiler
// can work out, so that the checks see a float4 one float past it
// (check::misaligned_access).
inline unsigned char* dynamic_shared_memory() {
  unsigned char* buffer = detail::dynamic_shared;
#if AOTC_EMU_CHECKS
  __asm__("" : "+r"(buffer));
#endif
  return buffer;
}

}  // namespace aotc_emu

// Read-only, like CUDA's built-in variables.
#define threadIdx (::aotc_emu::detail::thread_index())
#define blockIdx (::aotc_emu::detail::block_index())
#define blockDim (::aotc_emu::detail::block_dimension())
#define gridDim (::aotc_emu::detail::grid_dimension())

// ---- synchronization ----------------------------------------------------------
// Each barrier records its call site, so the sync check can tell two apart.
#define AOTC_EMU_CALL_SITE const char* file = __builtin_FILE(), int line = __builtin_LINE()
static inline void __syncthreads(AOTC_EMU_CALL_SITE) { ::aotc_emu::detail::sync_block(false, file, line); }
static inline int __syncthreads_count(int predicate, AOTC_EMU_CALL_SITE) {
  return ::aotc_emu::detail::sync_block(predicate != 0, file, line).arrived_true;
}
static inline int __syncthreads_and(int predicate, AOTC_EMU_CALL_SITE) {
  const auto phase = ::aotc_emu::detail::sync_block(predicate != 0, file, line);
  return phase.arrived_true == phase.arrived;
}
static inline int __syncthreads_or(int predicate, AOTC_EMU_CALL_SITE) {
  return ::aotc_emu::detail::sync_block(predicate != 0, file, line).arrived_true > 0;
}
#undef AOTC_EMU_CALL_SITE
static inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- atomics: CUDA's overload set, relaxed like CUDA's ------------------------
// Always inlined, so that a checked build's report names the kernel's line.
#define AOTC_EMU_INLINE inline __attribute__((always_inline))
// An atomic that accumulates through a compare-and-swap loop says so to the
// race check, which tells a read between such updates (a partial result) from
// one between compare-and-swaps of atomicMax's kind (a guess the loop checks).
#if AOTC_EMU_CHECKS
#define AOTC_EMU_ACCUMULATING const ::aotc_emu::check::Accumulating aotc_emu_accumulating
#else
#define AOTC_EMU_ACCUMULATING
#endif
namespace aotc_emu::detail {

template <bool Accumulates, class T, class Update>
AOTC_EMU_INLINE T atomic_update(T* address, Update update) {
  if constexpr (Accumulates) {
    AOTC_EMU_ACCUMULATING;
    return atomic_update<false>(address, update);
  }
  T old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(address, &old, update(old), true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  return old;
}

// Floating-point updates run on the bits, so NaN and -0.0 compare exactly.
template <class F, class Bits, class Update>
AOTC_EMU_INLINE F atomic_update_floating(F* address, Update update) {
  AOTC_EMU_ACCUMULATING;
  Bits* bits = reinterpret_cast<Bits*>(address);
  Bits old = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    const F old_value = bit_cast<F>(old);
    const Bits next = bit_cast<Bits>(static_cast<F>(update(old_value)));
    if (__atomic_compare_exchange_n(bits, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      return old_value;
    }
  }
}

template <class T>
AOTC_EMU_INLINE T atomic_cas(T* address, T compare, T value) {
  __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;  // holds the old value whether or not the exchange happened
}

}  // namespace aotc_emu::detail

#define AOTC_ATOMIC_INTEGER(SUFFIX, T)                                                      \
  static AOTC_EMU_INLINE T atomicAdd##SUFFIX(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); } \
  static AOTC_EMU_INLINE T atomicExch##SUFFIX(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); } \
  static AOTC_EMU_INLINE T atomicAnd##SUFFIX(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); } \
  static AOTC_EMU_INLINE T atomicOr##SUFFIX(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }   \
  static AOTC_EMU_INLINE T atomicXor##SUFFIX(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); } \
  static AOTC_EMU_INLINE T atomicCAS##SUFFIX(T* p, T compare, T v) { return ::aotc_emu::detail::atomic_cas(p, compare, v); }

#define AOTC_ATOMIC_MINMAX(SUFFIX, T)                                                       \
  static AOTC_EMU_INLINE T atomicMin##SUFFIX(T* p, T v) {                                            \
    return ::aotc_emu::detail::atomic_update<false>(p, [v](T old) { return v < old ? v : old; });  \
  }                                                                                         \
  static AOTC_EMU_INLINE T atomicMax##SUFFIX(T* p, T v) {                                            \
    return ::aotc_emu::detail::atomic_update<false>(p, [v](T old) { return v > old ? v : old; });  \
  }

#define AOTC_ATOMICS(SUFFIX)                                                                 \
  AOTC_ATOMIC_INTEGER(SUFFIX, int)                                                           \
  AOTC_ATOMIC_INTEGER(SUFFIX, unsigned int)                                                  \
  AOTC_ATOMIC_INTEGER(SUFFIX, unsigned long long)                                            \
  AOTC_ATOMIC_MINMAX(SUFFIX, int)                                                            \
  AOTC_ATOMIC_MINMAX(SUFFIX, unsigned int)                                                   \
  AOTC_ATOMIC_MINMAX(SUFFIX, long long)                                                      \
  AOTC_ATOMIC_MINMAX(SUFFIX, unsigned long long)                                             \
  static AOTC_EMU_INLINE int atomicSub##SUFFIX(int* p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); } \
  static AOTC_EMU_INLINE unsigned int atomicSub##SUFFIX(unsigned int* p, unsigned int v) {            \
    return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);                                      \
  }                                                                                          \
  static AOTC_EMU_INLINE unsigned short atomicCAS##SUFFIX(unsigned short* p, unsigned short c, unsigned short v) { \
    return ::aotc_emu::detail::atomic_cas(p, c, v);                                          \
  }                                                                                          \
  static AOTC_EMU_INLINE unsigned int atomicInc##SUFFIX(unsigned int* p, unsigned int limit) {       \
    return ::aotc_emu::detail::atomic_update<true>(                                          \
        p, [limit](unsigned int old) { return old >= limit ? 0u : old + 1u; });              \
  }                                                                                          \
  static AOTC_EMU_INLINE unsigned int atomicDec##SUFFIX(unsigned int* p, unsigned int limit) {       \
    return ::aotc_emu::detail::atomic_update<true>(                                          \
        p, [limit](unsigned int old) { return (old == 0u || old > limit) ? limit : old - 1u; }); \
  }                                                                                          \
  static AOTC_EMU_INLINE float atomicAdd##SUFFIX(float* p, float v) {                                 \
    return ::aotc_emu::detail::atomic_update_floating<float, unsigned int>(                  \
        p, [v](float old) { return old + v; });                                              \
  }                                                                                          \
  static AOTC_EMU_INLINE double atomicAdd##SUFFIX(double* p, double v) {                              \
    return ::aotc_emu::detail::atomic_update_floating<double, unsigned long long>(           \
        p, [v](double old) { return old + v; });                                             \
  }                                                                                          \
  static AOTC_EMU_INLINE float atomicExch##SUFFIX(float* p, float v) {                                \
    return ::aotc_emu::detail::bit_cast<float>(__atomic_exchange_n(                          \
        reinterpret_cast<unsigned int*>(p), ::aotc_emu::detail::bit_cast<unsigned int>(v),   \
        __ATOMIC_RELAXED));                                                                  \
  }

AOTC_ATOMICS()
AOTC_ATOMICS(_block)
AOTC_ATOMICS(_system)
#undef AOTC_ATOMICS
#undef AOTC_ATOMIC_MINMAX
#undef AOTC_ATOMIC_INTEGER

// ---- math and bit intrinsics ----------------------------------------------------
// <math.h> provides fmaxf, fminf, fmax, fmin, isnan, isinf, INFINITY, NAN, ...
// CUDA's min/max: like fminf/fmaxf for floating point (a NaN operand loses).
template <class A, class B,
          std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
static inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) {
    return ::fmin(static_cast<C>(a), static_cast<C>(b));
  } else {
    return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
  }
}
template <class A, class B,
          std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
static inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) {
    return ::fmax(static_cast<C>(a), static_cast<C>(b));
  } else {
    return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
  }
}

static inline float __int_as_float(int v) { return ::aotc_emu::detail::bit_cast<float>(v); }
static inline int __float_as_int(float v) { return ::aotc_emu::detail::bit_cast<int>(v); }
static inline float __uint_as_float(unsigned int v) { return ::aotc_emu::detail::bit_cast<float>(v); }
static inline unsigned int __float_as_uint(float v) { return ::aotc_emu::detail::bit_cast<unsigned int>(v); }
static inline double __longlong_as_double(long long v) { return ::aotc_emu::detail::bit_cast<double>(v); }
static inline long long __double_as_longlong(double v) { return ::aotc_emu::detail::bit_cast<long long>(v); }
static inline int __double2hiint(double v) { return static_cast<int>(__double_as_longlong(v) >> 32); }
static inline int __double2loint(double v) { return static_cast<int>(__double_as_longlong(v)); }
static inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double(static_cast<long long>((static_cast<unsigned long long>(static_cast<unsigned int>(hi)) << 32) |
                                                     static_cast<unsigned int>(lo)));
}

// glibc's math.h declares these (every function f also as __f), but its libm
// exports none of them: define them, with glibc's C linkage where it declared them.
#if defined(__GLIBC__)
#define AOTC_EMU_FAST_MATH(R, NAME, PARAMS, BODY) extern "C" inline R NAME PARAMS noexcept { return BODY; }
#else
#define AOTC_EMU_FAST_MATH(R, NAME, PARAMS, BODY) static inline R NAME PARAMS { return BODY; }
#endif
AOTC_EMU_FAST_MATH(float, __expf, (float x), expf(x))
AOTC_EMU_FAST_MATH(float, __exp10f, (float x), powf(10.0f, x))
AOTC_EMU_FAST_MATH(float, __logf, (float x), logf(x))
AOTC_EMU_FAST_MATH(float, __log2f, (float x), log2f(x))
AOTC_EMU_FAST_MATH(float, __log10f, (float x), log10f(x))
AOTC_EMU_FAST_MATH(float, __powf, (float x, float y), powf(x, y))
AOTC_EMU_FAST_MATH(float, __sinf, (float x), sinf(x))
AOTC_EMU_FAST_MATH(float, __cosf, (float x), cosf(x))
AOTC_EMU_FAST_MATH(float, __tanf, (float x), tanf(x))
#undef AOTC_EMU_FAST_MATH
static inline float __fdividef(float x, float y) { return x / y; }
static inline float fdividef(float x, float y) { return x / y; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
// The standard normal distribution's CDF, and 1 / |(a, b, c)|: computed in
// double, then rounded to float: within the GPU's error bounds. Any infinite
// coordinate gives +0, even beside a NaN, as CUDA documents.
static inline float normcdff(float x) { return static_cast<float>(0.5 * erfc(-static_cast<double>(x) * M_SQRT1_2)); }
static inline float rnorm3df(float a, float b, float c) {
  if (isinf(a) || isinf(b) || isinf(c)) return 0.0f;
  const double x = a, y = b, z = c;
  return static_cast<float>(1.0 / sqrt(x * x + y * y + z * z));
}
static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
// Only round-to-nearest arithmetic: the host's default rounding mode.
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

namespace aotc_emu {
enum Rounding : int { kNearest, kTowardZero, kDown, kUp };

// cvt's float-to-integer (cvt.rni/rzi/rmi/rpi): rounded as asked (to nearest
// even, toward zero, down, up), then clamped to I's range; NaN becomes 0.
// A C cast would be undefined past the range (x86 gives the lowest value).
template <class I, class F>
inline I to_integer(F value, Rounding rounding) {
  if (value != value) return 0;
  const double wide = static_cast<double>(value);  // exact for a float
  const double rounded = rounding == kNearest      ? __builtin_nearbyint(wide)
                         : rounding == kTowardZero ? __builtin_trunc(wide)
                         : rounding == kDown       ? __builtin_floor(wide)
                                                   : __builtin_ceil(wide);
  constexpr int bits = 8 * sizeof(I);
  constexpr unsigned long long highest_bits = std::is_signed_v<I> ? (1ull << (bits - 1)) - 1 : ~0ull >> (64 - bits);
  constexpr I highest = static_cast<I>(highest_bits);
  constexpr I lowest = std::is_signed_v<I> ? static_cast<I>(-static_cast<long long>(highest_bits) - 1) : static_cast<I>(0);
  // A 64-bit highest value (2^63 - 1, 2^64 - 1) becomes 2^63 or 2^64 as a double,
  // the first value past it, so the comparisons stay exact.
  if (rounded <= static_cast<double>(lowest)) return lowest;
  if (rounded >= static_cast<double>(highest)) return highest;
  return static_cast<I>(rounded);
}
}  // namespace aotc_emu

#define AOTC_CONVERSIONS(NAME, FROM, TO)                                                                  \
  static inline TO __##NAME##_rn(FROM v) { return ::aotc_emu::to_integer<TO>(v, ::aotc_emu::kNearest); }    \
  static inline TO __##NAME##_rz(FROM v) { return ::aotc_emu::to_integer<TO>(v, ::aotc_emu::kTowardZero); } \
  static inline TO __##NAME##_rd(FROM v) { return ::aotc_emu::to_integer<TO>(v, ::aotc_emu::kDown); }       \
  static inline TO __##NAME##_ru(FROM v) { return ::aotc_emu::to_integer<TO>(v, ::aotc_emu::kUp); }
AOTC_CONVERSIONS(float2int, float, int)
AOTC_CONVERSIONS(float2uint, float, unsigned int)
AOTC_CONVERSIONS(float2ll, float, long long)
AOTC_CONVERSIONS(float2ull, float, unsigned long long)
AOTC_CONVERSIONS(double2int, double, int)
AOTC_CONVERSIONS(double2uint, double, unsigned int)
AOTC_CONVERSIONS(double2ll, double, long long)
AOTC_CONVERSIONS(double2ull, double, unsigned long long)
#undef AOTC_CONVERSIONS
static inline float __int2float_rn(int v) { return static_cast<float>(v); }
static inline float __uint2float_rn(unsigned int v) { return static_cast<float>(v); }
static inline float __ll2float_rn(long long v) { return static_cast<float>(v); }
static inline float __ull2float_rn(unsigned long long v) { return static_cast<float>(v); }
static inline double __int2double_rn(int v) { return static_cast<double>(v); }
static inline double __ll2double_rn(long long v) { return static_cast<double>(v); }
static inline float __double2float_rn(double v) { return static_cast<float>(v); }

static inline int __popc(unsigned int v) { return __builtin_popcount(v); }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(v)); }
static inline int __clzll(long long v) {
  return v == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(v));
}
static inline int __ffs(int v) { return __builtin_ffs(v); }
static inline int __ffsll(long long v) { return __builtin_ffsll(v); }
static inline unsigned int __brev(unsigned int v) {
  v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
  v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
  v = ((v >> 4) & 0x0F0F0F0Fu) | ((v & 0x0F0F0F0Fu) << 4);
  return __builtin_bswap32(v);
}
static inline unsigned long long __brevll(unsigned long long v) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned int>(v))) << 32) |
         __brev(static_cast<unsigned int>(v >> 32));
}
static inline int __mulhi(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) * b) >> 32);
}
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(a) * b) >> 32);
}
static inline long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
static inline int __mul24(int a, int b) {
  const long long a24 = static_cast<int>(static_cast<unsigned int>(a) << 8) >> 8;
  const long long b24 = static_cast<int>(static_cast<unsigned int>(b) << 8) >> 8;
  return static_cast<int>(static_cast<unsigned int>(a24 * b24));
}
static inline unsigned int __umul24(unsigned int a, unsigned int b) {
  return (a & 0xFFFFFFu) * (b & 0xFFFFFFu);
}
// Byte i of the result is byte (s >> 4i) & 7 of y:x; the rest of s is ignored.
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  const unsigned long long source = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned int result = 0;
  for (int i = 0; i < 4; ++i) result |= static_cast<unsigned int>((source >> (8 * ((s >> (4 * i)) & 7u))) & 0xFFu) << (8 * i);
  return result;
}
// Funnel shifts of hi:lo: the plain forms shift by shift & 31, the _lc/_rc
// forms by min(shift, 32).
static inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
  return static_cast<unsigned int>(((static_cast<unsigned long long>(hi) << 32 | lo) << (shift & 31u)) >> 32);
}
static inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
  return static_cast<unsigned int>(((static_cast<unsigned long long>(hi) << 32 | lo) << (shift < 32u ? shift : 32u)) >> 32);
}
static inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(hi) << 32 | lo) >> (shift & 31u));
}
static inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(hi) << 32 | lo) >> (shift < 32u ? shift : 32u));
}
// |x - y| + z, exact in 64 bits, then kept to 32.
static inline unsigned int __sad(int x, int y, unsigned int z) {
  const long long d = static_cast<long long>(x) - y;
  return static_cast<unsigned int>(d < 0 ? -d : d) + z;
}
static inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return (x > y ? x - y : y - x) + z; }
// Averages, (x + y) >> 1 and (x + y + 1) >> 1, of the exact sums: they never
// overflow. The int __hadd is an exact match for int arguments, so it sits
// beside the half-precision __hadd overloads of cuda_fp16.h and cuda_bf16.h.
static inline int __hadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y) >> 1); }
static inline int __rhadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y + 1) >> 1); }
static inline unsigned int __uhadd(unsigned int x, unsigned int y) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(x) + y) >> 1);
}
static inline unsigned int __urhadd(unsigned int x, unsigned int y) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(x) + y + 1) >> 1);
}
// PTX's fns: the |offset|-th set bit of mask from bit base on (base itself
// counts), toward the top for offset > 0 and the bottom for offset < 0; for
// offset 0, base if its bit is set. 0xFFFFFFFF when there is none. (A base
// past 31 is undefined in CUDA; here it finds nothing.)
static inline unsigned int __fns(unsigned int mask, unsigned int base, int offset) {
  if (base > 31u) return 0xFFFFFFFFu;
  if (offset == 0) return (mask >> base) & 1u ? base : 0xFFFFFFFFu;
  unsigned int count = offset > 0 ? static_cast<unsigned int>(offset) : 0u - static_cast<unsigned int>(offset);
  if (offset > 0) {
    for (unsigned int rest = mask & (~0u << base); rest != 0; rest &= rest - 1) {
      if (--count == 0) return static_cast<unsigned int>(__builtin_ctz(rest));
    }
  } else {
    for (unsigned int rest = mask & (0xFFFFFFFFu >> (31u - base)); rest != 0; rest &= ~(0x80000000u >> __builtin_clz(rest))) {
      if (--count == 0) return static_cast<unsigned int>(31 - __builtin_clz(rest));
    }
  }
  return 0xFFFFFFFFu;
}
// Dot products of packed integers with a 32-bit accumulator that wraps:
// __dp4a of four 8-bit pairs, __dp2a_lo/_hi of two 16-bit parts of a with
// bytes 0-1 or 2-3 of b; signed for the int forms, unsigned for the unsigned.
namespace aotc_emu::detail {
template <class Part, class Bits>
inline Part part(Bits word, int index) {
  return static_cast<Part>(word >> (8 * sizeof(Part) * index));
}
template <class Wide, class Narrow, class Byte, class Bits>
inline Bits dot2(Bits a, Bits b, Bits c, int first_byte) {
  const Bits sum = static_cast<Bits>(static_cast<Wide>(part<Narrow>(a, 0)) * part<Byte>(b, first_byte) +
                                     static_cast<Wide>(part<Narrow>(a, 1)) * part<Byte>(b, first_byte + 1));
  return static_cast<Bits>(static_cast<unsigned int>(sum) + static_cast<unsigned int>(c));
}
}  // namespace aotc_emu::detail
static inline int __dp4a(int a, int b, int c) {
  unsigned int sum = static_cast<unsigned int>(c);
  for (int i = 0; i < 4; ++i) {
    sum += static_cast<unsigned int>(::aotc_emu::detail::part<signed char>(a, i) * ::aotc_emu::detail::part<signed char>(b, i));
  }
  return static_cast<int>(sum);
}
static inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
  for (int i = 0; i < 4; ++i) {
    c += static_cast<unsigned int>(::aotc_emu::detail::part<unsigned char>(a, i)) * ::aotc_emu::detail::part<unsigned char>(b, i);
  }
  return c;
}
static inline int __dp4a(char4 a, char4 b, int c) {
  return __dp4a(::aotc_emu::detail::bit_cast<int>(a), ::aotc_emu::detail::bit_cast<int>(b), c);
}
static inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) {
  return __dp4a(::aotc_emu::detail::bit_cast<unsigned int>(a), ::aotc_emu::detail::bit_cast<unsigned int>(b), c);
}
#define AOTC_EMU_DP2A(NAME, FIRST_BYTE)                                                                          \
  static inline int NAME(int a, int b, int c) {                                                                  \
    return ::aotc_emu::detail::dot2<int, short, signed char>(a, b, c, FIRST_BYTE);                               \
  }                                                                                                              \
  static inline unsigned int NAME(unsigned int a, unsigned int b, unsigned int c) {                              \
    return ::aotc_emu::detail::dot2<unsigned int, unsigned short, unsigned char>(a, b, c, FIRST_BYTE);           \
  }                                                                                                              \
  static inline int NAME(short2 a, char4 b, int c) {                                                             \
    return NAME(::aotc_emu::detail::bit_cast<int>(a), ::aotc_emu::detail::bit_cast<int>(b), c);                  \
  }                                                                                                              \
  static inline unsigned int NAME(ushort2 a, uchar4 b, unsigned int c) {                                         \
    return NAME(::aotc_emu::detail::bit_cast<unsigned int>(a), ::aotc_emu::detail::bit_cast<unsigned int>(b), c); \
  }
AOTC_EMU_DP2A(__dp2a_lo, 0)
AOTC_EMU_DP2A(__dp2a_hi, 2)
#undef AOTC_EMU_DP2A
#include "aotc_emulator_simd.h"

// Cache-hinted loads and stores are plain accesses on the host.
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline T __ldca(const T* p) { return *p; }
template <class T> static inline T __ldcg(const T* p) { return *p; }
template <class T> static inline T __ldcs(const T* p) { return *p; }
template <class T> static inline T __ldlu(const T* p) { return *p; }
template <class T> static inline T __ldcv(const T* p) { return *p; }
template <class T> static inline void __stwb(T* p, T v) { *p = v; }
template <class T> static inline void __stcg(T* p, T v) { *p = v; }
template <class T> static inline void __stcs(T* p, T v) { *p = v; }
template <class T> static inline void __stwt(T* p, T v) { *p = v; }
