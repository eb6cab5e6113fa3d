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

// ---- volatile stores of one flag, by lanes of one warp that no __syncwarp orders

// Any lane that sees a large value sets the block's flag through a volatile
// pointer, in shared and in global memory.
extern "C" __global__ void volatile_flag(const int* in, int* out, int* changed) {
  __shared__ int found;
  if (threadIdx.x == 0) found = 0;
  __syncthreads();
  volatile int* shared_flag = &found;
  volatile int* global_flag = changed;
  if (in[threadIdx.x] > 5) {
    *shared_flag = 1;
    *global_flag = 1;
  }
  __syncthreads();
  out[threadIdx.x] = found;
}

// A warp-synchronous found flag: lane 0 clears its warp's, then any lane that
// sees a large value sets it, each step between __syncwarps.
extern "C" __global__ void warp_found_flags(const int* in, int* out) {
  __shared__ int found[3];
  volatile int* flag = &found[threadIdx.x / 32];
  if (threadIdx.x % 32 == 0) *flag = 0;
  __syncwarp();
  if (in[threadIdx.x] > 5) *flag = 1;
  __syncwarp();
  out[threadIdx.x] = *flag;
}

// Odd lanes set the flag with plain stores, even lanes through a volatile pointer.
extern "C" __global__ void mixed_flag(const int* in, int* out) {
  __shared__ int found;
  if (threadIdx.x == 0) found = 0;
  __syncthreads();
  if (in[threadIdx.x] > 5) {
    if (threadIdx.x % 2 != 0) {
      found = 1;
    } else {
      *static_cast<volatile int*>(&found) = 1;
    }
  }
  __syncthreads();
  out[threadIdx.x] = found;
}

// Every eighth lane stores its thread's number through a volatile pointer.
extern "C" __global__ void volatile_different_values(int* out) {
  __shared__ int last;
  volatile int* p = &last;
  if (threadIdx.x % 8 == 0) *p = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = last;
}

// Thread 0 stores 1 through a volatile pointer, thread 32 stores 2 with a plain store.
extern "C" __global__ void plain_over_volatile(int* out) {
  __shared__ int flag;
  if (threadIdx.x == 0) *static_cast<volatile int*>(&flag) = 1;
  if (threadIdx.x == 32) flag = 2;
  __syncthreads();
  out[threadIdx.x] = flag;
}

// Thread 0 sets the flag with atomicOr, thread 32 stores the 1 it left with a
// plain store: a GPU may land the store first, and the atomic then returns 1,
// not 0 (an atomicAdd would leave 2).
extern "C" __global__ void plain_over_atomic(int* out) {
  __shared__ int flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  if (threadIdx.x == 0) out[96] = atomicOr(&flag, 1);
  if (threadIdx.x == 32) flag = 1;
  __syncthreads();
  out[threadIdx.x] = flag;
}
