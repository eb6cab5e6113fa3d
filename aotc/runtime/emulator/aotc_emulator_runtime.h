// aotc_emulator_runtime.h: how the emulator runs a grid. Included by
// aotc_emulator.h after the standard headers and the vector types.
//
// Blocks run one after another, in x-fastest order unless
// AOTC_EMULATOR_BLOCK_ORDER says otherwise (plan_block_order). The threads of a block run in one of two ways:
// - fibers (the default): an OpenMP team of W workers (W = the number of
//   processors, at most the block size) each runs a share of the block's
//   threads as fibers, switching at __syncthreads(). Threads on different
//   workers run truly in parallel; switching fibers costs nanoseconds where
//   waking an OS thread costs microseconds.
// - OS threads: one OpenMP thread per CUDA thread, blocking in the kernel at
//   __syncthreads(). Faithful to preemption, slow with hundreds of threads on
//   a few cores.
// Either way __syncthreads() is a barrier over the block's threads that have
// not returned: a thread that returns early stops counting, as on the GPU.
// Warps are 32 consecutive threads; a worker's share of fibers is whole
// warps, and lanes meet at warp collectives (aotc_emulator_warp.h).
#pragma once

// The system headers it needs (sys/mman.h, ucontext.h) and the choice of
// AOTC_EMU_ASM_SWITCH come from aotc_emulator.h, before any CUDA macro.

// The emulator's own code that runs inside a CUDA thread: the checks
// (AOTC_EMULATOR_CHECK) must not see its memory accesses as the kernel's.
#define AOTC_EMU_RUNTIME __attribute__((no_sanitize_thread))

namespace aotc_emu {

enum LaunchStatus : int {
  kLaunchOk = 0,
  kBadBlock = 1,
  kTooManyThreads = 2,
  kOverLaunchBounds = 3,
  kBadGrid = 4,
  kTooMuchSharedMemory = 5,
  kThreadsUnavailable = 6,
  kNullArguments = 7,
  kOutOfMemory = 8,
  kBadBlockOrder = 9,
  kTooManyBlocksToReorder = 10,
  kKernelFault = 11,           // a check of AOTC_EMULATOR_CHECK failed: aotc_emu_fault()
  kNoAddressSanitizer = 12,    // the memory check needs libasan loaded first
  kFiberStackOverflow = 13,    // a fiber wrote below its stack: a red zone's canary changed
  kWarpStuck = 14,             // a warp collective could never complete (a GPU would hang)
  kDeviceAssert = 15,          // a device assert() failed: aotc_emu_assertion()
};

enum Threading : int { kFibers = 0, kOsThreads = 1 };

// The largest opt-in dynamic shared memory of current GPUs (sm_90, sm_100).
constexpr unsigned long long kMaxDynamicSharedBytes = 232448;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kWarpSize = 32;
constexpr int kMaxWarps = kMaxThreadsPerBlock / kWarpSize;
constexpr unsigned long kFiberStackBytes = 256 * 1024;
constexpr unsigned long kFiberGuardBytes = 64 * 1024;  // a multiple of any page size
constexpr unsigned long kFiberCanaryBytes = 1024;      // the top of each red zone, checked
constexpr unsigned char kFiberCanary = 0xA5;  // every byte of the canary

namespace detail {

struct Phase {
  int arrived_true;  // threads that arrived with a nonzero predicate
  int arrived;       // threads that arrived (returned ones excluded)
};

// A barrier whose participants can retire (leave for good). Participants are
// CUDA threads (OS-thread mode) or workers (fiber mode, each arriving for its
// waiting fibers). Waiting sleeps in the kernel at once: spinning measured
// slower even with one worker per core, and far slower with more.
class BlockBarrier {
 public:
  void reset(int participants) {
    participants_ = participants;
    live_.store(participants, std::memory_order_relaxed);
    remaining_.store(participants, std::memory_order_relaxed);
    arrived_true_.store(0, std::memory_order_relaxed);
    arrived_.store(0, std::memory_order_relaxed);
  }

  AOTC_EMU_RUNTIME __attribute__((noinline)) Phase arrive_and_wait(int arrived_true, int arrived) {
    arrived_true_.fetch_add(arrived_true, std::memory_order_relaxed);
    arrived_.fetch_add(arrived, std::memory_order_relaxed);
    const unsigned gen = generation_.load(std::memory_order_acquire);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      open_next_phase();
    } else {
      wait_while_generation_is(gen);
    }
    return last_phase();
  }

