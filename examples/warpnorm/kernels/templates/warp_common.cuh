// Shared by the warpnorm templates through Jinja's {% raw %}{% include %}{% endraw %}, so every
// generated .cu stays one self-contained file. It defines, for element type T:
//   Acc                     the accumulation type: double for f64, float for every other dtype;
//   to_float(T) -> Acc      a load's conversion, overloaded per element type;
//   from_float<T>(Acc) -> T a store's conversion, rounding to nearest even;
//   warp_max, warp_sum      butterfly reductions over the 32 lanes of a warp.
//
// The half types' overloads, and the headers that declare __half and
// __nv_bfloat16, are rendered only for an f16 or bf16 point: an f32 or f64
// kernel names no header (nothing outside itself), so its fatbin stays
// cacheable (docs/design.md, "The fatbin cache"), and adding f16 or bf16 to a
// family's dtype axis changes no template.
{% if dtype in ("f16", "bf16") %}
#include <cuda_fp16.h>
#include <cuda_bf16.h>
{% endif %}

typedef {{ acc | ctype }} Acc;

// Every lane of a warp takes part in each reduction: a warp owns one row, and
// its lanes leave (or stay) together, so the mask is always the whole warp.
#define WARPNORM_FULL_MASK 0xffffffffu

__device__ __forceinline__ Acc to_float(float v) { return (Acc)v; }
__device__ __forceinline__ Acc to_float(double v) { return (Acc)v; }
template <typename T> __device__ __forceinline__ T from_float(Acc v) { return (T)v; }
{% if dtype in ("f16", "bf16") %}
__device__ __forceinline__ Acc to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ Acc to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ __half from_float<__half>(Acc v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(Acc v) { return __float2bfloat16_rn(v); }
{% endif %}

__device__ __forceinline__ float acc_exp(float v) { return expf(v); }
__device__ __forceinline__ double acc_exp(double v) { return exp(v); }
__device__ __forceinline__ float acc_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double acc_max(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ float acc_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double acc_sqrt(double v) { return sqrt(v); }

// Butterfly (xor) reductions: after the five steps every lane holds the
// warp's result, so no broadcast from lane 0 follows. Lanes i and i ^ offset
// add the same two values (a + b == b + a exactly), so all 32 lanes end with
// the same bits, and every lane scales its columns by the same max and sum.
__device__ __forceinline__ Acc warp_max(Acc v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = acc_max(v, __shfl_xor_sync(WARPNORM_FULL_MASK, v, offset));
    return v;
}

__device__ __forceinline__ Acc warp_sum(Acc v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(WARPNORM_FULL_MASK, v, offset);
    return v;
}
