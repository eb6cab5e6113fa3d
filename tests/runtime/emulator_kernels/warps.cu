// Warp-level code as kernels are written today, each result checked by
// tests/runtime/test_emulator_warps.py against a NumPy model of CUDA's rules.

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x % warpSize; }

// One warp per row: a sum by __shfl_xor_sync (every lane gets it) and a max
// by __shfl_down_sync (lane 0 gets it), the way softmax kernels reduce.
extern "C" __global__ void row_sum_max(const float* in, float* sums, float* maxima, int cols) {
  const int row = blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
  float sum = 0.0f, best = -INFINITY;
  for (int c = lane_id(); c < cols; c += warpSize) {
    sum += in[row * cols + c];
    best = fmaxf(best, in[row * cols + c]);
  }
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
  for (int offset = 16; offset > 0; offset >>= 1) best = fmaxf(best, __shfl_down_sync(0xFFFFFFFFu, best, offset));
  sums[row * warpSize + lane_id()] = sum;
  if (lane_id() == 0) maxima[row] = best;
}

// Every shuffle mode at widths 8, 16 and 32, on 32- and 64-bit values:
// out[mode][width][thread] for ints, then the same for long longs.
extern "C" __global__ void shuffle_modes(const int* operands, long long* out) {
  const int t = threadIdx.x;
  const int operand = operands[t];
  const long long wide = 0x100000000ll * t + 7;
  const int widths[3] = {8, 16, 32};
  for (int w = 0; w < 3; ++w) {
    const int width = widths[w];
    long long* row = out + (w * 8) * blockDim.x;
    row[0 * blockDim.x + t] = __shfl_sync(0xFFFFFFFFu, t, operand, width);
    row[1 * blockDim.x + t] = __shfl_up_sync(0xFFFFFFFFu, t, operand & 7, width);
    row[2 * blockDim.x + t] = __shfl_down_sync(0xFFFFFFFFu, t, operand & 7, width);
    row[3 * blockDim.x + t] = __shfl_xor_sync(0xFFFFFFFFu, t, operand, width);
    row[4 * blockDim.x + t] = __shfl_sync(0xFFFFFFFFu, wide, operand, width);
    row[5 * blockDim.x + t] = __shfl_up_sync(0xFFFFFFFFu, wide, operand & 7, width);
    row[6 * blockDim.x + t] = __shfl_down_sync(0xFFFFFFFFu, wide, operand & 7, width);
    row[7 * blockDim.x + t] = __shfl_xor_sync(0xFFFFFFFFu, wide, operand, width);
  }
}

// Votes, matches and reductions over the lanes that did not return early
// (CUDA: "all non-exited threads named in mask"), and __activemask in a branch.
// out[9][thread]: ballot, any, all, uni, match_any, match_all, its predicate,
// __activemask in the branch, then the packed reductions below.
extern "C" __global__ void votes(const int* predicates, const int* keys, int live, unsigned* out, int* reduced) {
  const int t = threadIdx.x;
  if (t % warpSize >= live) return;
  const int p = predicates[t];
  out[0 * blockDim.x + t] = __ballot_sync(0xFFFFFFFFu, p);
  out[1 * blockDim.x + t] = __any_sync(0xFFFFFFFFu, p);
  out[2 * blockDim.x + t] = __all_sync(0xFFFFFFFFu, p);
  out[3 * blockDim.x + t] = __uni_sync(0xFFFFFFFFu, p);
  out[4 * blockDim.x + t] = __match_any_sync(0xFFFFFFFFu, keys[t]);
  int same = -1;
  out[5 * blockDim.x + t] = __match_all_sync(0xFFFFFFFFu, keys[t] / 100, &same);
  out[6 * blockDim.x + t] = same;
  out[7 * blockDim.x + t] = p ? __activemask() : 0u;
  const int v = keys[t];
  reduced[0 * blockDim.x + t] = __reduce_add_sync(0xFFFFFFFFu, v);
  reduced[1 * blockDim.x + t] = __reduce_min_sync(0xFFFFFFFFu, v);
  reduced[2 * blockDim.x + t] = __reduce_max_sync(0xFFFFFFFFu, v);
  reduced[3 * blockDim.x + t] = static_cast<int>(__reduce_min_sync(0xFFFFFFFFu, static_cast<unsigned>(v)));
  reduced[4 * blockDim.x + t] = static_cast<int>(__reduce_max_sync(0xFFFFFFFFu, static_cast<unsigned>(v)));
  reduced[5 * blockDim.x + t] = static_cast<int>(__reduce_and_sync(0xFFFFFFFFu, static_cast<unsigned>(v)));
  reduced[6 * blockDim.x + t] = static_cast<int>(__reduce_or_sync(0xFFFFFFFFu, static_cast<unsigned>(v)));
  reduced[7 * blockDim.x + t] = static_cast<int>(__reduce_xor_sync(0xFFFFFFFFu, static_cast<unsigned>(v)));
}

// Half-warp groups with their own masks: each half sums its 16 lanes.
extern "C" __global__ void half_warp_sums(const int* in, int* out) {
  const int t = threadIdx.x;
  const unsigned half = (t % warpSize) < 16 ? 0x0000FFFFu : 0xFFFF0000u;
  int v = in[t];
  for (int offset = 8; offset > 0; offset >>= 1) v += __shfl_xor_sync(half, v, offset);
  out[t] = v;
}

// A warp-synchronous shared-memory reduction done right: __syncwarp between
// the steps orders the lanes' writes and reads.
extern "C" __global__ void warp_tree_sum(const int* in, int* out) {
  __shared__ int partial[64];
  const int t = threadIdx.x;
  partial[t] = in[t];
  __syncthreads();
  if (t < 32) {
    int v = partial[t] + partial[t + 32];
    __syncwarp();
    for (int offset = 16; offset > 0; offset >>= 1) {
      partial[t] = v;
      __syncwarp();
      v += partial[t ^ offset];
      __syncwarp();
    }
    if (t == 0) out[blockIdx.x] = v;
  }
}

// A half-warp reduction (lanes 16-31 return first) whose lanes 8-15 read
// lanes outside the mask: CUDA leaves those values undefined, and lane 0's
// sum, the only one kept, never uses them. `first` is each lane's first read.
extern "C" __global__ void half_warp_shuffle_down(const int* in, int* out, int* first) {
  const int lane = threadIdx.x % warpSize;
  int v = in[threadIdx.x];
  if (lane >= 16) return;
  first[threadIdx.x] = __shfl_down_sync(0x0000FFFFu, v, 8);
  for (int offset = 8; offset > 0; offset >>= 1) v += __shfl_down_sync(0x0000FFFFu, v, offset);
  if (lane == 0) out[threadIdx.x / warpSize] = v;
}

// The same over each warp's lanes as a ballot finds them: in a 48-thread
// block the last warp has 16, and its lanes read lanes that do not exist.
extern "C" __global__ void ballot_mask_sum(const int* in, int* out) {
  const int lane = threadIdx.x % warpSize;
  const unsigned mask = __ballot_sync(__activemask(), 1);
  int v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int other = __shfl_down_sync(mask, v, offset);
    if (lane + offset < warpSize && ((mask >> (lane + offset)) & 1u)) v += other;
  }
  if (lane == 0) out[threadIdx.x / warpSize] = v;
}
