// Device assert(): a failed one ends the launch with an error, and the process lives on.
#include <assert.h>

extern "C" __global__ void assert_not(const int* in, int value, int* out) {
  assert(in[threadIdx.x] != value);
  out[threadIdx.x] = 1;
}

extern "C" __global__ void assert_then_sync(const int* in, int* out) {
  assert(in[threadIdx.x] != 7);
  __syncthreads();
  out[threadIdx.x] = 1;
}
