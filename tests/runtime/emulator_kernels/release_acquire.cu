// Plain data ordered by a fence and an atomic, within one block: right on
// every GPU since sm_70, each must run clean under AOTC_EMULATOR_CHECK=all
// with the right result (tests/runtime/test_emulator_release_acquire.py).
// Then the same idioms with one piece missing, each a race the check names.

// The reader's wait for the flag, three ways a kernel spells an atomic read.
__device__ void wait_for_flag(int* flag, int how) {
  if (how == 0) {
    while (atomicAdd(flag, 0) == 0) {
    }
  } else if (how == 1) {
    while (atomicCAS(flag, 0, 0) == 0) {
    }
  } else {
    while (atomicOr(flag, 0) == 0) {
    }
  }
}

// 1. A handoff: thread 32 writes plain data, then releases it (a fence, then
// atomicExch on the flag); thread 0 acquires it (spins until it sees the
// flag, then a fence) and reads the data plainly.
extern "C" __global__ void handoff(int* data, int* flag, int* seen, int n, int how) {
  if (threadIdx.x == 32) {
    for (int i = 0; i < n; ++i) data[i] = 7 * i + 1;
    __threadfence();
    atomicExch(flag, 1);
  } else if (threadIdx.x == 0) {
    wait_for_flag(flag, how);
    __threadfence();
    for (int i = 0; i < n; ++i) seen[i] = data[i];
  }
}

// 2. The same through shared memory, handed on twice: warp 1 to warp 2 to
// warp 0, each taking the data it was handed and releasing more (a fence
// orders what the thread acquired before it, too).
extern "C" __global__ void relay(int* out) {
  __shared__ int cell[2];
  __shared__ int flags[2];
  if (threadIdx.x == 0) flags[0] = flags[1] = 0;
  __syncthreads();
  if (threadIdx.x == 32) {
    cell[0] = 5;
    __threadfence_block();
    atomicExch(&flags[0], 1);
  } else if (threadIdx.x == 64) {
    wait_for_flag(&flags[0], 0);
    __threadfence_block();
    cell[1] = cell[0] * 3;
    __threadfence_block();
    atomicExch(&flags[1], 1);
  } else if (threadIdx.x == 0) {
    wait_for_flag(&flags[1], 1);
    __threadfence_block();
    out[0] = cell[0] + cell[1];
  }
}

// 3. Per-bucket spin locks in global memory guarding plain counts, taken by
// threads of every warp of the block, and by lanes of one warp (each lane
// loops until it has had its turn: right since independent thread scheduling).
extern "C" __global__ void locked_buckets(const int* keys, int n, int* locks, int* counts, int* sums, int buckets) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int b = keys[i] % buckets;
    bool done = false;
    while (!done) {
      if (atomicCAS(&locks[b], 0, 1) == 0) {
        __threadfence();
        counts[b] += 1;
        sums[b] += i;
        __threadfence();
        atomicExch(&locks[b], 0);
        done = true;
      }
    }
  }
}

// 4. A block mutex in static shared memory guarding a plain total in the
// dynamic buffer, which thread 0 writes out after the barrier.
extern "C" __global__ void block_mutex(const int* values, int* total) {
  __shared__ int mutex;
  extern __shared__ int sum[];
  if (threadIdx.x == 0) mutex = sum[0] = 0;
  __syncthreads();
  while (atomicCAS(&mutex, 0, 1) != 0) {
  }
  __threadfence_block();
  sum[0] += values[blockIdx.x * blockDim.x + threadIdx.x];
  __threadfence_block();
  atomicExch(&mutex, 0);
  __syncthreads();
  if (threadIdx.x == 0) total[blockIdx.x] = sum[0];
}

// ---- real bugs ----------------------------------------------------------------------------

// The writer sets the flag with no fence before it: nothing is released.
extern "C" __global__ void bug_no_release(int* data, int* flag, int* seen) {
  if (threadIdx.x == 32) {
    data[0] = 42;
    atomicExch(flag, 1);
  } else if (threadIdx.x == 0) {
    wait_for_flag(flag, 0);
    __threadfence();
    seen[0] = data[0];
  }
}

// The reader sees the flag but has no fence after it: nothing is acquired.
extern "C" __global__ void bug_no_acquire(int* data, int* flag, int* seen) {
  if (threadIdx.x == 32) {
    data[0] = 42;
    __threadfence();
    atomicExch(flag, 1);
  } else if (threadIdx.x == 0) {
    wait_for_flag(flag, 0);
    seen[0] = data[0];
  }
}

// The reader does not wait for the flag.
extern "C" __global__ void bug_no_wait(int* data, int* flag, int* seen) {
  if (threadIdx.x == 0) {
    data[0] = 42;
    __threadfence();
    atomicExch(flag, 1);
  } else if (threadIdx.x == 32) {
    __threadfence();
    seen[0] = data[0];
  }
}

// The lock is let go before the last plain write of the critical section.
extern "C" __global__ void bug_unlock_early(int* lock, int* counts, int* last) {
  while (atomicCAS(lock, 0, 1) != 0) {
  }
  __threadfence();
  counts[0] += 1;
  __threadfence();
  atomicExch(lock, 0);
  last[0] = threadIdx.x;
}

// Warp 1 takes the lock; thread 0 writes the guarded count without it.
extern "C" __global__ void bug_lock_bypass(int* lock, int* counts) {
  if (threadIdx.x == 0) counts[0] = 0;
  if (threadIdx.x < 32) return;
  while (atomicCAS(lock, 0, 1) != 0) {
  }
  __threadfence();
  counts[0] += 1;
  __threadfence();
  atomicExch(lock, 0);
}

