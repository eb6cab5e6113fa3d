// A mix of what generated kernels use, checked value by value by the tests.
__device__ const int kTable[4] = {3, 5, 7, 11};
__shared__ int file_scope_total;  // __shared__ at namespace scope

__device__ __forceinline__ int block_sum(int value) {
  // A helper with its own __shared__ array and barriers.
  static __shared__ int scratch[64];
  scratch[threadIdx.x] = value;
  __syncthreads();
#pragma unroll 4
  for (int stride = 32; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
    __syncthreads();
  }
  const int total = scratch[0];
  __syncthreads();
  return total;
}

extern "C" __global__ void __launch_bounds__(64, 2) constructs(const int* __restrict__ in, long long* __restrict__ out) {
  const int t = threadIdx.x;
  if (t == 0) file_scope_total = 0;
  __syncthreads();
  atomicAdd_block(&file_scope_total, __ldg(in + t));
  const int sum = block_sum(in[t]);
  const int all_positive = __syncthreads_and(in[t] > 0);
  const int any_big = __syncthreads_or(in[t] > 60);
  if (t == 0) {
    out += 8 * blockIdx.x;  // parameters are per-thread copies
    out[0] = sum;
    out[1] = file_scope_total;
    out[2] = all_positive;
    out[3] = any_big;
    out[4] = kTable[blockIdx.x % 4];
    out[5] = max(static_cast<long long>(-1) << 40, in[1]);  // mixed types: long long
    out[6] = min(3u, 7);                                    // mixed signedness: unsigned
    out[7] = __popc(0xF0F0u) + __clz(1) + __ffs(8);
  }
}
