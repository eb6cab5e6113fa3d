// CUDA's integer, SIMD-in-a-word and two math intrinsics on edge inputs, for
// test_emulator_intrinsics.py; the same file nvcc compiles.
#include <cuda_fp16.h>

#ifdef AOTC_EMULATOR
#define LANEMASK(NAME) __lanemask_##NAME()
#else
#define LANEMASK(NAME) lanemask_##NAME()
#define READ_LANEMASK(NAME)                                                    \
  __device__ unsigned lanemask_##NAME() {                                      \
    unsigned m;                                                                \
    asm("mov.u32 %0, %%lanemask_" #NAME ";" : "=r"(m));                        \
    return m;                                                                  \
  }
READ_LANEMASK(eq) READ_LANEMASK(lt) READ_LANEMASK(le) READ_LANEMASK(gt) READ_LANEMASK(ge)
#endif

__device__ char4 as_char4(unsigned v) { return make_char4(v, v >> 8, v >> 16, v >> 24); }
__device__ uchar4 as_uchar4(unsigned v) { return make_uchar4(v, v >> 8, v >> 16, v >> 24); }
__device__ short2 as_short2(unsigned v) { return make_short2(v, v >> 16); }
__device__ ushort2 as_ushort2(unsigned v) { return make_ushort2(v, v >> 16); }

#define INTEGER_RESULTS 24
extern "C" __global__ void integer_intrinsics(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned x = a[i], y = b[i], z = c[i];
  const int sx = x, sy = y, sz = z;
  unsigned* o = out + (size_t)i * INTEGER_RESULTS;
  int k = 0;
  o[k++] = __byte_perm(x, y, z);
  o[k++] = __funnelshift_l(x, y, z);
  o[k++] = __funnelshift_lc(x, y, z);
  o[k++] = __funnelshift_r(x, y, z);
  o[k++] = __funnelshift_rc(x, y, z);
  o[k++] = __sad(sx, sy, z);
  o[k++] = __usad(x, y, z);
  o[k++] = __hadd(sx, sy);
  o[k++] = __rhadd(sx, sy);
  o[k++] = __uhadd(x, y);
  o[k++] = __urhadd(x, y);
  o[k++] = __fns(x, z % 32u, (int)(y % 67u) - 33);
  o[k++] = __dp4a(sx, sy, sz);
  o[k++] = __dp4a(x, y, z);
  o[k++] = __dp4a(as_char4(x), as_char4(y), sz);
  o[k++] = __dp4a(as_uchar4(x), as_uchar4(y), z);
  o[k++] = __dp2a_lo(sx, sy, sz);
  o[k++] = __dp2a_lo(x, y, z);
  o[k++] = __dp2a_lo(as_short2(x), as_char4(y), sz);
  o[k++] = __dp2a_lo(as_ushort2(x), as_uchar4(y), z);
  o[k++] = __dp2a_hi(sx, sy, sz);
  o[k++] = __dp2a_hi(x, y, z);
  o[k++] = __dp2a_hi(as_short2(x), as_char4(y), sz);
  o[k++] = __dp2a_hi(as_ushort2(x), as_uchar4(y), z);
}

// In the order of SIMD in test_emulator_intrinsics.py: each name's 2 form, then its 4 form.
#define SIMD_RESULTS 82
#define BOTH(F) o[k++] = F##2(x, y); o[k++] = F##4(x, y);
#define UNARY(F) o[k++] = F##2(x); o[k++] = F##4(x);
extern "C" __global__ void simd_intrinsics(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned x = a[i], y = b[i];
  unsigned* o = out + (size_t)i * SIMD_RESULTS;
  int k = 0;
  BOTH(__vadd) BOTH(__vsub) BOTH(__vaddss) BOTH(__vaddus) BOTH(__vsubss) BOTH(__vsubus)
  BOTH(__vavgs) BOTH(__vavgu) BOTH(__vhaddu) BOTH(__vabsdiffs) BOTH(__vabsdiffu)
  BOTH(__vmaxs) BOTH(__vmaxu) BOTH(__vmins) BOTH(__vminu)
  BOTH(__vcmpeq) BOTH(__vcmpne) BOTH(__vcmpges) BOTH(__vcmpgeu) BOTH(__vcmpgts) BOTH(__vcmpgtu)
  BOTH(__vcmples) BOTH(__vcmpleu) BOTH(__vcmplts) BOTH(__vcmpltu)
  BOTH(__vseteq) BOTH(__vsetne) BOTH(__vsetges) BOTH(__vsetgeu) BOTH(__vsetgts) BOTH(__vsetgtu)
  BOTH(__vsetles) BOTH(__vsetleu) BOTH(__vsetlts) BOTH(__vsetltu)
  BOTH(__vsads) BOTH(__vsadu)
  UNARY(__vabs) UNARY(__vabsss) UNARY(__vneg) UNARY(__vnegss)
}

extern "C" __global__ void math_intrinsics(const float* a, const float* b, const float* c, float* cdf, float* rnorm, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  cdf[i] = normcdff(a[i]);
  rnorm[i] = rnorm3df(a[i], b[i], c[i]);
}

// A 2-D block: a lane is the linear thread index modulo 32.
extern "C" __global__ void lane_masks(unsigned* out) {
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  unsigned* o = out + 5 * t;
  o[0] = LANEMASK(eq);
  o[1] = LANEMASK(lt);
  o[2] = LANEMASK(le);
  o[3] = LANEMASK(gt);
  o[4] = LANEMASK(ge);
}

// The integer average and the half-precision sum under one name, in one kernel.
extern "C" __global__ void both_hadds(const int* x, const int* y, const __half* p, const __half* q, int* averages,
                                      __half* sums, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  averages[i] = __hadd(x[i], y[i]) + __hadd(-3, 0);  // -2: the average rounds down
  sums[i] = __hadd(p[i], q[i]);
}
