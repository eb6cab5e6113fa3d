// cuda_pipeline_primitives.h for the CPU emulator: cp.async as CUDA's
// primitives, each copy landing at its wait (aotc_emulator_async.h).
#pragma once
#include "aotc_emulator_async.h"

// Copies size_and_align bytes (4, 8 or 16), the last zfill of them as zeros.
static inline void __pipeline_memcpy_async(void* __restrict__ dst_shared, const void* __restrict__ src_global,
                                           size_t size_and_align, size_t zfill = 0) {
  ::aotc_emu::async::issue(dst_shared, src_global, size_and_align - (zfill < size_and_align ? zfill : size_and_align),
                           size_and_align);
}
static inline void __pipeline_commit() { ::aotc_emu::async::commit(); }
static inline void __pipeline_wait_prior(size_t prior) { ::aotc_emu::async::wait_prior(prior); }