  AOTC_EMU_RUNTIME __attribute__((noinline)) void retire() {
    live_.fetch_sub(1, std::memory_order_relaxed);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) open_next_phase();
  }

  // Valid until the caller arrives again: the next phase cannot open before.
  Phase last_phase() const { return Phase{result_true_, result_arrived_}; }

  // Counts the phases opened: a thread that read g before arriving still waits while it is g.
  unsigned generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  void open_next_phase() {
    const int live = live_.load(std::memory_order_relaxed);
    result_true_ = arrived_true_.exchange(0, std::memory_order_relaxed);
    result_arrived_ = arrived_.exchange(0, std::memory_order_relaxed);
    if (live == 0) {
      // Everyone returned: re-arm for the next block. Nobody waits here, and
      // the launch loop's OpenMP barrier orders this before the next block.
      live_.store(participants_, std::memory_order_relaxed);
      remaining_.store(participants_, std::memory_order_relaxed);
      return;
    }
    remaining_.store(live, std::memory_order_relaxed);
#if defined(__linux__)
    generation_.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<unsigned*>(&generation_), FUTEX_WAKE_PRIVATE, INT_MAX,
            nullptr, nullptr, 0);
#else
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
#endif
  }

  void wait_while_generation_is(unsigned gen) {
#if defined(__linux__)
    while (generation_.load(std::memory_order_acquire) == gen) {
      syscall(SYS_futex, reinterpret_cast<unsigned*>(&generation_), FUTEX_WAIT_PRIVATE, gen,
              nullptr, nullptr, 0);
    }
#else
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != gen; });
#endif
  }

  int participants_ = 0;
  std::atomic<int> live_{0};
  std::atomic<int> remaining_{0};
  std::atomic<int> arrived_true_{0};
  std::atomic<int> arrived_{0};
  std::atomic<unsigned> generation_{0};
  int result_true_ = 0;
  int result_arrived_ = 0;
#if !defined(__linux__)
  std::mutex mutex_;
  std::condition_variable cv_;
#endif
};

// Where a CUDA thread is; a fiber sets it before it suspends.
enum LaneState : unsigned char { kRunnable = 0, kAtBarrier = 1, kAtWarp = 2, kFinished = 3 };

// A CUDA thread of the running block: its fiber (fibers), or its record (OS
// threads, which use only the fields before the context).
struct Fiber {
  uint3 thread_idx;
  int predicate;
  unsigned char state;    // a LaneState; read by other threads under a warp's mutex (OS threads)
  int sync_line;          // the __syncthreads or warp collective it waits at (the sync check)
  const char* sync_file;
  // The warp collective it waits at, and its result (aotc_emulator_warp.h).
  int op;
  unsigned mask;
  int operand, width;
  unsigned long long value, result;
  const char* op_name;
  unsigned interval;            // __syncwarps this lane took part in, as the race check orders them
  unsigned barrier_generation;  // OS threads: the phase of the __syncthreads it waits at
  unsigned long long block;     // OS threads: the launch's block it runs (its number in run order)
  unsigned wake;                // OS threads: bumped when its collective completes (a futex word)
#if AOTC_EMU_ASM_SWITCH
  void* sp;  // saved stack pointer while suspended
#else
  ucontext_t context;
#endif
  // __builtin_setjmp's: a failed assert(), or a bad access nothing can stand in for, ends the thread here
  void* stop[5];
};

// What a launch runs; set by the launching thread before the parallel region.
struct Grid {
  void (*body)(const void*);
  const void* invocation;
  unsigned block_x, block_y, grid_x, grid_y;
  int threads;
  unsigned long long blocks;
};

static BlockBarrier block_barrier;
static std::mutex launch_mutex;  // launches of one library run one at a time
static Grid grid;
static int threading = kFibers;
static int worker_limit = 0;  // 0: the number of processors
static std::vector<unsigned long long> block_order;  // empty: x-fastest order
static thread_local uint3 thread_idx;
static thread_local uint3 block_idx;
static thread_local unsigned long long block_number;  // the running block's place in run order
static unsigned long long launch_serial;              // counts the library's launches
static thread_local Fiber* current_fiber;  // null outside fibers
static thread_local Fiber* os_lane;        // OS threads: this thread's record
static dim3 block_dim;
static dim3 grid_dim;
alignas(128) static unsigned char dynamic_shared[kMaxDynamicSharedBytes];
// The static __shared__ objects: aotc_emulator.h puts each in this section.
extern "C" char __start_aotc_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_aotc_shared[] __attribute__((weak, visibility("hidden")));
static Fiber fibers[kMaxThreadsPerBlock];
static unsigned char* fiber_stacks[kMaxThreadsPerBlock];  // lowest usable byte of each
// The launch's failed device assert()s; the first one's report. A GPU ends the
// kernel at the first (cudaErrorAssert), so no block starts after one.
static std::atomic<unsigned long long> failed_assertions;
static char assertion_report[640];
static bool assertion_after_fault;  // the checks had found a fault before the assertion failed
static thread_local char launch_assertion[sizeof(assertion_report) + 64];  // the launching thread's copy

