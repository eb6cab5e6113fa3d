// cooperative_groups/memcpy_async.h for the CPU emulator: each member of the
// group copies its share, as one committed batch; cg::wait lands the
// caller's copies and syncs the group (aotc_emulator_async.h).
#pragma once
#include "../cooperative_groups.h"
#include "../cuda_pipeline_primitives.h"

namespace cooperative_groups {

template <class Group, class T>
inline void memcpy_async(const Group& group, T* __restrict__ destination, const T* __restrict__ source, ::size_t bytes) {
  const ::size_t step = 16 * static_cast<::size_t>(group.size());
  for (::size_t at = 16 * static_cast<::size_t>(group.thread_rank()); at < bytes; at += step) {
    const ::size_t chunk = bytes - at < 16 ? bytes - at : 16;
    ::aotc_emu::async::issue(reinterpret_cast<unsigned char*>(destination) + at,
                             reinterpret_cast<const unsigned char*>(source) + at, chunk, chunk);
  }
  __pipeline_commit();
}

template <class Group>
inline void wait(const Group& group) {
  __pipeline_wait_prior(0);
  group.sync();
}

template <unsigned int Stage, class Group>
inline void wait_prior(const Group& group) {
  __pipeline_wait_prior(Stage);
  group.sync();
}

}  // namespace cooperative_groups
