// Idioms that are right on every GPU since sm_75, as a stranger writes them:
// each must run clean under AOTC_EMULATOR_CHECK=all with the right result
// (tests/runtime/test_emulator_idioms.py). Then one real bug of each kind,
// each of which the checks must name.
#include <cuda_fp16.h>

// 1. Shared tree reduction, then the last warp unrolled with __syncwarp.
extern "C" __global__ void tree_sum(const float* __restrict__ in, float* out, int n) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) v += in[i];
  s[t] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 32; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t < 32) {
    float w = s[t] + s[t + 32];
    for (int off = 16; off > 0; off >>= 1) {
      __syncwarp();
      s[t] = w;
      __syncwarp();
      if (t < off) w += s[t + off];
    }
    if (t == 0) atomicAdd(out, w);
  }
}

// 2. Block reduction via __shfl_xor_sync per warp, then the first warp.
extern "C" __global__ void xor_block_sum(const int* in, int* out) {
  __shared__ int warp_sums[32];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  int v = in[blockIdx.x * blockDim.x + t];
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int w = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0;
    for (int m = 16; m > 0; m >>= 1) w += __shfl_xor_sync(0xffffffffu, w, m);
    if (lane == 0) out[blockIdx.x] = w;
  }
}

// 3. Votes, activemask in a branch, match_any, warp-aggregated atomic.
extern "C" __global__ void votes(const int* pred, unsigned* ballots, int* anys, int* alls, unsigned* active,
                                 unsigned* groups, int* compact, int* count) {
  const int t = threadIdx.x, lane = t % 32;
  const int p = pred[t];
  unsigned b = __ballot_sync(0xffffffffu, p);
  int a = __any_sync(0xffffffffu, p), l = __all_sync(0xffffffffu, p);
  if (lane == 0) { ballots[t / 32] = b; anys[t / 32] = a; alls[t / 32] = l; }
  if (p) active[t] = __activemask(); else active[t] = 0;
  groups[t] = __match_any_sync(0xffffffffu, p % 4);
  // warp-aggregated append
  if (p) {
    unsigned m = __activemask();
    int leader = __ffs(m) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(m));
    base = __shfl_sync(m, base, leader);
    compact[base + __popc(m & ((1u << lane) - 1))] = t;
  }
}

// 4. Atomics: float CAS atomicMax, grid-stride histogram via shared then global.
__device__ float atomic_max_f(float* addr, float v) {
  int* bits = (int*)addr;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= v) break;
    old = atomicCAS(bits, assumed, __float_as_int(v));
  } while (assumed != old);
  return __int_as_float(old);
}
extern "C" __global__ void histo(const unsigned char* data, int n, unsigned* bins, float* fmax, const float* f, int* isum, float* fsum) {
  __shared__ unsigned local[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&local[data[i]], 1u);
    atomic_max_f(fmax, f[i]);
    atomicAdd(isum, 1);
    atomicAdd(fsum, 0.5f);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += blockDim.x) if (local[i]) atomicAdd(&bins[i], local[i]);
}

