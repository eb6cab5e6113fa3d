// 16-byte vector loads and stores through reinterpret_cast.
extern "C" __global__ void vector_sums(const float* __restrict__ f, const int* __restrict__ i,
                                       const double* __restrict__ d, const long long* __restrict__ ll,
                                       float* __restrict__ f_out, int* __restrict__ i_out,
                                       double* __restrict__ d_out, long long* __restrict__ ll_out,
                                       float4* __restrict__ f4_out, int n4) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n4) return;
  const float4 a = reinterpret_cast<const float4*>(f)[k];
  const int4 b = reinterpret_cast<const int4*>(i)[k];
  const double2 c = reinterpret_cast<const double2*>(d)[k];
  const longlong2 e = reinterpret_cast<const longlong2*>(ll)[k];
  f_out[k] = a.x + a.y + a.z + a.w;
  i_out[k] = b.x + b.y + b.z + b.w;
  d_out[k] = c.x - c.y;
  ll_out[k] = e.x - e.y;
  f4_out[k] = make_float4(a.w, a.z, a.y, a.x);
}

// What the shim's helpers compute, for the tests to compare with NumPy.
extern "C" __global__ void intrinsics(const float* __restrict__ x, const float* __restrict__ y,
                                      float* __restrict__ out, int* __restrict__ flags, int n) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  out[4 * k + 0] = fmaxf(x[k], y[k]);
  out[4 * k + 1] = fminf(x[k], y[k]);
  out[4 * k + 2] = max(x[k], y[k]);
  out[4 * k + 3] = __int_as_float(__float_as_int(x[k]));
  flags[2 * k + 0] = isnan(x[k]) ? 1 : (isinf(x[k]) ? 2 : 0);
  flags[2 * k + 1] = x[k] == INFINITY ? 1 : (x[k] == -INFINITY ? -1 : 0);
}
