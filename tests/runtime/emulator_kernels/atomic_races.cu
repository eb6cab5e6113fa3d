// Plain accesses and atomics in one barrier interval (the race check), each
// with `planted` = 0 for the correct kernel and 1 for the one missing a barrier.

// A shared histogram flushed to global counts.
extern "C" __global__ void shared_histogram(const int* values, int n, int* counts, int planted) {
  __shared__ int bins[16];
  if (threadIdx.x < 16) bins[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&bins[values[i] % 16], 1);
  }
  if (!planted) __syncthreads();
  if (threadIdx.x < 16) atomicAdd(&counts[threadIdx.x], bins[threadIdx.x]);
}

// Per-block totals in global memory, read back by thread 0.
extern "C" __global__ void global_totals(const int* values, int* totals, int* copies, int planted) {
  if (threadIdx.x == 0) totals[blockIdx.x] = 0;
  __syncthreads();
  atomicAdd(&totals[blockIdx.x], values[blockIdx.x * blockDim.x + threadIdx.x]);
  if (!planted) __syncthreads();
  if (threadIdx.x == 0) copies[blockIdx.x] = totals[blockIdx.x];
}

// The CAS loop of CUDA's programming guide: a plain read as the first guess,
// which the atomicCAS checks. Clean: the reader updates the word itself.
extern "C" __global__ void cas_add(double* total, const double* values) {
  unsigned long long* bits = reinterpret_cast<unsigned long long*>(total);
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    old = atomicCAS(bits, assumed, __double_as_longlong(values[threadIdx.x] + __longlong_as_double(assumed)));
  } while (assumed != old);
}
