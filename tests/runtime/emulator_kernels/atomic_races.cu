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

// The float atomicMax many kernels write: a plain first read of the word, an
// early exit when the value is not larger, else a compare-and-swap loop.
// Right on every GPU: the word only grows, so any value read is a safe guess.
__device__ void float_atomic_max(float* address, float value) {
  int* bits = reinterpret_cast<int*>(address);
  int old = *bits;
  if (__int_as_float(old) >= value) return;
  int assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= value) return;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (old != assumed);
}

// The same for a minimum.
__device__ void float_atomic_min(float* address, float value) {
  int* bits = reinterpret_cast<int*>(address);
  int old = *bits;
  if (__int_as_float(old) <= value) return;
  int assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) <= value) return;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (old != assumed);
}

// The maximum and minimum of `values` in extrema[0] and [1]: straight into
// global memory, and through a block's shared pair flushed after its barrier.
extern "C" __global__ void float_extrema(const float* values, int n, float* extrema, int through_shared) {
  __shared__ float block_extrema[2];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (through_shared) {
    if (threadIdx.x == 0) {
      block_extrema[0] = -INFINITY;
      block_extrema[1] = INFINITY;
    }
    __syncthreads();
  }
  float* target = through_shared ? block_extrema : extrema;
  if (i < n) {
    float_atomic_max(&target[0], values[i]);
    float_atomic_min(&target[1], values[i]);
  }
  if (through_shared) {
    __syncthreads();
    if (threadIdx.x == 0) {
      float_atomic_max(&extrema[0], block_extrema[0]);
      float_atomic_min(&extrema[1], block_extrema[1]);
    }
  }
}