inline const uint3& thread_index() { return thread_idx; }
inline const uint3& block_index() { return block_idx; }
inline const dim3& block_dimension() { return block_dim; }
inline const dim3& grid_dimension() { return grid_dim; }

// All of a library's fiber stacks are one mapping: a process holds at most
// vm.max_map_count mappings (65530 by default), and a guard page per stack
// cost two mappings a fiber, 512 a library of 256-thread blocks, so a process
// that loaded ~120 kernel libraries could map nothing more. Below each stack
// lies a 64 KiB red zone: the lowest is PROT_NONE (an overflow faults), the
// others hold a canary whose top 1 KiB is checked after every launch
// (kFiberStackOverflow), since a stack grows down into the zone below it.
static unsigned char* fiber_region = nullptr;
static int fiber_region_stacks = 0;

AOTC_EMU_RUNTIME inline bool ensure_fiber_stacks(int count) {
  if (count <= fiber_region_stacks) return true;
  const unsigned long slot = kFiberGuardBytes + kFiberStackBytes;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#if defined(MAP_NORESERVE)
  flags |= MAP_NORESERVE;
#endif
  // Between launches no fiber runs, so a larger region may replace the old one.
  void* base = mmap(nullptr, slot * count, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (base == MAP_FAILED) return false;
  if (fiber_region != nullptr) munmap(fiber_region, slot * fiber_region_stacks);
  fiber_region = static_cast<unsigned char*>(base);
  fiber_region_stacks = count;
  mprotect(fiber_region, kFiberGuardBytes, PROT_NONE);
  for (int i = 0; i < count; ++i) {
    fiber_stacks[i] = fiber_region + i * slot + kFiberGuardBytes;
    if (i > 0) __builtin_memset(fiber_stacks[i] - kFiberCanaryBytes, kFiberCanary, kFiberCanaryBytes);
  }
  return true;
}

// Whether every fiber of the last launch stayed within its stack.
AOTC_EMU_RUNTIME inline bool fiber_stacks_intact(int count) {
  for (int i = 1; i < count; ++i) {
    const uint64_t* zone = reinterpret_cast<const uint64_t*>(fiber_stacks[i] - kFiberCanaryBytes);
    for (unsigned long w = 0; w < kFiberCanaryBytes / 8; ++w) {
      if (zone[w] != 0xA5A5A5A5A5A5A5A5ull) return false;
    }
  }
  return true;
}

#if AOTC_EMU_CHECKS
AOTC_EMU_RUNTIME inline void yield_fiber();  // below, once fibers can suspend
#endif

}  // namespace detail
}  // namespace aotc_emu

#if AOTC_EMU_CHECKS
#include "aotc_emulator_check.h"
#endif

#if AOTC_EMU_ASM_SWITCH
// Saves the callee-saved registers on the current stack, stores the stack
// pointer in *save_sp, and resumes the context whose stack pointer is load_sp.
extern "C" __attribute__((visibility("hidden"))) void aotc_emu_switch_context(void** save_sp, void* load_sp);
asm(R"(
  .pushsection .text
  .p2align 4
  .globl aotc_emu_switch_context
  .hidden aotc_emu_switch_context
  .type aotc_emu_switch_context, @function
aotc_emu_switch_context:
  endbr64
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size aotc_emu_switch_context, .-aotc_emu_switch_context
  .popsection
)");
#endif

