// Atomics under contention: every thread of every block hits the same few
// words, `rounds` times. The totals are exact.
__device__ float atomic_max_float(float* address, float value) {
  // The usual CAS loop on the bits, since CUDA has no float atomicMax.
  int* bits = reinterpret_cast<int*>(address);
  int old = *bits;
  while (__int_as_float(old) < value) {
    const int assumed = old;
    old = atomicCAS(bits, assumed, __float_as_int(value));
    if (old == assumed) break;
  }
  return __int_as_float(old);
}

extern "C" __global__ void contend(float* f_sum, double* d_sum, int* i_sum, unsigned int* u_sum,
                                   unsigned long long* ull_sum, long long* ll_sum, int* i_max, int* i_min,
                                   long long* ll_max, long long* ll_min, unsigned int* u_max,
                                   int* cas_counter, float* f_max, int rounds) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int r = 0; r < rounds; ++r) {
    atomicAdd(f_sum, 1.0f);
    atomicAdd(d_sum, 0.25);
    atomicAdd(i_sum, 1);
    atomicAdd(u_sum, 2u);
    atomicAdd(ull_sum, 1000000007ull);
    // long long has no atomicAdd in CUDA: add through the unsigned view.
    atomicAdd(reinterpret_cast<unsigned long long*>(ll_sum), static_cast<unsigned long long>(-3ll));
    atomicMax(i_max, gid * 7 + r);
    atomicMin(i_min, -gid - r);
    atomicMax(ll_max, static_cast<long long>(gid) << 33);
    atomicMin(ll_min, -(static_cast<long long>(gid) << 33));
    atomicMax(u_max, static_cast<unsigned int>(gid) * 3u);
    int old = *cas_counter, assumed;
    do {
      assumed = old;
      old = atomicCAS(cas_counter, assumed, assumed + 1);
    } while (old != assumed);
    atomic_max_float(f_max, static_cast<float>(gid) * 0.5f);
  }
}

// Shared-memory atomics and __syncthreads_count within each block.
extern "C" __global__ void block_tally(const int* __restrict__ flags, int* block_hits, int* block_counts) {
  __shared__ int hits;
  if (threadIdx.x == 0) hits = 0;
  __syncthreads();
  const int flag = flags[blockIdx.x * blockDim.x + threadIdx.x];
  if (flag) atomicAdd(&hits, 1);
  const int counted = __syncthreads_count(flag);
  if (threadIdx.x == 0) {
    block_hits[blockIdx.x] = hits;
    block_counts[blockIdx.x] = counted;
  }
}
