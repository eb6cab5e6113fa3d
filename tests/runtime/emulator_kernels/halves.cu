// __half and __nv_bfloat16 arithmetic, comparisons and conversions, each
// result as bits, for tests/runtime/test_emulator_halves.py to compare with
// NumPy (float16) and ml_dtypes (bfloat16).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// The conversions whose names differ between the two headers.
__device__ __half from_float(float f, int rounding, __half) {
  return rounding == 0 ? __float2half_rn(f) : rounding == 1 ? __float2half_rz(f)
       : rounding == 2 ? __float2half_rd(f) : __float2half_ru(f);
}
__device__ __nv_bfloat16 from_float(float f, int rounding, __nv_bfloat16) {
  return rounding == 0 ? __float2bfloat16_rn(f) : rounding == 1 ? __float2bfloat16_rz(f)
       : rounding == 2 ? __float2bfloat16_rd(f) : __float2bfloat16_ru(f);
}
__device__ __half from_double(double d, __half) { return __double2half(d); }
__device__ __nv_bfloat16 from_double(double d, __nv_bfloat16) { return __double2bfloat16(d); }
__device__ int to_int(__half h, int rounding) {
  return rounding == 0 ? __half2int_rn(h) : rounding == 1 ? __half2int_rz(h) : rounding == 2 ? __half2int_rd(h) : __half2int_ru(h);
}
__device__ int to_int(__nv_bfloat16 h, int rounding) {
  return rounding == 0 ? __bfloat162int_rn(h) : rounding == 1 ? __bfloat162int_rz(h)
       : rounding == 2 ? __bfloat162int_rd(h) : __bfloat162int_ru(h);
}
__device__ short to_short(__half h) { return __half2short_rn(h); }
__device__ short to_short(__nv_bfloat16 h) { return __bfloat162short_rn(h); }
__device__ unsigned to_uint(__half h) { return __half2uint_rz(h); }
__device__ unsigned to_uint(__nv_bfloat16 h) { return __bfloat162uint_rz(h); }
__device__ __half from_int(int i, int rounding, __half) {
  return rounding == 0 ? __int2half_rn(i) : rounding == 1 ? __int2half_rz(i) : rounding == 2 ? __int2half_rd(i) : __int2half_ru(i);
}
__device__ __nv_bfloat16 from_int(int i, int rounding, __nv_bfloat16) {
  return rounding == 0 ? __int2bfloat16_rn(i) : rounding == 1 ? __int2bfloat16_rz(i)
       : rounding == 2 ? __int2bfloat16_rd(i) : __int2bfloat16_ru(i);
}
__device__ unsigned short bits(__half h) { return __half_as_ushort(h); }
__device__ unsigned short bits(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }

// out[k * n + i]: the k-th result for inputs i, as bits; flags[k * n + i] the
// k-th comparison or integer.
template <class T, class P>
__device__ void operations(const T* a, const T* b, const T* c, const float* f, const double* d, const int* ints,
                           unsigned short* out, int* flags, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const T x = a[i], y = b[i], z = c[i];
  const P pair(x, y);
  const P other = P(y, z);
  unsigned short results[] = {
      bits(__hadd(x, y)), bits(__hsub(x, y)), bits(__hmul(x, y)), bits(__hdiv(x, y)), bits(__hfma(x, y, z)),
      bits(x + y), bits(x * y), bits(-x), bits(__habs(x)), bits(__hmax(x, y)), bits(__hmin(x, y)),
      bits(__hmax_nan(x, y)), bits(__hmin_nan(x, y)), bits(__hadd_sat(x, y)), bits(__hfma_relu(x, y, z)),
      bits(from_float(f[i], 0, x)), bits(from_float(f[i], 1, x)), bits(from_float(f[i], 2, x)), bits(from_float(f[i], 3, x)),
      bits(from_double(d[i], x)),
      bits(from_int(ints[i], 0, x)), bits(from_int(ints[i], 1, x)), bits(from_int(ints[i], 2, x)), bits(from_int(ints[i], 3, x)),
      bits(__hadd2(pair, other).x), bits(__hadd2(pair, other).y), bits(__hmul2(pair, other).y), bits(__hfma2(pair, other, pair).y),
      bits(hsqrt(x)), bits(hexp(x)),
  };
  const int count = sizeof(results) / sizeof(results[0]);
  for (int k = 0; k < count; ++k) out[k * n + i] = results[k];
  int tests[] = {
      __heq(x, y), __hne(x, y), __hlt(x, y), __hle(x, y), __hgt(x, y), __hge(x, y),
      __hequ(x, y), __hneu(x, y), __hltu(x, y), x == y, x != y, x < y,
      __hisnan(x), __hisinf(x), to_int(x, 0), to_int(x, 1), to_int(x, 2), to_int(x, 3), to_short(x),
      static_cast<int>(to_uint(x)), static_cast<int>(static_cast<float>(x) == __low2float(pair)),
      static_cast<int>(__hbeq2(pair, other)), static_cast<int>(__heq2_mask(pair, other)),
  };
  const int tested = sizeof(tests) / sizeof(tests[0]);
  for (int k = 0; k < tested; ++k) flags[k * n + i] = tests[k];
}

