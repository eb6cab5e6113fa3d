// Dynamic shared memory: each block reverses its chunk of `in` through an
// extern __shared__ buffer sized at launch.
extern "C" __global__ void reverse_chunks(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float buffer[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  buffer[threadIdx.x] = i < n ? in[i] : -1.0f;
  __syncthreads();
  const int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
  if (j < n) out[j] = buffer[threadIdx.x];
}

// Two views of one byte buffer, as kernels that carve up dynamic shared
// memory do: `count` floats, then `count` ints.
extern "C" __global__ void carve_shared(float* __restrict__ sums, int* __restrict__ counts, int count) {
  extern __shared__ __align__(16) unsigned char raw[];
  float* values = reinterpret_cast<float*>(raw);
  int* hits = reinterpret_cast<int*>(raw + count * sizeof(float));
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    values[i] = 0.0f;
    hits[i] = 0;
  }
  __syncthreads();
  atomicAdd(&values[threadIdx.x % count], 0.5f);
  atomicAdd(&hits[threadIdx.x % count], 1);
  __syncthreads();
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    sums[blockIdx.x * count + i] = values[i];
    counts[blockIdx.x * count + i] = hits[i];
  }
}

// Reads dynamic shared memory nothing wrote: the emulator poisons it.
extern "C" __global__ void read_unwritten(unsigned int* out) {
  extern __shared__ unsigned int untouched[];
  out[threadIdx.x] = untouched[threadIdx.x];
}
