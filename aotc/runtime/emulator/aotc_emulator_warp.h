// aotc_emulator_warp.h: warps and their collectives. Included by
// aotc_emulator_runtime.h once fibers can suspend.
//
// A warp is 32 consecutive threads of the block by linear thread index, as on
// a GPU. Its lanes are not in lockstep: as on sm_70 and later (independent
// thread scheduling), they meet only where CUDA makes them meet. Each warp
// collective (shuffle, vote, match, reduce, __syncwarp, __activemask)
// suspends the lane until it completes:
// - one with a mask completes when every lane the mask names has arrived at
//   the same operation with the same mask, or has exited (CUDA's rule: "all
//   non-exited threads named in mask must execute the same intrinsic with the
//   same mask");
// - __activemask completes when no lane of the warp can run on, and returns
//   the lanes that wait at the same call.
// With fibers, a worker runs whole warps, so it settles a warp's collectives
// once none of its fibers can run (settle_warps). With OS threads, each warp
// has a mutex, and the lane that stalls the warp last settles it.
// A collective that can never complete (a lane its mask names waits at
// __syncthreads, or at another collective: on a GPU, a hang) is completed
// with the lanes present, and the launch fails: the sync check names the
// lanes and lines, an unchecked launch returns kWarpStuck.
#pragma once

