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

// ---- misaligned accesses: a GPU ends the kernel at each (misaligned address)

// A float4 copy whose source is one float past 16-byte alignment.
extern "C" __global__ void misaligned_float4_copy(const float* in, float* out) {
  reinterpret_cast<float4*>(out)[threadIdx.x] = reinterpret_cast<const float4*>(in + 1)[threadIdx.x];
}

// A float2 store one float past 8-byte alignment.
extern "C" __global__ void misaligned_float2_store(const float* in, float* out) {
  reinterpret_cast<float2*>(out + 1)[threadIdx.x] = make_float2(in[threadIdx.x], 1.0f);
}

// A double and an int2 read one float past 8-byte alignment.
extern "C" __global__ void misaligned_double_read(const float* in, float* out) {
  out[threadIdx.x] = static_cast<float>(reinterpret_cast<const double*>(in + 1)[threadIdx.x]);
}
extern "C" __global__ void misaligned_int2_read(const float* in, float* out) {
  const int2 v = reinterpret_cast<const int2*>(in + 1)[threadIdx.x];
  out[threadIdx.x] = static_cast<float>(v.x + v.y);
}

// A float4 store into dynamic shared memory one float past 16-byte alignment.
extern "C" __global__ void misaligned_shared_float4(const float* in, float* out) {
  extern __shared__ float buffer[];
  reinterpret_cast<float4*>(buffer + 1)[threadIdx.x] = make_float4(in[0], in[1], in[2], in[3]);
  __syncthreads();
  out[threadIdx.x] = buffer[threadIdx.x];
}

// An 8-byte atomic one float past 8-byte alignment.
extern "C" __global__ void misaligned_atomic(const float* in, float* out) {
  atomicAdd(reinterpret_cast<unsigned long long*>(out + 1), 1ull);
}

// The idiom that is right on every GPU: 16-byte loads and stores where both
// pointers are aligned for them, one float at a time where they are not; and
// one component read through a float4 pointer that is not aligned (a 4-byte
// load on a GPU too).
extern "C" __global__ void vector_or_scalar_copy(const float* in, float* out, int n) {
  const int i = 4 * threadIdx.x;
  const bool vector = reinterpret_cast<unsigned long long>(in) % 16 == 0 && reinterpret_cast<unsigned long long>(out) % 16 == 0;
  if (vector && i + 3 < n) {
    reinterpret_cast<float4*>(out + i)[0] = reinterpret_cast<const float4*>(in + i)[0];
  } else {
    for (int e = i; e < i + 4 && e < n; ++e) out[e] = in[e];
  }
  if (threadIdx.x == 0) out[n] = reinterpret_cast<const float4*>(in + 1)->y;
}
