// Kernels for the emulator's checks (AOTC_EMULATOR_CHECK): one clean use of
// each kind of memory, and one violation of each kind that needs no template.

// Reads static __shared__ memory before writing it, in the kernel and in an
// inline helper: each launch must see the poison, not zeros or the last
// launch's values.
__device__ inline unsigned int* helper_tile() {
  __shared__ unsigned int tile[32];
  return tile;
}

extern "C" __global__ void read_static_unwritten(unsigned int* out) {
  __shared__ unsigned int own[32];
  unsigned int* helper = helper_tile();
  out[threadIdx.x] = own[threadIdx.x];
  out[32 + threadIdx.x] = helper[threadIdx.x];
  __syncthreads();
  own[threadIdx.x] = 7;
  helper[threadIdx.x] = 9;
}

// A 16-byte load from an address 4 bytes past a 16-byte boundary.
extern "C" __global__ void misaligned_vector(const float* in, float* out) {
  const float4 v = *reinterpret_cast<const float4*>(in + 4 * threadIdx.x + 1);
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

// Writes one float past the dynamic shared memory the launch asked for.
extern "C" __global__ void dynamic_overrun(float* out, int n) {
  extern __shared__ float buffer[];
  buffer[threadIdx.x + (threadIdx.x == 0 ? n : 0)] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = threadIdx.x == 0 ? 0.0f : buffer[threadIdx.x];
}

// Writes one element past the end of `out`.
extern "C" __global__ void global_overrun(float* out, int n) {
  out[threadIdx.x + 1 == blockDim.x ? n : threadIdx.x] = 2.0f;
}

// A block sum whose helper keeps its warps' partial sums in a __shared__
// array of a function template, and reads them with no barrier after the
// writes: a race on an object that stays out of section aotc_shared.
template <int kWarps>
__device__ float block_sum_without_barrier(float v) {
  __shared__ float partial[kWarps];
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  if (lane == 0) partial[warp] = v;
  return threadIdx.x < kWarps ? partial[lane] : 0.0f;
}

extern "C" __global__ void template_shared_race(const float* in, float* out) {
  const float v = block_sum_without_barrier<4>(in[threadIdx.x]);
  if (threadIdx.x < 4) out[threadIdx.x] = v;
}