namespace aotc_emu::detail {

#if AOTC_EMU_ASM_SWITCH
static thread_local void* scheduler_sp;
#else
static thread_local ucontext_t scheduler_context;
#endif

[[noreturn]] AOTC_EMU_RUNTIME static void fiber_main() {
  Fiber* const self = current_fiber;
  // A failed assert() (fail_assertion) and check::stop_thread() come back here.
  if (__builtin_setjmp(self->stop) == 0 && failed_assertions.load(std::memory_order_relaxed) == 0) {
    grid.body(grid.invocation);
  }
  self->state = kFinished;
#if AOTC_EMU_ASM_SWITCH
  aotc_emu_switch_context(&self->sp, scheduler_sp);
#else
  swapcontext(&self->context, &scheduler_context);
#endif
  __builtin_unreachable();
}

AOTC_EMU_RUNTIME inline void start_fiber(Fiber& fiber, unsigned char* stack) {
  fiber.state = kRunnable;
  fiber.predicate = 0;
  fiber.interval = 0;
#if AOTC_EMU_ASM_SWITCH
  // The frame aotc_emu_switch_context pops: six registers, then the return
  // address fiber_main, above which sits a null "return address" so that
  // fiber_main starts with the stack alignment of a called function.
  void** top = reinterpret_cast<void**>(stack + kFiberStackBytes);
  top[-1] = nullptr;
  top[-2] = reinterpret_cast<void*>(&fiber_main);
  for (int i = 3; i <= 8; ++i) top[-i] = nullptr;
  fiber.sp = top - 8;
#else
  getcontext(&fiber.context);
  fiber.context.uc_stack.ss_sp = stack;
  fiber.context.uc_stack.ss_size = kFiberStackBytes;
  fiber.context.uc_link = nullptr;
  makecontext(&fiber.context, reinterpret_cast<void (*)()>(&fiber_main), 0);
#endif
}

AOTC_EMU_RUNTIME inline void resume_fiber(Fiber& fiber) {
  current_fiber = &fiber;
  thread_idx = fiber.thread_idx;
#if AOTC_EMU_ASM_SWITCH
  aotc_emu_switch_context(&scheduler_sp, fiber.sp);
#else
  swapcontext(&scheduler_context, &fiber.context);
#endif
}

AOTC_EMU_RUNTIME inline void suspend_fiber(Fiber& fiber) {
#if AOTC_EMU_ASM_SWITCH
  aotc_emu_switch_context(&fiber.sp, scheduler_sp);
#else
  swapcontext(&fiber.context, &scheduler_context);
#endif
}

#if AOTC_EMU_CHECKS
// A spinning thread lets the others of its worker run (check::spin_point):
// it stays runnable, and the worker's next pass resumes it.
AOTC_EMU_RUNTIME inline void yield_fiber() { suspend_fiber(*current_fiber); }
#endif

}  // namespace aotc_emu::detail

#include "aotc_emulator_warp.h"

