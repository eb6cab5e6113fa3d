// Kernels for the race check's plain writes of one value by many threads: a
// flag that every GPU gets right, whichever store lands last, and the writes
// of different values that stay races.

// Any thread that sees a large value sets the block's flag (several warps).
extern "C" __global__ void shared_flag(const int* in, int* out) {
  __shared__ int found;
  if (threadIdx.x == 0) found = 0;
  __syncthreads();
  if (in[threadIdx.x] > 5) found = 1;
  __syncthreads();
  out[threadIdx.x] = found;
}

// BFS's "the frontier changed": the host clears it, threads set it.
extern "C" __global__ void global_flag(const int* in, int* changed) {
  if (in[threadIdx.x] > 5) *changed = 1;
}

// The first lane of each warp stores its warp's number: values that differ.
extern "C" __global__ void different_values(int* out) {
  __shared__ int last;
  if (threadIdx.x % 32 == 0) last = threadIdx.x / 32;
  __syncthreads();
  out[threadIdx.x] = last;
}

// Warps 0 and 1 store 1 (the same value), then warp 2 stores 2.
extern "C" __global__ void same_then_different(int* out) {
  __shared__ int flag;
  if (threadIdx.x % 32 == 0) flag = threadIdx.x == 64 ? 2 : 1;
  __syncthreads();
  out[threadIdx.x] = flag;
}

// The first lane of each warp stores its thread's number, and returns.
extern "C" __global__ void different_last_stores(int* out) {
  if (threadIdx.x % 32 == 0) *out = threadIdx.x;
}
