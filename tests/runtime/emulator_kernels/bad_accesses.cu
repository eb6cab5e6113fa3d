// Accesses a checked launch must never perform (AOTC_EMULATOR_CHECK): a read
// gets poison (0xFF bytes), a write is dropped, and the first is the fault.

// A gather with no bounds guard: past n it reads idx out of bounds and uses
// what it finds as an index into x.
extern "C" __global__ void wild_gather(const float* x, const int* idx, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[idx[i]];
}

// Writes `value` one element past the end of `out`, then copies that element
// to out[0] (`m` is n, which the compiler cannot know).
extern "C" __global__ void write_then_read_past(float* out, int n, int m, float value) {
  if (threadIdx.x == 0) {
    out[n] = value;
    out[0] = out[m];
  }
}

// The same past the dynamic shared memory the launch asked for (n floats).
extern "C" __global__ void shared_write_then_read_past(float* out, int n, int m, float value) {
  extern __shared__ float buffer[];
  if (threadIdx.x == 0) {
    buffer[n] = value;
    out[0] = buffer[m];
  }
}

// Reads p[0] into out[0], then writes p[1], for a p where no memory is: then
// sets out[1], if the thread went on.
extern "C" __global__ void read_and_write(float* p, float* out) {
  if (threadIdx.x == 0) {
    out[0] = p[0];
    p[1] = 3.0f;
    out[1] = 1.0f;
  }
}

// A struct copy (the compiler copies it after both of its hooks) from x to y[n], past y's end.
struct Row {
  float values[12];
};
extern "C" __global__ void copy_row_past(const Row* x, Row* y, int n) {
  if (threadIdx.x == 0) y[n] = x[0];
}