namespace aotc_emu::detail {

#if !AOTC_EMU_CHECKS  // checked launches run fibers only
// __syncthreads() in OS-thread mode, out of line: a kernel calls it at every
// barrier, and inlining it everywhere costs compile time.
AOTC_EMU_RUNTIME __attribute__((noinline)) inline Phase sync_block_os_thread(bool predicate) {
  os_lane_stalls(kAtBarrier);  // lanes of its warp may wait at a collective that names it
  const Phase phase = block_barrier.arrive_and_wait(predicate ? 1 : 0, 1);
  __atomic_store_n(&os_lane->state, static_cast<unsigned char>(kRunnable), __ATOMIC_SEQ_CST);
  return phase;
}
#endif

// __syncthreads() and its counting variants.
AOTC_EMU_RUNTIME inline Phase sync_block(bool predicate, const char* file, int line) {
  Fiber* const fiber = current_fiber;
#if !AOTC_EMU_CHECKS
  if (fiber == nullptr) return sync_block_os_thread(predicate);
#endif
  fiber->predicate = predicate ? 1 : 0;
  fiber->sync_file = file;
  fiber->sync_line = line;
  fiber->state = kAtBarrier;
  suspend_fiber(*fiber);  // the worker resumes us once the whole block has arrived
  return block_barrier.last_phase();
}

AOTC_EMU_RUNTIME inline void enter_block(unsigned long long b) {
  block_number = b;
  if (!block_order.empty()) b = block_order[b];
  block_idx = uint3{static_cast<unsigned>(b % grid.grid_x), static_cast<unsigned>((b / grid.grid_x) % grid.grid_y),
                    static_cast<unsigned>(b / (1ull * grid.grid_x * grid.grid_y))};
}

// A GPU runs blocks in no fixed order, so a kernel that is right only in one
// (float atomics that sum in arrival order) shows it under another.
// AOTC_EMULATOR_BLOCK_ORDER, read at every launch: unset or "in-order" (x
// fastest), "reverse", or "shuffle[:SEED]" (a permutation drawn from SEED, 0
// by default).
constexpr unsigned long long kMaxReorderedBlocks = 1ull << 24;

inline unsigned long long splitmix64(unsigned long long& state) {
  unsigned long long z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

AOTC_EMU_RUNTIME inline int plan_block_order(unsigned long long blocks) {
  block_order.clear();
  const char* text = getenv("AOTC_EMULATOR_BLOCK_ORDER");
  if (text == nullptr || *text == 0 || strcmp(text, "in-order") == 0) return kLaunchOk;
  const bool reverse = strcmp(text, "reverse") == 0;
  unsigned long long seed = 0;
  if (!reverse) {
    if (strncmp(text, "shuffle", 7) != 0 || (text[7] != 0 && text[7] != ':')) return kBadBlockOrder;
    if (text[7] == ':') {
      char* end = nullptr;
      if (text[8] < '0' || text[8] > '9') return kBadBlockOrder;
      seed = strtoull(text + 8, &end, 10);
      if (*end != 0) return kBadBlockOrder;
    }
  }
  if (blocks > kMaxReorderedBlocks) return kTooManyBlocksToReorder;
  block_order.resize(blocks);
  for (unsigned long long b = 0; b < blocks; ++b) block_order[b] = reverse ? blocks - 1 - b : b;
  for (unsigned long long b = blocks; !reverse && b > 1; --b) {  // Fisher-Yates
    const unsigned long long other = splitmix64(seed) % b;
    const unsigned long long kept = block_order[b - 1];
    block_order[b - 1] = block_order[other];
    block_order[other] = kept;
  }
  return kLaunchOk;
}

AOTC_EMU_RUNTIME inline uint3 thread_coordinates(int tid) {
  const unsigned t = static_cast<unsigned>(tid);
  return uint3{t % grid.block_x, (t / grid.block_x) % grid.block_y, t / (grid.block_x * grid.block_y)};
}

// Out of line: the frame a failed assert() jumps back to (fail_assertion).
AOTC_EMU_RUNTIME __attribute__((noinline)) static void run_os_thread_body() {
  if (__builtin_setjmp(os_lane->stop) == 0 && failed_assertions.load(std::memory_order_relaxed) == 0) {
    grid.body(grid.invocation);
  }
}

AOTC_EMU_RUNTIME inline void run_as_os_thread(int tid) {
  current_fiber = nullptr;
  os_lane = &fibers[tid];
  thread_idx = thread_coordinates(tid);
  os_lane->thread_idx = thread_idx;
  for (unsigned long long b = 0; b < grid.blocks; ++b) {
    enter_block(b);
    os_lane->interval = 0;
    // The state first: a lane that sees this block's number sees the reset state (os_warp_stalled).
    __atomic_store_n(&os_lane->state, static_cast<unsigned char>(kRunnable), __ATOMIC_SEQ_CST);
    __atomic_store_n(&os_lane->block, b, __ATOMIC_SEQ_CST);
    run_os_thread_body();
    os_lane_stalls(kFinished);
    block_barrier.retire();
#pragma omp barrier
  }
}

AOTC_EMU_RUNTIME inline void run_as_worker(int worker, int workers) {
  // Whole warps per worker, so that a warp's lanes meet on one worker.
  const int warps = (grid.threads + kWarpSize - 1) / kWarpSize;
  const int first = static_cast<int>(kWarpSize * (1ll * warps * worker / workers));
  const int end = static_cast<int>(kWarpSize * (1ll * warps * (worker + 1) / workers));
  const int last = end < grid.threads ? end : grid.threads;
  for (int t = first; t < last; ++t) fibers[t].thread_idx = thread_coordinates(t);
  worker_warp_waiters = 0;
  for (unsigned long long b = 0; b < grid.blocks; ++b) {
    enter_block(b);
#if AOTC_EMU_CHECKS
    check::enter_block();
#endif
    for (int t = first; t < last; ++t) start_fiber(fibers[t], fiber_stacks[t]);
    for (;;) {
      int waiting = 0, waiting_true = 0;
      bool yielded = false;  // a fiber that spins came back runnable (check::spin_point)
      for (int t = first; t < last; ++t) {  // run every fiber until it waits or returns
        if (fibers[t].state == kRunnable) resume_fiber(fibers[t]);
#if AOTC_EMU_CHECKS
        check::settle();  // what a bad access of that fiber's last moment diverted
        yielded = yielded || fibers[t].state == kRunnable;
#endif
        if (fibers[t].state == kAtBarrier) {
          ++waiting;
          waiting_true += fibers[t].predicate;
        }
      }
      current_fiber = nullptr;
      if (worker_warp_waiters != 0) {  // complete the warp collectives of stalled warps, then again
        settle_warps_hook(first, last);
        continue;
      }
      if (yielded) continue;
      if (waiting == 0) break;
#if AOTC_EMU_CHECKS
      check::end_phase(fibers + first, last - first);  // one worker: every thread of the block
#endif
      block_barrier.arrive_and_wait(waiting_true, waiting);
      for (int t = first; t < last; ++t) {
        if (fibers[t].state == kAtBarrier) fibers[t].state = kRunnable;
      }
    }
#if AOTC_EMU_CHECKS
    check::end_block(fibers + first, last - first);
#endif
    block_barrier.retire();
#pragma omp barrier
  }
}

// A device assert() that failed: records the first of the launch and ends
// the calling CUDA thread as if it had returned. The other threads of its
// block run on (a GPU would stop them); no later block starts.
[[noreturn]] AOTC_EMU_RUNTIME __attribute__((noinline, cold)) static void fail_assertion(
    const char* assertion, const char* file, unsigned line, const char* function) {
  Fiber* const lane = current_fiber != nullptr ? current_fiber : os_lane;
  if (lane == nullptr) {  // not in a launch (host code of the library): what glibc's assert does
    fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, function, assertion);
    abort();
  }
  if (failed_assertions.fetch_add(1) == 0) {
#if AOTC_EMU_CHECKS
    assertion_after_fault = check::faulted;
#else
    assertion_after_fault = false;
#endif
    const uint3 b = block_idx, t = thread_idx;
    snprintf(assertion_report, sizeof(assertion_report),
             "device-side assert triggered: block (%u, %u, %u) thread (%u, %u, %u): assertion `%s' failed (%s:%u, in %s)",
             b.x, b.y, b.z, t.x, t.y, t.z, assertion, file, line, function);
  }
#if AOTC_EMU_CHECKS
  check::settle();  // what a bad access just before diverted
#endif
  __builtin_longjmp(lane->stop, 1);
}

template <class T>
inline T load_argument(const void* address) {
  static_assert(std::is_trivially_copyable_v<T>, "kernel parameters must be trivially copyable");
  T value;
  __builtin_memcpy(&value, address, sizeof(T));
  return value;
}

template <class T>
inline unsigned long long pointer_value(const void* address) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<unsigned long long>(load_argument<T>(address));
  } else {
    return 0;
  }
}

