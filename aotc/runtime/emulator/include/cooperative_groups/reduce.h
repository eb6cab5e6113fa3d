// cooperative_groups/reduce.h for the CPU emulator: cg::reduce over a tile
// or a coalesced group, and the operators it takes. A tile reduces as CUDA's
// does, by shfl_xor from half its size down, so float sums keep its order.
#pragma once
#include "../cooperative_groups.h"

namespace cooperative_groups {

template <class T>
struct plus {
  T operator()(T a, T b) const { return a + b; }
};
template <class T>
struct less {
  T operator()(T a, T b) const { return b < a ? b : a; }
};
template <class T>
struct greater {
  T operator()(T a, T b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
  T operator()(T a, T b) const { return a & b; }
};
template <class T>
struct bit_or {
  T operator()(T a, T b) const { return a | b; }
};
template <class T>
struct bit_xor {
  T operator()(T a, T b) const { return a ^ b; }
};

template <unsigned int Size, class Parent, class T, class Op>
inline auto reduce(const thread_block_tile<Size, Parent>& group, T&& value, Op&& op, AOTC_EMU_SITE) -> decltype(op(value, value)) {
  auto result = value;
  for (unsigned int mask = Size / 2; mask > 0; mask >>= 1) result = op(result, group.shfl_xor(result, mask, file, line));
  return result;
}

// Lanes in rank order: each rank r gathers from r + 1, r + 2, r + 4, ...;
// rank 0 then holds the whole and gives it to every member.
template <class T, class Op>
inline auto reduce(const coalesced_group& group, T&& value, Op&& op, AOTC_EMU_SITE) -> decltype(op(value, value)) {
  auto result = value;
  const unsigned int size = group.size(), rank = group.thread_rank();
  for (unsigned int step = 1; step < size; step <<= 1) {
    const auto other = group.shfl_down(result, step, file, line);
    if (rank % (2 * step) == 0 && rank + step < size) result = op(result, other);
  }
  return group.shfl(result, 0, file, line);
}

}  // namespace cooperative_groups
