// aotc_emulator_async.h: asynchronous copies (cp.async) for the emulator,
// behind cuda_pipeline_primitives.h, <cuda/pipeline> and
// cooperative_groups/memcpy_async.h.
//
// A copy lands at its wait, not before: issuing one fills its destination
// with 0xFF bytes (poison, as unwritten shared memory), and the wait that
// covers it copies the source. A read of the destination before the wait
// sees the poison, and under AOTC_EMULATOR_CHECK=init it is reported. On a
// GPU the bytes may land any time in between, so a kernel right only by luck
// is wrong here every time. Each CUDA thread has its own copies in flight,
// in batches that __pipeline_commit closes, as the hardware's per-thread
// cp.async groups.
#pragma once

namespace aotc_emu::async {

struct Copy {
  unsigned char* destination;
  const unsigned char* source;
  unsigned long long copied, size;  // bytes copied from the source; the rest of size is zero-filled
  unsigned long long batch;         // the commit it belongs to (committed batches: lower numbers)
};

// One CUDA thread's copies in flight, valid for the block (launch, block) only.
struct Queue {
  Copy* copies;
  int count, capacity;
  unsigned long long committed;
  unsigned long long launch, block;
};

static Queue queues[kMaxThreadsPerBlock];

AOTC_EMU_RUNTIME inline Queue& queue() {
  const uint3 t = detail::thread_idx;
  Queue& q = queues[t.x + t.y * detail::block_dim.x + t.z * detail::block_dim.x * detail::block_dim.y];
  if (q.launch != detail::launch_serial || q.block != detail::block_number) {
    q.count = 0;  // copies a thread never waited for never land
    q.committed = 0;
    q.launch = detail::launch_serial;
    q.block = detail::block_number;
  }
  return q;
}

AOTC_EMU_RUNTIME inline void issue(void* destination, const void* source, unsigned long long copied,
                                   unsigned long long size) {
#if AOTC_EMU_CHECKS
  if (!check::copy_allowed(destination, size)) return;  // reported; it never lands
#endif
  Queue& q = queue();
  if (q.count == q.capacity) {
    const int capacity = q.capacity == 0 ? 16 : 2 * q.capacity;
    Copy* copies = static_cast<Copy*>(realloc(q.copies, capacity * sizeof(Copy)));
    if (copies == nullptr) abort();
    q.copies = copies;
    q.capacity = capacity;
  }
  q.copies[q.count++] = Copy{static_cast<unsigned char*>(destination), static_cast<const unsigned char*>(source),
                             copied < size ? copied : size, size, q.committed};
  __builtin_memset(destination, 0xFF, size);
#if AOTC_EMU_CHECKS
  check::copy_issued(destination, size);
#endif
}

AOTC_EMU_RUNTIME inline void commit() { ++queue().committed; }

// Lands every copy of the committed batches but the newest `prior`.
AOTC_EMU_RUNTIME inline void wait_prior(unsigned long long prior) {
  Queue& q = queue();
  const unsigned long long limit = q.committed > prior ? q.committed - prior : 0;
  int kept = 0;
  for (int i = 0; i < q.count; ++i) {
    const Copy& copy = q.copies[i];
    if (copy.batch >= limit) {
      q.copies[kept++] = copy;
      continue;
    }
#if AOTC_EMU_CHECKS
    if (!check::copy_landed(copy.destination, copy.source, copy.copied, copy.size)) continue;  // reported
#endif
    __builtin_memcpy(copy.destination, copy.source, copy.copied);
    __builtin_memset(copy.destination + copy.copied, 0, copy.size - copy.copied);
  }
  q.count = kept;
}

}  // namespace aotc_emu::async