// The 8-byte words of an argument's value, any of which may be a pointer the
// kernel follows (a struct of pointers): the memory check reaches what they
// point to. Returns how many it wrote.
template <class T>
inline int argument_words(const void* address, unsigned long long* words) {
  if constexpr (std::is_pointer_v<T> || sizeof(T) < 8) {
    return 0;
  } else {
    const int count = static_cast<int>(sizeof(T) / 8 < 8 ? sizeof(T) / 8 : 8);
    __builtin_memcpy(words, address, 8ull * count);
    return count;
  }
}

template <class T>
constexpr char parameter_kind() {
  if constexpr (std::is_pointer_v<T>) return 'p';
  else if constexpr (std::is_floating_point_v<T>) return 'f';
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return 'i';
  else if constexpr (std::is_integral_v<T>) return 'u';
  else return 'o';
}

// A kernel and its argument values, copied once as cuLaunchKernel copies
// kernelParams; each thread's call gets its own by-value copy.
template <class... P>
struct Invocation {
  void (*kernel)(P...);
  std::tuple<std::remove_cv_t<P>...> values;

  // The emulator's own code, not std::apply: the checks see the kernel's
  // accesses, not these reads of the arguments (on the launching thread's stack).
  template <std::size_t... I>
  AOTC_EMU_RUNTIME void call(std::index_sequence<I...>) const {
    kernel(std::get<I>(values)...);
  }

  AOTC_EMU_RUNTIME static void run(const void* self) {
    static_cast<const Invocation*>(self)->call(std::index_sequence_for<P...>{});
  }
};

