// cooperative_groups.h for the CPU emulator: the thread block, tiles of a
// warp (tiled_partition<N> and tiled_partition(parent, n), N a power of two
// up to 32) and coalesced_threads(), with sync, shuffles, votes and matches,
// each on the warp collectives of aotc_emulator_warp.h. cg::reduce and the
// scans are in cooperative_groups/reduce.h and scan.h, memcpy_async in
// cooperative_groups/memcpy_async.h. Grid and cluster groups are refused at
// compile time: blocks run one at a time.
#pragma once

namespace cooperative_groups {

namespace details {

AOTC_EMU_INLINE unsigned linear_thread() {
  return threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
}
AOTC_EMU_INLINE unsigned lane() { return linear_thread() % 32u; }
AOTC_EMU_INLINE unsigned lanes_below(unsigned mask) { return __builtin_popcount(mask & ((1u << lane()) - 1u)); }
// The lane of the rank-th member of `mask`.
AOTC_EMU_INLINE int lane_of_rank(unsigned mask, unsigned rank) {
  for (unsigned i = 0; i < rank && mask != 0; ++i) mask &= mask - 1;
  return mask != 0 ? __builtin_ctz(mask) : 32;
}

// A value of any trivially copyable type through shuffles of its words.
template <class T, class Shuffle>
AOTC_EMU_INLINE T shuffle_words(const T& value, Shuffle shuffle) {
  static_assert(std::is_trivially_copyable_v<T>, "cooperative groups shuffle trivially copyable types");
  using Word = std::conditional_t<sizeof(T) <= 4, unsigned int, unsigned long long>;
  Word words[(sizeof(T) + sizeof(Word) - 1) / sizeof(Word)] = {};
  __builtin_memcpy(words, &value, sizeof(T));
  for (Word& word : words) word = shuffle(word);
  T result;
  __builtin_memcpy(&result, words, sizeof(T));
  return result;
}

}  // namespace details

class thread_block {
 public:
  static void sync(AOTC_EMU_SITE) { __syncthreads(file, line); }
  static unsigned int thread_rank() { return details::linear_thread(); }
  static unsigned int size() { return blockDim.x * blockDim.y * blockDim.z; }
  static unsigned int num_threads() { return size(); }
  static dim3 group_index() { return blockIdx; }
  static dim3 thread_index() { return threadIdx; }
  static dim3 group_dim() { return blockDim; }
  static dim3 dim_threads() { return blockDim; }
};

inline thread_block this_thread_block() { return thread_block(); }

// A group of lanes of one warp: a tile (contiguous, a power of two) or the
// coalesced lanes. `mask` names its lanes.
class thread_group {
 public:
  explicit thread_group(unsigned mask) : mask_(mask) {}
  void sync(AOTC_EMU_SITE) const { __syncwarp(mask_, file, line); }
  unsigned int thread_rank() const { return details::lanes_below(mask_); }
  unsigned int size() const { return __builtin_popcount(mask_); }
  unsigned int num_threads() const { return size(); }
  unsigned int meta_group_rank() const { return details::linear_thread() / size(); }
  unsigned int meta_group_size() const { return (thread_block::size() + size() - 1) / size(); }
  unsigned int mask() const { return mask_; }

 protected:
  unsigned mask_;
};

// The lanes that call coalesced_threads() together (__activemask).
class coalesced_group : public thread_group {
 public:
  explicit coalesced_group(unsigned mask) : thread_group(mask) {}
  template <class T>
  T shfl(T var, unsigned int rank, AOTC_EMU_SITE) const {
    const int source = details::lane_of_rank(mask_, rank);
    return details::shuffle_words(var, [&](auto word) { return __shfl_sync(mask_, word, source, 32, file, line); });
  }
  template <class T>
  T shfl_down(T var, unsigned int delta, AOTC_EMU_SITE) const {
    const unsigned rank = thread_rank() + delta;
    const int source = rank < size() ? details::lane_of_rank(mask_, rank) : static_cast<int>(details::lane());
    return details::shuffle_words(var, [&](auto word) { return __shfl_sync(mask_, word, source, 32, file, line); });
  }
  template <class T>
  T shfl_up(T var, unsigned int delta, AOTC_EMU_SITE) const {
    const unsigned rank = thread_rank();
    const int source = rank >= delta ? details::lane_of_rank(mask_, rank - delta) : static_cast<int>(details::lane());
    return details::shuffle_words(var, [&](auto word) { return __shfl_sync(mask_, word, source, 32, file, line); });
  }
  int any(int predicate, AOTC_EMU_SITE) const { return __ballot_sync(mask_, predicate, file, line) != 0; }
  int all(int predicate, AOTC_EMU_SITE) const { return __ballot_sync(mask_, predicate, file, line) == mask_; }
  unsigned int ballot(int predicate, AOTC_EMU_SITE) const {
    const unsigned lanes = __ballot_sync(mask_, predicate, file, line);
    unsigned ranks = 0;  // bit r: the member of rank r voted yes
    for (unsigned rest = mask_, r = 0; rest != 0; rest &= rest - 1, ++r) ranks |= ((lanes >> __builtin_ctz(rest)) & 1u) << r;
    return ranks;
  }
  unsigned int meta_group_rank() const { return 0; }
  unsigned int meta_group_size() const { return 1; }
};

inline coalesced_group coalesced_threads(AOTC_EMU_SITE) { return coalesced_group(__activemask(file, line)); }

// Size consecutive lanes of a warp, Size a power of two up to 32. Its meta
// group is its place among the tiles of its parent (the block, or a tile).
template <unsigned int Size, class Parent = void>
class thread_block_tile : public thread_group {
  static_assert(Size > 0 && Size <= 32 && (Size & (Size - 1)) == 0,
                "the emulator partitions warps only: tiles of 1, 2, 4, 8, 16 or 32 threads");

