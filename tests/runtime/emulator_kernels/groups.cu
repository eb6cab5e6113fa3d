// Cooperative groups and asynchronous copies as kernels use them, checked by
// tests/runtime/test_emulator_groups.py.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cuda/pipeline>
#include <cuda_pipeline.h>

namespace cg = cooperative_groups;

// Per thread, out[k * blockDim.x + t]: tile sums, a max, scans, votes and ranks.
extern "C" __global__ void tile_collectives(const int* in, const float* values, int* out, float* sums) {
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const cg::thread_block_tile<8> eight = cg::tiled_partition<8>(warp);
  const unsigned t = block.thread_rank(), n = block.size();
  const int v = in[t];
  sums[t] = cg::reduce(warp, values[t], cg::plus<float>());
  sums[n + t] = cg::reduce(eight, values[t], cg::plus<float>());
  int results[] = {
      cg::reduce(warp, v, cg::plus<int>()),
      cg::reduce(eight, v, cg::greater<int>()),
      cg::reduce(eight, v, cg::less<int>()),
      cg::inclusive_scan(eight, v),
      cg::exclusive_scan(eight, v),
      static_cast<int>(eight.ballot(v > 0)),
      eight.any(v > 40),
      eight.all(v > 0),
      static_cast<int>(eight.thread_rank()),
      static_cast<int>(eight.meta_group_rank()),
      eight.shfl(v, 3),
      warp.shfl_down(v, 5),
      warp.shfl_xor(v, 1),
  };
  for (unsigned k = 0; k < sizeof(results) / sizeof(results[0]); ++k) out[k * n + t] = results[k];
}

// The block's groups: block.sync() orders shared memory; a dynamic tile of 4.
extern "C" __global__ void block_and_dynamic_tiles(const int* in, int* out) {
  __shared__ int cells[128];
  cg::thread_block block = cg::this_thread_block();
  const unsigned t = block.thread_rank();
  cells[t] = in[t];
  block.sync();
  const cg::thread_group four = cg::tiled_partition(block, 4);
  int sum = 0;
  for (unsigned i = 0; i < four.size(); ++i) sum += cells[t - four.thread_rank() + i];
  cg::sync(four);
  out[t] = sum;
}

// The odd lanes form a coalesced group and sum over it.
extern "C" __global__ void coalesced_sums(const int* in, int* out) {
  const unsigned t = threadIdx.x;
  out[t] = -1;
  if (t % 2 == 1) {
    cg::coalesced_group odd = cg::coalesced_threads();
    out[t] = cg::reduce(odd, in[t], cg::plus<int>()) * 100 + static_cast<int>(odd.thread_rank());
  }
}

// A tile of `count` floats per block into shared memory by cp.async, in
// stages of 64, double buffered; `early` reads the next stage before its wait.
extern "C" __global__ void staged_sum(const float* in, float* out, int stages, int early) {
  __shared__ float stage[2][64];
  const int t = threadIdx.x;
  const float* block_in = in + blockIdx.x * stages * 64;
  float sum = 0.0f;
  __pipeline_memcpy_async(&stage[0][t], &block_in[t], sizeof(float));
  __pipeline_commit();
  for (int s = 0; s < stages; ++s) {
    if (s + 1 < stages) __pipeline_memcpy_async(&stage[(s + 1) % 2][t], &block_in[(s + 1) * 64 + t], sizeof(float));
    __pipeline_commit();
    if (early && s + 1 < stages) sum += 0.0f * stage[(s + 1) % 2][t];  // before its wait: poison
    __pipeline_wait_prior(1);
    __syncthreads();
    sum += stage[s % 2][(t + 1) % 64];
    __syncthreads();
  }
  out[blockIdx.x * 64 + t] = sum;
}

// The same copy through a thread-scope cuda::pipeline, through
// cooperative_groups::memcpy_async, and a 16-byte cp.async whose last 8
// bytes are zero-filled.
extern "C" __global__ void pipeline_copies(const float* in, float* out, float* group_out, int count) {
  __shared__ float direct[64];
  __shared__ float grouped[68];
  cg::thread_block block = cg::this_thread_block();
  const int t = block.thread_rank();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  pipe.producer_acquire();
  cuda::memcpy_async(&direct[t], &in[t], sizeof(float), pipe);
  pipe.producer_commit();
  cg::memcpy_async(block, grouped, in, count * sizeof(float));
  if (t == 0) {
    __pipeline_memcpy_async(&grouped[64], &in[0], 16, 8);
    __pipeline_commit();
  }
  pipe.consumer_wait();
  pipe.consumer_release();
  cg::wait(block);
  out[t] = direct[63 - t];
  group_out[t] = grouped[t];
  if (t < 4) group_out[64 + t] = grouped[64 + t];
}