inline int check_geometry(const unsigned* grid_size, const unsigned* block,
                          unsigned long long shared_bytes, unsigned max_threads) {
  for (int i = 0; i < 3; ++i) {
    if (block[i] == 0) return kBadBlock;
    if (grid_size[i] == 0) return kBadGrid;
  }
  if (block[0] > 1024 || block[1] > 1024 || block[2] > 64) return kBadBlock;
  if (grid_size[0] > 2147483647u || grid_size[1] > 65535u || grid_size[2] > 65535u) return kBadGrid;
  const unsigned long long threads = 1ull * block[0] * block[1] * block[2];
  if (threads > static_cast<unsigned long long>(kMaxThreadsPerBlock)) return kTooManyThreads;
  if (threads > max_threads) return kOverLaunchBounds;
  if (shared_bytes > kMaxDynamicSharedBytes) return kTooMuchSharedMemory;
  return kLaunchOk;
}

AOTC_EMU_RUNTIME inline int run_grid(const unsigned* grid_size, const unsigned* block, unsigned long long shared_bytes) {
  const int threads = static_cast<int>(block[0] * block[1] * block[2]);
#if AOTC_EMU_CHECKS
  const bool use_fibers = true;  // the checks follow fibers
#else
  const bool use_fibers = threading == kFibers;
#endif
  int team = threads;
  if (use_fibers) {
    const int warps = (threads + kWarpSize - 1) / kWarpSize;  // a worker runs whole warps
    team = worker_limit > 0 ? worker_limit : omp_get_num_procs();
    team = team < 1 ? 1 : (team > warps ? warps : team);
#if AOTC_EMU_CHECKS
    team = 1;  // the checks see each barrier phase whole, on one worker
#endif
    if (!ensure_fiber_stacks(threads)) return kOutOfMemory;
  }
  grid.block_x = block[0];
  grid.block_y = block[1];
  grid.grid_x = grid_size[0];
  grid.grid_y = grid_size[1];
  grid.threads = threads;
  grid.blocks = 1ull * grid_size[0] * grid_size[1] * grid_size[2];
  const int order = plan_block_order(grid.blocks);
  if (order != kLaunchOk) return order;
  block_dim = dim3(block[0], block[1], block[2]);
  grid_dim = dim3(grid_size[0], grid_size[1], grid_size[2]);
  begin_warps(!use_fibers);
  ++launch_serial;
  failed_assertions.store(0, std::memory_order_relaxed);
  launch_assertion[0] = 0;
  // Shared memory is uninitialised on a GPU: poison it so that reading it
  // before writing shows up (NaN, huge values) instead of passing by luck.
  __builtin_memset(dynamic_shared, 0xFF, shared_bytes);
  if (__stop_aotc_shared != __start_aotc_shared) {
    __builtin_memset(__start_aotc_shared, 0xFF, __stop_aotc_shared - __start_aotc_shared);
  }

  std::atomic<bool> team_complete{true};
  omp_set_dynamic(0);
#pragma omp parallel num_threads(team)
  {
    // Fibers work with any number of workers, so a smaller team (an
    // OMP_THREAD_LIMIT, a launch from inside a parallel region) only slows
    // them down. One OS thread per CUDA thread needs exactly the block size.
    const int workers = omp_get_num_threads();
#pragma omp single
    block_barrier.reset(workers);
    if (use_fibers) {
      run_as_worker(omp_get_thread_num(), workers);
    } else if (workers == threads) {
      run_as_os_thread(omp_get_thread_num());
    } else {
      team_complete.store(false, std::memory_order_relaxed);
    }
  }
  if (!team_complete.load()) return kThreadsUnavailable;
  if (use_fibers && !fiber_stacks_intact(threads)) return kFiberStackOverflow;
#if AOTC_EMU_CHECKS
  const bool check_fault = check::end_launch();
#else
  const bool check_fault = false;
#endif
  if (failed_assertions.load() != 0) {
    const unsigned long long others = failed_assertions.load() - 1;
    snprintf(launch_assertion, sizeof(launch_assertion), others == 0 ? "%s" : "%s; %llu more failed assertion%s in this launch",
             assertion_report, others, others == 1 ? "" : "s");
    if (!(check_fault && assertion_after_fault)) return kDeviceAssert;
  }
  if (check_fault) return kKernelFault;
  if (warp_stuck) return kWarpStuck;
  return kLaunchOk;
}

