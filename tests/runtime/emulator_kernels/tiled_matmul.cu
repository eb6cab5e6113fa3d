// C = A @ B with 16x16 shared-memory tiles: a real tiled GEMM, as the
// generated kernels are written. Any M, N, K; the tiles are bounds-checked.
#define TILE 16

__device__ const float kZero = 0.0f;

__forceinline__ __device__ float load_or_zero(const float* __restrict__ p, long long ld, int row, int col,
                                              int rows, int cols) {
  return (row < rows && col < cols) ? p[row * ld + col] : kZero;
}

extern "C" __global__ void __launch_bounds__(256)
tiled_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K, long long lda, long long ldb, long long ldc) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = load_or_zero(A, lda, row, k0 + tx, M, K);
    Bs[ty][tx] = load_or_zero(B, ldb, k0 + ty, col, K, N);
    __syncthreads();  // barrier: tile loaded
#pragma unroll
    for (int k = 0; k < TILE; ++k) {
      acc += As[ty][k] * Bs[k][tx];
    }
    __syncthreads();  // barrier: tile consumed
  }
  if (row < M && col < N) {
    C[row * ldc + col] = acc;
  }
}
