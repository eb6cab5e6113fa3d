// Block order: one kernel logs the order blocks run in; the other is the
// atomic scatter the backward passes used before they became deterministic,
// one thread per block, so its float sums add in block order.
extern "C" __global__ void log_block_order(int* order, int* next) {
  order[atomicAdd(next, 1)] = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

// grad_A[i, Kstar[i, j]] += grad_C[i, j], one block per (i, j).
extern "C" __global__ void atomic_scatter(const float* grad_C, const int* Kstar, float* grad_A, int N, int K) {
  const int row = blockIdx.y, col = blockIdx.x;
  const int k = Kstar[row * N + col];
  if (k >= 0 && k < K) atomicAdd(&grad_A[row * K + k], grad_C[row * N + col]);
}