extern "C" __global__ void half_operations(const __half* a, const __half* b, const __half* c, const float* f,
                                           const double* d, const int* ints, unsigned short* out, int* flags, int n) {
  operations<__half, __half2>(a, b, c, f, d, ints, out, flags, n);
}

extern "C" __global__ void bfloat16_operations(const __nv_bfloat16* a, const __nv_bfloat16* b, const __nv_bfloat16* c,
                                               const float* f, const double* d, const int* ints, unsigned short* out,
                                               int* flags, int n) {
  operations<__nv_bfloat16, __nv_bfloat162>(a, b, c, f, d, ints, out, flags, n);
}

// A warp-per-row sum of __half2 pairs in float, the way kernels read halves:
// vector loads, __half22float2, a shuffle of the float, one rounding at the end.
extern "C" __global__ void half2_row_sums(const __half2* in, __half* out, int pairs) {
  const int row = blockIdx.x;
  float sum = 0.0f;
  for (int p = threadIdx.x; p < pairs; p += warpSize) {
    const float2 v = __half22float2(in[row * pairs + p]);
    sum += v.x + v.y;
  }
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
  const __half rounded = __float2half(sum);
  const __half broadcast = __shfl_sync(0xFFFFFFFFu, rounded, 0);
  if (threadIdx.x == 0) out[row] = broadcast;
}

// atomicAdd on __half and __nv_bfloat162 from every thread of the block.
extern "C" __global__ void half_atomics(__half* total, __nv_bfloat162* pair, const __half* values) {
  atomicAdd(total, values[threadIdx.x]);
  atomicAdd(pair, __nv_bfloat162(__float2bfloat16(1.0f), __float2bfloat16(0.5f)));
}

// A row softmax as the field writes it: one warp per row, 16-bit inputs and
// outputs, float accumulation, __shfl_xor_sync reductions.
template <class T>
__device__ void softmax_rows(const T* in, T* out, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
  const int lane = threadIdx.x % warpSize;
  if (row >= rows) return;
  const T* x = in + static_cast<long long>(row) * cols;
  float top = -INFINITY;
  for (int c = lane; c < cols; c += warpSize) top = fmaxf(top, static_cast<float>(x[c]));
  for (int offset = 16; offset > 0; offset >>= 1) top = fmaxf(top, __shfl_xor_sync(0xFFFFFFFFu, top, offset));
  float total = 0.0f;
  for (int c = lane; c < cols; c += warpSize) total += __expf(static_cast<float>(x[c]) - top);
  for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_xor_sync(0xFFFFFFFFu, total, offset);
  for (int c = lane; c < cols; c += warpSize) {
    out[static_cast<long long>(row) * cols + c] = T(__expf(static_cast<float>(x[c]) - top) / total);
  }
}

extern "C" __global__ void softmax_f16(const __half* in, __half* out, int rows, int cols) {
  softmax_rows(in, out, rows, cols);
}

extern "C" __global__ void softmax_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols) {
  softmax_rows(in, out, rows, cols);
}

// A 16-bit scalar parameter: the binding passes its bits as a 2-byte value.
extern "C" __global__ void scale_halves(const __half* in, __half* out, __half factor, __nv_bfloat16 offset, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __hadd(__hmul(in[i], factor), __float2half(__bfloat162float(offset)));
}