template <class... P, std::size_t... I>
int launch_unpacked(void (*kernel)(P...), const unsigned* grid_size, const unsigned* block,
                    unsigned long long shared_bytes, void** args, unsigned max_threads,
                    const char* parameter_names, std::index_sequence<I...>) {
  const int status = check_geometry(grid_size, block, shared_bytes, max_threads);
  if (status != kLaunchOk) return status;
  if (sizeof...(P) > 0 && args == nullptr) return kNullArguments;
  const Invocation<P...> invocation{kernel, {load_argument<std::remove_cv_t<P>>(args[I])...}};
  std::lock_guard<std::mutex> lock(launch_mutex);
#if AOTC_EMU_CHECKS
  // Each argument's pointer value (0 for the others), so a global fault can name its array.
  const unsigned long long pointers[] = {pointer_value<std::remove_cv_t<P>>(args[I])..., 0};
  unsigned long long words[8 * sizeof...(P) + 1];
  int word_count = 0;
  ((word_count += argument_words<std::remove_cv_t<P>>(args[I], words + word_count)), ...);
  if (!check::begin_launch(shared_bytes, parameter_names, pointers, sizeof...(P), words, word_count)) {
    return kNoAddressSanitizer;
  }
  check::unordered_accesses();  // until the launch's first fence (aotc_emulator_order.h)
#else
  (void)parameter_names;
#endif
  grid.body = &Invocation<P...>::run;
  grid.invocation = &invocation;
  return run_grid(grid_size, block, shared_bytes);
}

}  // namespace aotc_emu::detail

namespace aotc_emu {

// Runs kernel over the grid. args[i] points at the i-th argument's value, as
// cuLaunchKernel's kernelParams do. Returns a LaunchStatus.
// parameter_names: "A,B,M,..." (each parameter's name), for reports.
template <class... P>
int launch(void (*kernel)(P...), const unsigned* grid_size, const unsigned* block,
           unsigned long long shared_bytes, void** args, unsigned max_threads,
           const char* parameter_names = "") {
  return detail::launch_unpacked(kernel, grid_size, block, shared_bytes, args, max_threads, parameter_names,
                                 std::index_sequence_for<P...>{});
}

// Fills up to `capacity` parameter sizes and kinds ('p' pointer, 'i' signed
// integer, 'u' unsigned integer, 'f' floating point, 'o' other) and returns
// the parameter count.
template <class... P>
int describe(void (*)(P...), unsigned long long* sizes, char* kinds, int capacity) {
  const unsigned long long all_sizes[] = {sizeof(std::remove_cv_t<P>)..., 0};
  const char all_kinds[] = {detail::parameter_kind<std::remove_cv_t<P>>()..., 0};
  for (int i = 0; i < static_cast<int>(sizeof...(P)) && i < capacity; ++i) {
    sizes[i] = all_sizes[i];
    kinds[i] = all_kinds[i];
  }
  return static_cast<int>(sizeof...(P));
}

}  // namespace aotc_emu

// <assert.h>'s assert() calls this when its condition is false. Hidden, so
// that the kernel's calls bind here and not to the C library's, which aborts
// the process. NDEBUG still removes every assert().
extern "C" [[noreturn]] __attribute__((visibility("hidden"))) void __assert_fail(
    const char* assertion, const char* file, unsigned int line, const char* function) noexcept {
  ::aotc_emu::detail::fail_assertion(assertion, file, line, function);
}

// The report of the last launch on this thread that returned kDeviceAssert.
extern "C" __attribute__((visibility("default"))) const char* aotc_emu_assertion() {
  return ::aotc_emu::detail::launch_assertion;
}

// The loader refuses a library built against another launch ABI.
extern "C" __attribute__((visibility("default"))) int aotc_emu_abi_version() { return 1; }

extern "C" __attribute__((visibility("default"))) unsigned long long aotc_emu_max_dynamic_shared_bytes() {
  return ::aotc_emu::kMaxDynamicSharedBytes;
}

// threading: 0 fibers, 1 OS threads; workers: fiber workers, 0 for one per
// processor. Returns 0, or 1 for a bad value. Takes effect at the next launch.
extern "C" __attribute__((visibility("default"))) int aotc_emu_configure(int threading, int workers) {
  if ((threading != ::aotc_emu::kFibers && threading != ::aotc_emu::kOsThreads) || workers < 0) return 1;
  std::lock_guard<std::mutex> lock(::aotc_emu::detail::launch_mutex);
  ::aotc_emu::detail::threading = threading;
  ::aotc_emu::detail::worker_limit = workers;
  return 0;
}