namespace aotc_emu::detail {

enum WarpOp : int {
  kShuffleIndex, kShuffleUp, kShuffleDown, kShuffleXor,
  kBallot, kAny, kAll, kUni,
  kMatchAny, kMatchAll,
  kReduceAdd, kReduceMin, kReduceMax, kReduceMinUnsigned, kReduceMaxUnsigned, kReduceAnd, kReduceOr, kReduceXor,
  kSyncwarp, kActivemask,
};

static thread_local int worker_warp_waiters;  // fibers: this worker's lanes at a collective
static int os_warp_waiters[kMaxWarps];        // OS threads: lanes of each warp at a collective
static std::mutex os_warp_mutex[kMaxWarps];
static bool lanes_are_os_threads;  // this launch runs one OS thread per CUDA thread
static int warp_stuck;             // a collective was completed without a lane it named
// How the launch loop settles warps: set by the first collective, so that a
// library whose kernels call none never instantiates the machinery below.
static void (*settle_warps_hook)(int first, int last);
static void (*os_settle_hook)(int warp);  // takes the warp's mutex

// The machinery below is templates: a library whose kernels call no warp
// collective instantiates none of it (compile time: benchmarks/RESULTS.md).
#define AOTC_EMU_LAZY template <int = 0>

// OS threads: a lane sleeps on its record's `wake` word until a collective completes.
AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline void wake_lane(Fiber& lane) {
  __atomic_add_fetch(&lane.wake, 1u, __ATOMIC_SEQ_CST);
#if defined(__linux__)
  syscall(SYS_futex, &lane.wake, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
#endif
}

AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline void sleep_while_at_collective(Fiber& lane) {
  for (;;) {
    const unsigned seen = __atomic_load_n(&lane.wake, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&lane.state, __ATOMIC_SEQ_CST) != kAtWarp) return;
#if defined(__linux__)
    syscall(SYS_futex, &lane.wake, FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
#else
    (void)seen;
    std::this_thread::yield();
#endif
  }
}

AOTC_EMU_RUNTIME inline void begin_warps(bool os_threads) {
  warp_stuck = 0;
  lanes_are_os_threads = os_threads;
  for (int t = 0; t < grid.threads; ++t) {  // OS threads: nobody has started a block yet
    fibers[t].state = kRunnable;
    fibers[t].block = ~0ull;
  }
}

// The lanes of `warp` that exist: a last warp may be partial.
AOTC_EMU_RUNTIME inline unsigned lanes_present(int warp) {
  const int n = grid.threads - kWarpSize * warp;
  return n >= kWarpSize ? ~0u : (1u << n) - 1u;
}

// The lane a shuffle reads, as PTX's shfl.sync computes it from CUDA's
// operands (c = ((32 - width) << 8) | clamp); its own lane when out of range.
AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline int shuffle_source(int op, int lane, int operand, int width) {
  const int segment = (kWarpSize - width) & 31;
  const int clamp = op == kShuffleUp ? 0 : 31;
  const int b = operand & 31;
  const int min_lane = lane & segment, max_lane = min_lane | (clamp & ~segment);
  int source = min_lane | (b & ~segment);
  bool inside = source <= max_lane;
  if (op == kShuffleUp) {
    source = lane - b;
    inside = source >= max_lane;
  } else if (op == kShuffleDown) {
    source = lane + b;
    inside = source <= max_lane;
  } else if (op == kShuffleXor) {
    source = lane ^ b;
    inside = source <= max_lane;
  }
  return inside ? source : lane;
}

AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline unsigned reduce_values(int op, const Fiber* lanes, unsigned group) {
  unsigned result = static_cast<unsigned>(lanes[__builtin_ctz(group)].value);
  for (unsigned rest = group & (group - 1); rest != 0; rest &= rest - 1) {
    const unsigned v = static_cast<unsigned>(lanes[__builtin_ctz(rest)].value);
    const int sv = static_cast<int>(v), sr = static_cast<int>(result);
    switch (op) {
      case kReduceAdd: result += v; break;
      case kReduceMin: result = static_cast<unsigned>(sv < sr ? sv : sr); break;
      case kReduceMax: result = static_cast<unsigned>(sv > sr ? sv : sr); break;
      case kReduceMinUnsigned: result = v < result ? v : result; break;
      case kReduceMaxUnsigned: result = v > result ? v : result; break;
      case kReduceAnd: result &= v; break;
      case kReduceOr: result |= v; break;
      default: result ^= v; break;
    }
  }
  return result;
}

// Completes the collective of the lanes in `group` (all at one operation
// with one mask): each gets its result and may run on.
AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline void complete(int warp, unsigned group, unsigned exited) {
  Fiber* const lanes = fibers + kWarpSize * warp;
  const int op = lanes[__builtin_ctz(group)].op;
  unsigned ballot = 0, interval = 0;
  for (unsigned rest = group; rest != 0; rest &= rest - 1) {
    const int l = __builtin_ctz(rest);
    if (lanes[l].value != 0) ballot |= 1u << l;
    if (lanes[l].interval > interval) interval = lanes[l].interval;
  }
  for (unsigned rest = group; rest != 0; rest &= rest - 1) {
    const int l = __builtin_ctz(rest);
    Fiber& lane = lanes[l];
    if (op <= kShuffleXor) {
      const int source = shuffle_source(op, l, lane.operand, lane.width);
      if ((group >> source) & 1u) {
        lane.result = lanes[source].value;
      } else if (((lane.mask & lanes_present(warp)) >> source) & 1u) {
        // A lane the mask names, which returned instead: a reduction that
        // counted on it sums garbage on a GPU. Poison, as unwritten shared memory is.
        lane.result = ~0ull;
#if AOTC_EMU_CHECKS
        check::inactive_source(lane, kWarpSize * warp + l, source, ((exited >> source) & 1u) != 0);
#endif
      } else {
        // Outside the mask or past a partial last warp: CUDA leaves the value
        // undefined, and the idioms that read such a lane (a half-warp
        // reduction whose lane 0 alone is used) discard it. The caller's own
        // value, as for a source lane out of range.
        lane.result = lane.value;
      }
    } else if (op == kBallot) {
      lane.result = ballot;
    } else if (op == kAny) {
      lane.result = ballot != 0;
    } else if (op == kAll) {
      lane.result = ballot == group;
    } else if (op == kUni) {
      lane.result = ballot == 0 || ballot == group;
    } else if (op == kMatchAny || op == kMatchAll) {
      unsigned same = 0;
      for (unsigned other = group; other != 0; other &= other - 1) {
        if (lanes[__builtin_ctz(other)].value == lane.value) same |= 1u << __builtin_ctz(other);
      }
      lane.result = op == kMatchAny ? same : (same == group ? group : 0u);
      lane.operand = same == group;  // match_all's predicate
    } else if (op >= kReduceAdd && op <= kReduceXor) {
      lane.result = reduce_values(op, lanes, group);
    } else if (op == kSyncwarp) {
      lane.interval = interval + 1;  // later accesses of these lanes are ordered after earlier ones
    } else {  // __activemask
      lane.result = group;
    }
  }
#if AOTC_EMU_CHECKS
  if (op == kSyncwarp) check::syncwarp_done(warp, group);
#endif
  // Only now: an OS thread released runs on at once, and may overwrite its value.
  for (unsigned rest = group; rest != 0; rest &= rest - 1) {
    Fiber& lane = lanes[__builtin_ctz(rest)];
    __atomic_store_n(&lane.state, static_cast<unsigned char>(kRunnable), __ATOMIC_SEQ_CST);
    if (lanes_are_os_threads) wake_lane(lane);
  }
  (void)exited;
}

// The lanes of `pending` that `alike` puts with its lowest lane: the lanes of one collective.
template <class Alike>
AOTC_EMU_RUNTIME inline unsigned group_of(const Fiber* lanes, unsigned pending, Alike alike) {
  const Fiber& first = lanes[__builtin_ctz(pending)];
  unsigned group = 0;
  for (unsigned rest = pending; rest != 0; rest &= rest - 1) {
    if (alike(lanes[__builtin_ctz(rest)], first)) group |= 1u << __builtin_ctz(rest);
  }
  return group;
}

// One call: the same collective under the same mask.
AOTC_EMU_RUNTIME inline bool same_call(const Fiber& a, const Fiber& b) { return a.op == b.op && a.mask == b.mask; }

// One __activemask: called from the same source line.
AOTC_EMU_RUNTIME inline bool same_place(const Fiber& a, const Fiber& b) {
  return a.sync_line == b.sync_line && a.sync_file == b.sync_file;
}

// Settles `warp`, whose lanes are all stalled (at a collective, at
// __syncthreads, or returned). Returns the lanes released.
AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline unsigned settle_warp(int warp) {
  Fiber* const lanes = fibers + kWarpSize * warp;
  const unsigned present = lanes_present(warp);
  unsigned waiting = 0, exited = ~present;
  for (unsigned rest = present; rest != 0; rest &= rest - 1) {
    const int l = __builtin_ctz(rest);
    const unsigned char state = __atomic_load_n(&lanes[l].state, __ATOMIC_SEQ_CST);
    if (state == kAtWarp) waiting |= 1u << l;
    if (state == kFinished) exited |= 1u << l;
  }
  unsigned released = 0, active_mask_calls = 0, stuck = 0, first_stuck = 0;
  for (unsigned pending = waiting; pending != 0;) {
    const Fiber& first = lanes[__builtin_ctz(pending)];
    const unsigned group = group_of(lanes, pending, same_call);
    pending &= ~group;
    if (first.op == kActivemask) {
      active_mask_calls |= group;
    } else if ((first.mask & ~exited & ~group) == 0) {
      complete(warp, group, exited);
      released |= group;
    } else {
      if (stuck == 0) first_stuck = group;
      stuck |= group;
    }
  }
  if (released != 0) return released;
  // Nothing with a mask can complete: each __activemask returns the lanes at its call.
  for (unsigned pending = active_mask_calls; pending != 0;) {
    const unsigned group = group_of(lanes, pending, same_place);
    pending &= ~group;
    complete(warp, group, exited);
    released |= group;
  }
  if (released != 0 || stuck == 0) return released;
  // On a GPU these lanes would wait forever: report, then let them run on.
  const int blocked = __builtin_ctz(first_stuck);
  const int absent = __builtin_ctz(lanes[blocked].mask & ~exited & ~first_stuck);
  (void)absent;
#if AOTC_EMU_CHECKS
  check::divergent_warp(lanes[blocked], kWarpSize * warp + blocked, lanes[absent], kWarpSize * warp + absent);
  if (!(AOTC_EMU_CHECKS & check::kSync)) warp_stuck = 1;
#else
  warp_stuck = 1;
#endif
  for (unsigned pending = stuck; pending != 0;) {
    const unsigned group = group_of(lanes, pending, same_call);
    pending &= ~group;
    complete(warp, group, exited | ~group);
    released |= group;
  }
  return released;
}

// Fibers: settle the warps of this worker whose fibers all wait somewhere
// (one that spins, check::spin_point, is still running).
AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline void settle_warps(int first, int last) {
  for (int warp = first / kWarpSize; warp * kWarpSize < last; ++warp) {
    bool running = false;
    for (unsigned rest = lanes_present(warp); rest != 0 && !running; rest &= rest - 1) {
      running = fibers[kWarpSize * warp + __builtin_ctz(rest)].state == kRunnable;
    }
    if (running) continue;
    worker_warp_waiters -= __builtin_popcount(settle_warp(warp));
  }
}

// OS threads: whether no lane of `warp` can run on. A lane at __syncthreads
// runs on once its phase has opened, and a lane that has not started this
// block (another lane got there first) is about to run.
AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline bool os_warp_stalled(int warp, unsigned long long block) {
  const Fiber* lanes = fibers + kWarpSize * warp;
  const unsigned generation = block_barrier.generation();
  for (unsigned rest = lanes_present(warp); rest != 0; rest &= rest - 1) {
    const Fiber& lane = lanes[__builtin_ctz(rest)];
    if (__atomic_load_n(&lane.block, __ATOMIC_SEQ_CST) != block) return false;
    const unsigned char state = __atomic_load_n(&lane.state, __ATOMIC_SEQ_CST);
    if (state == kRunnable) return false;
    if (state == kAtBarrier && __atomic_load_n(&lane.barrier_generation, __ATOMIC_SEQ_CST) != generation) return false;
  }
  return true;
}

// OS threads, with the warp's mutex held: settle it while it is stalled.
AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline void os_settle(int warp) {
  while (os_warp_waiters[warp] != 0 && os_warp_stalled(warp, os_lane->block)) {
    const unsigned released = settle_warp(warp);
    if (released == 0) break;
    __atomic_sub_fetch(&os_warp_waiters[warp], __builtin_popcount(released), __ATOMIC_SEQ_CST);
  }
}

AOTC_EMU_LAZY AOTC_EMU_RUNTIME inline void os_settle_locked(int warp) {
  std::lock_guard<std::mutex> lock(os_warp_mutex[warp]);
  os_settle(warp);
}

// OS threads: this lane stops at __syncthreads (kAtBarrier) or returns
// (kFinished). Lanes of its warp may wait at a collective that names it.
AOTC_EMU_RUNTIME inline void os_lane_stalls(unsigned char state) {
  Fiber* const lane = os_lane;
  if (state == kAtBarrier) __atomic_store_n(&lane->barrier_generation, block_barrier.generation(), __ATOMIC_SEQ_CST);
  __atomic_store_n(&lane->state, state, __ATOMIC_SEQ_CST);
  const int warp = static_cast<int>(lane - fibers) / kWarpSize;
  if (__atomic_load_n(&os_warp_waiters[warp], __ATOMIC_SEQ_CST) == 0) return;  // then a collective set the hook
  os_settle_hook(warp);
}

// Runs one warp collective for the calling lane; returns its record, which
// holds the result.
AOTC_EMU_LAZY AOTC_EMU_RUNTIME __attribute__((noinline)) inline const Fiber& warp_collective(
    int op, unsigned mask, unsigned long long value, int operand, int width, const char* name,
    const char* file, int line) {
  Fiber* const lane = current_fiber != nullptr ? current_fiber : os_lane;
  const int tid = static_cast<int>(lane - fibers);
  __atomic_store_n(&settle_warps_hook, &settle_warps<>, __ATOMIC_RELAXED);
  __atomic_store_n(&os_settle_hook, &os_settle_locked<>, __ATOMIC_RELAXED);
  const int warp = tid / kWarpSize, l = tid % kWarpSize;
  lane->op = op;
  lane->mask = mask;
  lane->value = value;
  lane->operand = operand;
  lane->width = width;
  lane->op_name = name;
  lane->sync_file = file;
  lane->sync_line = line;
  if (op != kActivemask && ((mask >> l) & 1u) == 0) {
    // Undefined in CUDA; here the lane takes part alone.
#if AOTC_EMU_CHECKS
    check::lane_not_in_mask(*lane, tid);
#endif
    complete(warp, 1u << l, ~(1u << l));
    return *lane;
  }
  if (current_fiber != nullptr) {
    lane->state = kAtWarp;
    ++worker_warp_waiters;
    suspend_fiber(*lane);  // the worker resumes it once the collective completes
    return *lane;
  }
  {
    std::lock_guard<std::mutex> lock(os_warp_mutex[warp]);
    __atomic_store_n(&lane->state, static_cast<unsigned char>(kAtWarp), __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&os_warp_waiters[warp], 1, __ATOMIC_SEQ_CST);
    os_settle(warp);
  }
  sleep_while_at_collective(*lane);
  return *lane;
}

template <class T>
AOTC_EMU_RUNTIME inline unsigned long long warp_bits(T value) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "a warp collective moves at most 8 bytes");
  unsigned long long bits = 0;
  __builtin_memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class T>
AOTC_EMU_RUNTIME inline T warp_value(unsigned long long bits) {
  T value;
  __builtin_memcpy(&value, &bits, sizeof(T));
  return value;
}

template <class T>
inline T shuffle(int op, unsigned mask, T var, int operand, int width, const char* name, const char* file, int line) {
  return warp_value<T>(warp_collective(op, mask, warp_bits(var), operand, width, name, file, line).result);
}

}  // namespace aotc_emu::detail