 public:
  thread_block_tile(unsigned meta_rank, unsigned meta_size)
      : thread_group(Size == 32 ? ~0u : ((1u << Size) - 1u) << (details::lane() / Size * Size)),
        meta_rank_(meta_rank),
        meta_size_(meta_size) {}
  template <class OtherParent>
  thread_block_tile(const thread_block_tile<Size, OtherParent>& other)
      : thread_block_tile(other.meta_group_rank(), other.meta_group_size()) {}
  static constexpr unsigned int num_threads() { return Size; }
  static constexpr unsigned int size() { return Size; }
  unsigned int thread_rank() const { return details::lane() % Size; }
  unsigned int meta_group_rank() const { return meta_rank_; }
  unsigned int meta_group_size() const { return meta_size_; }
  template <class T>
  T shfl(T var, int rank, AOTC_EMU_SITE) const {
    return details::shuffle_words(var, [&](auto word) { return __shfl_sync(mask_, word, rank, Size, file, line); });
  }
  template <class T>
  T shfl_down(T var, unsigned int delta, AOTC_EMU_SITE) const {
    return details::shuffle_words(var, [&](auto word) { return __shfl_down_sync(mask_, word, delta, Size, file, line); });
  }
  template <class T>
  T shfl_up(T var, unsigned int delta, AOTC_EMU_SITE) const {
    return details::shuffle_words(var, [&](auto word) { return __shfl_up_sync(mask_, word, delta, Size, file, line); });
  }
  template <class T>
  T shfl_xor(T var, unsigned int lane_mask, AOTC_EMU_SITE) const {
    return details::shuffle_words(var, [&](auto word) { return __shfl_xor_sync(mask_, word, lane_mask, Size, file, line); });
  }
  int any(int predicate, AOTC_EMU_SITE) const { return __any_sync(mask_, predicate, file, line); }
  int all(int predicate, AOTC_EMU_SITE) const { return __all_sync(mask_, predicate, file, line); }
  unsigned int ballot(int predicate, AOTC_EMU_SITE) const {
    return (__ballot_sync(mask_, predicate, file, line) & mask_) >> (details::lane() / Size * Size);
  }
  template <class T>
  unsigned int match_any(T value, AOTC_EMU_SITE) const {
    return (__match_any_sync(mask_, value, file, line) & mask_) >> (details::lane() / Size * Size);
  }
  template <class T>
  unsigned int match_all(T value, int& predicate, AOTC_EMU_SITE) const {
    return (__match_all_sync(mask_, value, &predicate, file, line) & mask_) >> (details::lane() / Size * Size);
  }

 private:
  unsigned meta_rank_, meta_size_;
};

template <unsigned int Size>
inline thread_block_tile<Size, thread_block> tiled_partition(const thread_block& block) {
  return thread_block_tile<Size, thread_block>(block.thread_rank() / Size, (block.size() + Size - 1) / Size);
}

template <unsigned int Size, unsigned int ParentSize, class Grandparent>
inline thread_block_tile<Size, thread_block_tile<ParentSize, Grandparent>> tiled_partition(
    const thread_block_tile<ParentSize, Grandparent>& parent) {
  static_assert(Size <= ParentSize, "a tile partitions into smaller tiles");
  return thread_block_tile<Size, thread_block_tile<ParentSize, Grandparent>>(parent.thread_rank() / Size, ParentSize / Size);
}

// tiled_partition(parent, n): n a power of two up to 32, as above.
inline thread_group tiled_partition(const thread_group& parent, unsigned int size) {
  const unsigned base = details::lane() / size * size;
  const unsigned mask = size >= 32 ? ~0u : ((1u << size) - 1u) << base;
  return thread_group(parent.mask() & mask);
}
inline thread_group tiled_partition(const thread_block&, unsigned int size) {
  return tiled_partition(thread_group(~0u), size);
}

template <class Group>
inline void sync(const Group& group, AOTC_EMU_SITE) {
  group.sync(file, line);
}

template <class Group>
inline unsigned long long thread_rank(const Group& group) {
  return group.thread_rank();
}

template <class Group>
inline unsigned long long group_size(const Group& group) {
  return group.size();
}

}  // namespace cooperative_groups
