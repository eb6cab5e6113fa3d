// Warp-level bugs, one of each class the sync and race checks name
// (tests/runtime/test_emulator_warps.py); each runs without error on a GPU
// only by luck, or hangs.

// Lanes 0-15 shuffle with a full mask; lanes 16-31 go on to the barrier.
extern "C" __global__ void shuffle_in_branch(float* out) {
  float v = static_cast<float>(threadIdx.x);
  if (threadIdx.x % 32 < 16) v += __shfl_xor_sync(0xFFFFFFFFu, v, 1);
  __syncthreads();
  out[threadIdx.x] = v;
}

// The whole warp votes with a mask that names only its lower half.
extern "C" __global__ void vote_outside_mask(const int* in, unsigned* out) {
  out[threadIdx.x] = __ballot_sync(0x0000FFFFu, in[threadIdx.x] > 0);
}

// __syncwarp in a branch that half the warp skips.
extern "C" __global__ void syncwarp_in_branch(int* out) {
  __shared__ int cells[32];
  cells[threadIdx.x] = threadIdx.x;
  if (threadIdx.x < 16) __syncwarp();
  __syncthreads();
  out[threadIdx.x] = cells[31 - threadIdx.x];
}

// The warp-synchronous reduction of old, which trusts lockstep: volatile
// shared memory and no __syncwarp between the steps.
extern "C" __global__ void lockstep_reduction(const int* in, int* out) {
  __shared__ int partial[64];
  const int t = threadIdx.x;
  partial[t] = in[t];
  __syncthreads();
  if (t < 32) {
    volatile int* p = partial;
    p[t] += p[t + 32];
    p[t] += p[t + 16];
    p[t] += p[t + 8];
    p[t] += p[t + 4];
    p[t] += p[t + 2];
    p[t] += p[t + 1];
  }
  __syncthreads();
  if (t == 0) out[blockIdx.x] = partial[0];
}

// Lanes past n return; the rest reduce with a full mask and read them.
extern "C" __global__ void shuffle_from_returned_lane(const float* in, float* out, int n) {
  if (static_cast<int>(threadIdx.x) >= n) return;
  float v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  if (threadIdx.x == 0) out[0] = v;
}
