// Every thread records who it is: 3-D blocks in a 3-D grid.
struct Coordinates {
  unsigned int thread[3], block[3], block_dim[3], grid_dim[3];
};

__forceinline__ __device__ unsigned long long flat_thread_id() {
  const unsigned long long block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const unsigned int in_block = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  return block * (blockDim.x * blockDim.y * blockDim.z) + in_block;
}

extern "C" __global__ void __launch_bounds__(64) record_coordinates(Coordinates* out, long long offset) {
  Coordinates c;
  const uint3 t = threadIdx;
  const dim3 b = blockIdx;
  c.thread[0] = t.x;
  c.thread[1] = t.y;
  c.thread[2] = t.z;
  c.block[0] = b.x;
  c.block[1] = b.y;
  c.block[2] = b.z;
  c.block_dim[0] = blockDim.x;
  c.block_dim[1] = blockDim.y;
  c.block_dim[2] = blockDim.z;
  c.grid_dim[0] = gridDim.x;
  c.grid_dim[1] = gridDim.y;
  c.grid_dim[2] = gridDim.z;
  out[offset + flat_thread_id()] = c;
}

// Threads that return early stop counting at later barriers, as on a GPU.
extern "C" __global__ void early_exit_sum(const int* __restrict__ in, int* __restrict__ out, int n) {
  __shared__ int partial[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  partial[threadIdx.x] = in[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    int sum = 0;
    const int live = min(static_cast<int>(blockDim.x), n - static_cast<int>(blockIdx.x * blockDim.x));
    for (int k = 0; k < live; ++k) sum += partial[k];
    out[blockIdx.x] = sum;
  }
}
