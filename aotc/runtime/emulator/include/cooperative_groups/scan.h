// cooperative_groups/scan.h for the CPU emulator: inclusive and exclusive
// scans over a tile or a coalesced group, by shfl_up as CUDA's, so float
// sums keep its order.
#pragma once
#include "reduce.h"

namespace cooperative_groups {

template <class Group, class T, class Op>
inline auto inclusive_scan(const Group& group, T&& value, Op&& op, AOTC_EMU_SITE) -> decltype(op(value, value)) {
  auto result = value;
  for (unsigned int offset = 1; offset < group.size(); offset <<= 1) {
    const auto earlier = group.shfl_up(result, offset, file, line);
    if (group.thread_rank() >= offset) result = op(result, earlier);
  }
  return result;
}

template <class Group, class T>
inline auto inclusive_scan(const Group& group, T&& value, AOTC_EMU_SITE) {
  return inclusive_scan(group, value, plus<std::remove_cv_t<std::remove_reference_t<T>>>(), file, line);
}

// Rank 0 gets a value-initialised T, except for an integer sum, where it gets 0 too.
template <class Group, class T, class Op>
inline auto exclusive_scan(const Group& group, T&& value, Op&& op, AOTC_EMU_SITE) -> decltype(op(value, value)) {
  using Value = std::remove_cv_t<std::remove_reference_t<T>>;
  const auto inclusive = inclusive_scan(group, value, op, file, line);
  if constexpr (std::is_integral_v<Value> && std::is_same_v<std::remove_cv_t<std::remove_reference_t<Op>>, plus<Value>>) {
    return inclusive - value;
  } else {
    const auto earlier = group.shfl_up(inclusive, 1, file, line);
    return group.thread_rank() == 0 ? decltype(inclusive){} : earlier;
  }
}

template <class Group, class T>
inline auto exclusive_scan(const Group& group, T&& value, AOTC_EMU_SITE) {
  return exclusive_scan(group, value, plus<std::remove_cv_t<std::remove_reference_t<T>>>(), file, line);
}

}  // namespace cooperative_groups