// Threads 0 and 64 read the data; only 64 hands it on to 32, which writes
// it: thread 0's read still races with that write.
extern "C" __global__ void bug_other_reader(int* data, int* flag, int* seen) {
  if (threadIdx.x == 0 || threadIdx.x == 64) seen[threadIdx.x] = data[0];
  if (threadIdx.x == 64) {
    __threadfence();
    atomicExch(flag, 1);
  } else if (threadIdx.x == 32) {
    wait_for_flag(flag, 0);
    __threadfence();
    data[0] = 1;
  }
}

// Lane 2 reads the data; lanes 0 and 1 then meet at a __syncwarp that lane 2
// is no part of, and lane 0 reads it and hands it on to thread 32, which
// writes it: lane 2's read still races with that write (the interval rule
// keeps lane 0 for the readers, which the release alone must not clear).
extern "C" __global__ void bug_lane_left_out(int* data, int* flag, int* seen) {
  const int t = threadIdx.x;
  if (t == 2) seen[t] = data[0];
  if (t < 2) __syncwarp(0x3u);
  if (t == 0) {
    seen[t] = data[0];
    __threadfence();
    atomicExch(flag, 1);
  } else if (t == 32) {
    wait_for_flag(flag, 0);
    __threadfence();
    data[0] = 1;
  }
}

// A warp waits for a flag one lane spins on, and hands its work back the
// same way: lane 0 acquires, a __syncwarp orders the other lanes' reads and
// writes after that and before lane 0's release, and thread 32 acquires it.
// `bug`: lane 5 writes again after the second __syncwarp, which nothing
// orders before the release.
__device__ void warp_round_trip_body(int* data, int* flag, int* total, int bug) {
  const int t = threadIdx.x;
  if (t == 32) {
    for (int i = 0; i < 32; ++i) data[i] = 3 * i + 1;
    __threadfence();
    atomicExch(flag, 1);
    while (atomicAdd(flag, 0) != 2) {
    }
    __threadfence();
    int sum = 0;
    for (int i = 0; i < 32; ++i) sum += data[i];
    total[0] = sum;
  } else if (t < 32) {
    if (t == 0) {
      wait_for_flag(flag, 0);
      __threadfence();
    }
    __syncwarp();
    data[t] = 2 * data[t];
    __syncwarp();
    if (bug && t == 5) data[t] = 0;
    if (t == 0) {
      __threadfence();
      atomicExch(flag, 2);
    }
  }
}

extern "C" __global__ void warp_round_trip(int* data, int* flag, int* total) { warp_round_trip_body(data, flag, total, 0); }

extern "C" __global__ void bug_warp_round_trip(int* data, int* flag, int* total) { warp_round_trip_body(data, flag, total, 1); }

// Lane 0 fences before the __syncwarp that orders the warp's writes, so its
// atomic write after that releases none of them.
extern "C" __global__ void bug_fence_before_syncwarp(int* data, int* flag, int* total) {
  const int t = threadIdx.x;
  if (t < 32) {
    data[t] = t;
    if (t == 0) __threadfence();
    __syncwarp();
    if (t == 0) atomicExch(flag, 1);
  } else if (t == 32) {
    wait_for_flag(flag, 0);
    __threadfence();
    int sum = 0;
    for (int i = 0; i < 32; ++i) sum += data[i];
    total[0] = sum;
  }
}

// The handoff of old, on a volatile flag (a volatile load or store is
// morally strong, as PTX has it, so fences order through it as through an
// atomic): in global memory, and in shared memory between warps. The spin
// lets the writer run, as a spin on an atomic does.
extern "C" __global__ void volatile_handoff(int* data, int* flag, int* seen, int n) {
  volatile int* ready = flag;
  if (threadIdx.x == 32) {
    for (int i = 0; i < n; ++i) data[i] = 5 * i + 2;
    __threadfence();
    *ready = 1;
  } else if (threadIdx.x == 0) {
    while (*ready == 0) {
    }
    __threadfence();
    for (int i = 0; i < n; ++i) seen[i] = data[i];
  }
}

extern "C" __global__ void volatile_shared_handoff(int* seen) {
  __shared__ int cell[4];
  __shared__ int ready;
  if (threadIdx.x == 0) ready = 0;
  __syncthreads();
  volatile int* flag = &ready;
  if (threadIdx.x == 64) {
    for (int i = 0; i < 4; ++i) cell[i] = 11 * i;
    __threadfence_block();
    *flag = 1;
  } else if (threadIdx.x == 1) {
    while (*flag == 0) {
    }
    __threadfence_block();
    for (int i = 0; i < 4; ++i) seen[i] = cell[i];
  }
}

// The volatile handoff without the writer's fence: nothing is released.
extern "C" __global__ void bug_volatile_no_release(int* data, int* flag, int* seen) {
  volatile int* ready = flag;
  if (threadIdx.x == 32) {
    data[0] = 1;
    *ready = 1;
  } else if (threadIdx.x == 0) {
    while (*ready == 0) {
    }
    __threadfence();
    seen[0] = data[0];
  }
}

// The writer sets the flag with a plain store while the reader spins on it
// with volatile loads: a plain access and a morally strong one race.
extern "C" __global__ void bug_plain_flag(int* data, int* flag, int* seen) {
  volatile int* ready = flag;
  if (threadIdx.x == 32) {
    data[0] = 1;
    __threadfence();
    *flag = 1;
  } else if (threadIdx.x == 0) {
    while (*ready == 0) {
    }
    __threadfence();
    seen[0] = data[0];
  }
}