// 5. Vector loads, __ldg, half2.
extern "C" __global__ void vec(const float* __restrict__ x, const int* __restrict__ k, float* y, int* z, const __half2* h, __half2* hout, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 a = reinterpret_cast<const float4*>(x)[i];
  float4 b = __ldg(reinterpret_cast<const float4*>(x) + i);
  int4 c = reinterpret_cast<const int4*>(k)[i];
  reinterpret_cast<float4*>(y)[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  reinterpret_cast<int4*>(z)[i] = make_int4(c.x + __ldg(k + 4 * i), c.y, c.z, c.w);
  __half2 hv = h[i];
  hout[i] = __hfma2(hv, __float2half2_rn(2.0f), __hmul2(hv, hv));
}

// 6. Dynamic shared with typed views; double-buffered tile.
extern "C" __global__ void dyn_views(const float* in, const int* keys, float* out, int tile, int tiles) {
  extern __shared__ __align__(16) unsigned char smem[];
  float* buf = reinterpret_cast<float*>(smem);           // 2 * tile floats
  int* kk = reinterpret_cast<int*>(buf + 2 * tile);      // tile ints
  double* acc = reinterpret_cast<double*>(kk + tile + (tile & 1)); // blockDim doubles
  const int t = threadIdx.x;
  acc[t] = 0.0;
  if (t < tile) { buf[t] = in[t]; kk[t] = keys[t]; }
  __syncthreads();
  for (int s = 0; s < tiles; ++s) {
    float* cur = buf + (s & 1) * tile;
    float* nxt = buf + ((s + 1) & 1) * tile;
    if (s + 1 < tiles && t < tile) nxt[t] = in[(s + 1) * tile + t];
    acc[t] += cur[(t + kk[t % tile]) % tile];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + t] = (float)acc[t];
}

// 7. threadFenceReduction: the last block sums the partials.
__device__ unsigned int retirement = 0;
extern "C" __global__ void fence_reduce(const float* in, float* partial, float* total, int n) {
  __shared__ float s[128];
  __shared__ bool am_last;
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int st = blockDim.x / 2; st > 0; st >>= 1) {
    if (t < st) s[t] += s[t + st];
    __syncthreads();
  }
  if (t == 0) {
    partial[blockIdx.x] = s[0];
    __threadfence();
    unsigned ticket = atomicInc(&retirement, gridDim.x);
    am_last = (ticket == gridDim.x - 1);
  }
  __syncthreads();
  if (am_last) {
    float v = 0.0f;
    for (int b = t; b < (int)gridDim.x; b += blockDim.x) v += partial[b];
    s[t] = v;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
      if (t < st) s[t] += s[t + st];
      __syncthreads();
    }
    if (t == 0) { *total = s[0]; retirement = 0; }
  }
}

// 8. Early exit before a barrier that the remaining threads reach.
extern "C" __global__ void early_exit(const float* in, float* out, int n) {
  __shared__ float s[128];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  s[threadIdx.x] = in[i];
  __syncthreads();
  const int live = min((int)blockDim.x, n - (int)(blockIdx.x * blockDim.x));
  out[i] = s[(threadIdx.x + 1) % live];
}

// 9. A handoff between warps: thread 0 spins on a flag that thread 32 sets
// (right on a GPU, whose warps all make progress); the fences order the plain data.
extern "C" __global__ void flag_handoff(int* data, int* flag, int* seen) {
  if (threadIdx.x == 32) {
    *data = 42;
    __threadfence();
    atomicExch(flag, 1);
  } else if (threadIdx.x == 0) {
    while (atomicAdd(flag, 0) == 0) {
    }
    __threadfence();
    *seen = *data;
  }
}

// 11. __syncthreads_count, reduce_add_sync, shfl broadcast.
extern "C" __global__ void misc(const int* p, int* out) {
  int c = __syncthreads_count(p[threadIdx.x]);
  int r = __reduce_add_sync(0xffffffffu, p[threadIdx.x]);
  int b = __shfl_sync(0xffffffffu, r + c, 0);
  out[threadIdx.x] = b;
}

// ---- real bugs ----------------------------------------------------------------------------

// No barrier between the shared write and another thread's read.
extern "C" __global__ void bug_missing_barrier(const int* in, int* out) {
  __shared__ int s[64];
  s[threadIdx.x] = in[threadIdx.x];
  out[threadIdx.x] = s[63 - threadIdx.x];
}

// One element past the end: i <= n.
extern "C" __global__ void bug_one_past(float* out, int n) {
  const int i = threadIdx.x;
  if (i <= n) out[i] = 1.0f;
}

// Thread 0 reads a cell that no thread writes.
extern "C" __global__ void bug_unwritten_shared(int* out) {
  __shared__ int s[64];
  if (threadIdx.x > 0) s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 63) % 64];
}

// A barrier inside a branch that only part of the block takes.
extern "C" __global__ void bug_divergent_barrier(const int* in, int* out) {
  __shared__ int s[64];
  s[threadIdx.x] = in[threadIdx.x];
  if (threadIdx.x < 40) __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x];
  __syncthreads();
}

// The last-warp reduction of old: no volatile, no __syncwarp.
extern "C" __global__ void bug_lockstep_reduction(const int* in, int* out) {
  __shared__ int s[64];
  const int t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  if (t < 32) {
    s[t] += s[t + 32];
    s[t] += s[t + 16];
    s[t] += s[t + 8];
    s[t] += s[t + 4];
    s[t] += s[t + 2];
    s[t] += s[t + 1];
  }
  __syncthreads();
  if (t == 0) *out = s[0];
}