// ---- CUDA's warp intrinsics ------------------------------------------------------
// Each records its call site, so that a report can name the line.
#define AOTC_EMU_SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()
namespace aotc_emu::detail {
// The types CUDA's shuffles and matches take; other integers promote to int,
// as they do to CUDA's int overload. Templates, so that a kernel pays to
// compile only the ones it calls.
template <class T>
constexpr bool kWarpWord = std::is_same_v<T, int> || std::is_same_v<T, unsigned int> || std::is_same_v<T, long> ||
                           std::is_same_v<T, unsigned long> || std::is_same_v<T, long long> ||
                           std::is_same_v<T, unsigned long long> || std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T>
constexpr bool kPromotedToInt = (std::is_integral_v<T> || std::is_enum_v<T>) && sizeof(T) < sizeof(int);
template <class T>
using WarpWord = std::enable_if_t<kWarpWord<T>, T>;
template <class T>
using PromotedWord = std::enable_if_t<kPromotedToInt<T>, int>;
}  // namespace aotc_emu::detail

#define AOTC_EMU_SHUFFLE(NAME, OP, OPERAND)                                                                  \
  template <class T>                                                                                         \
  static inline ::aotc_emu::detail::WarpWord<T> NAME(unsigned mask, T var, OPERAND operand, int width = warpSize, \
                                                     AOTC_EMU_SITE) {                                        \
    return ::aotc_emu::detail::shuffle(::aotc_emu::detail::OP, mask, var, static_cast<int>(operand), width, #NAME, file, line); \
  }                                                                                                          \
  template <class T>                                                                                         \
  static inline ::aotc_emu::detail::PromotedWord<T> NAME(unsigned mask, T var, OPERAND operand, int width = warpSize, \
                                                         AOTC_EMU_SITE) {                                    \
    return NAME<int>(mask, static_cast<int>(var), operand, width, file, line);                               \
  }
AOTC_EMU_SHUFFLE(__shfl_sync, kShuffleIndex, int)
AOTC_EMU_SHUFFLE(__shfl_up_sync, kShuffleUp, unsigned)
AOTC_EMU_SHUFFLE(__shfl_down_sync, kShuffleDown, unsigned)
AOTC_EMU_SHUFFLE(__shfl_xor_sync, kShuffleXor, int)
#undef AOTC_EMU_SHUFFLE

#define AOTC_EMU_VOTE(NAME, OP, R)                                                                  \
  template <class = void>                                                                          \
  static inline R NAME(unsigned mask, int predicate, AOTC_EMU_SITE) {                              \
    return static_cast<R>(::aotc_emu::detail::warp_collective(::aotc_emu::detail::OP, mask,        \
                                                              predicate != 0, 0, 0, #NAME, file, line) \
                              .result);                                                            \
  }
AOTC_EMU_VOTE(__ballot_sync, kBallot, unsigned)
AOTC_EMU_VOTE(__any_sync, kAny, int)
AOTC_EMU_VOTE(__all_sync, kAll, int)
AOTC_EMU_VOTE(__uni_sync, kUni, int)
#undef AOTC_EMU_VOTE

template <class = void>
static inline unsigned __activemask(AOTC_EMU_SITE) {
  return static_cast<unsigned>(
      ::aotc_emu::detail::warp_collective(::aotc_emu::detail::kActivemask, 0, 0, 0, 0, "__activemask", file, line)
          .result);
}

// PTX's %lanemask_eq/_lt/_le/_gt/_ge registers of the calling lane. CUDA has
// no functions of these names (a kernel reads the registers with inline PTX,
// which the emulator refuses; HIP spells them so). Templates, so that a
// kernel's own function of one of these names is preferred where it has one.
namespace aotc_emu::detail {
AOTC_EMU_RUNTIME inline unsigned lane_bit() {
  const Fiber* const lane = current_fiber != nullptr ? current_fiber : os_lane;
  return 1u << (static_cast<unsigned>(lane - fibers) % kWarpSize);
}
}  // namespace aotc_emu::detail
template <class = void>
static inline unsigned __lanemask_eq() { return ::aotc_emu::detail::lane_bit(); }
template <class = void>
static inline unsigned __lanemask_lt() { return ::aotc_emu::detail::lane_bit() - 1u; }
template <class = void>
static inline unsigned __lanemask_le() { return (::aotc_emu::detail::lane_bit() << 1) - 1u; }
template <class = void>
static inline unsigned __lanemask_gt() { return ~((::aotc_emu::detail::lane_bit() << 1) - 1u); }
template <class = void>
static inline unsigned __lanemask_ge() { return ~(::aotc_emu::detail::lane_bit() - 1u); }

template <class = void>
static inline void __syncwarp(unsigned mask = 0xFFFFFFFFu, AOTC_EMU_SITE) {
  ::aotc_emu::detail::warp_collective(::aotc_emu::detail::kSyncwarp, mask, 0, 0, 0, "__syncwarp", file, line);
}

template <class T>
static inline std::enable_if_t<::aotc_emu::detail::kWarpWord<T>, unsigned> __match_any_sync(unsigned mask, T value,
                                                                                              AOTC_EMU_SITE) {
  return static_cast<unsigned>(::aotc_emu::detail::warp_collective(::aotc_emu::detail::kMatchAny, mask,
                                                                   ::aotc_emu::detail::warp_bits(value), 0, 0,
                                                                   "__match_any_sync", file, line)
                                   .result);
}
template <class T>
static inline std::enable_if_t<::aotc_emu::detail::kWarpWord<T>, unsigned> __match_all_sync(unsigned mask, T value,
                                                                                              int* predicate, AOTC_EMU_SITE) {
  const auto& lane = ::aotc_emu::detail::warp_collective(::aotc_emu::detail::kMatchAll, mask,
                                                         ::aotc_emu::detail::warp_bits(value), 0, 0, "__match_all_sync",
                                                         file, line);
  *predicate = lane.operand;
  return static_cast<unsigned>(lane.result);
}
template <class T>
static inline std::enable_if_t<::aotc_emu::detail::kPromotedToInt<T>, unsigned> __match_any_sync(unsigned mask, T value,
                                                                                                   AOTC_EMU_SITE) {
  return __match_any_sync<int>(mask, static_cast<int>(value), file, line);
}
template <class T>
static inline std::enable_if_t<::aotc_emu::detail::kPromotedToInt<T>, unsigned> __match_all_sync(unsigned mask, T value,
                                                                                                   int* predicate, AOTC_EMU_SITE) {
  return __match_all_sync<int>(mask, static_cast<int>(value), predicate, file, line);
}

#define AOTC_EMU_REDUCE(NAME, OP, T)                                                                \
  template <class = void>                                                                          \
  static inline T NAME(unsigned mask, T value, AOTC_EMU_SITE) {                                    \
    return static_cast<T>(::aotc_emu::detail::warp_collective(::aotc_emu::detail::OP, mask,        \
                                                              static_cast<unsigned>(value), 0, 0, #NAME, \
                                                              file, line).result);                 \
  }
AOTC_EMU_REDUCE(__reduce_add_sync, kReduceAdd, int)
AOTC_EMU_REDUCE(__reduce_add_sync, kReduceAdd, unsigned)
AOTC_EMU_REDUCE(__reduce_min_sync, kReduceMin, int)
AOTC_EMU_REDUCE(__reduce_min_sync, kReduceMinUnsigned, unsigned)
AOTC_EMU_REDUCE(__reduce_max_sync, kReduceMax, int)
AOTC_EMU_REDUCE(__reduce_max_sync, kReduceMaxUnsigned, unsigned)
AOTC_EMU_REDUCE(__reduce_and_sync, kReduceAnd, unsigned)
AOTC_EMU_REDUCE(__reduce_or_sync, kReduceOr, unsigned)
AOTC_EMU_REDUCE(__reduce_xor_sync, kReduceXor, unsigned)
#undef AOTC_EMU_REDUCE
