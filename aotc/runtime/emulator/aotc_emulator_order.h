// aotc_emulator_order.h: what orders plain accesses of one block besides its
// barriers and __syncwarp, for the race check: a fence and an atomic
// (docs/design.md, "The race check's model of atomics"). Included by
// aotc_emulator_check.h.
//
// A release is a __threadfence*() followed, in the same thread, by an atomic
// write or read-modify-write of a word; an acquire is an atomic read (or
// read-modify-write) of that word that sees the release's value, or a later
// one its read-modify-writes left, followed by a fence in the reading thread.
// Each thread counts its fences (its clock), and each access is stamped with
// its thread's clock. Each thread keeps a vector clock over the block's
// threads (its row of `seen`): the accesses of thread u whose stamps are below
// seen[u] are ordered before it. A fence first takes in what the thread's
// atomic reads since its last fence brought (its row of `pending`), then
// counts itself, so that its row covers everything before it. An atomic write
// leaves the writer's row on its word (a read-modify-write joins it to what
// the word held: its release sequence goes on; a store replaces it); an atomic
// read joins the word's row into the reader's pending row.
//
// A thread's row changes at its fences, and its atomic writes release the
// row its last fence left. It also changes at a __syncwarp, which orders its
// lanes' memory accesses (the CUDA guide: it "guarantees memory ordering
// among threads participating in the barrier"): each lane taking part counts
// it on its clock, and every lane's row becomes the join of all of theirs.
// So what one lane acquired before it, the others have after it (one lane
// waits on a flag, then the warp reads), and what each did before it, any of
// them releases after a fence that follows it (the warp writes, then one lane
// hands it on). A lane that had fenced before the __syncwarp keeps the row
// it fenced with for its releases (`released`) until it fences again. This
// needs the clocks, so it holds from a launch's first fence on: a __syncwarp
// before that passes nothing on (a false report, never a hidden race).
// Barriers start a new epoch, which orders everything before them.
//
// Nothing here exists until a launch first fences: until then every thread's
// clock is 0, nothing is released, and the hooks call the checks' forms that
// know nothing of it (check::plain_access_now, aotc_emulator_check.h).
#pragma once

namespace aotc_emu::check {

// The fence clocks of a byte's last writer and of the threads its reader and
// updater groups name (Shadow::writer, reader, updater), for `ordering` launches.
struct Stamps {
  unsigned write, read, update;
};
// The row an atomic word carries: what the last release on it (and the
// read-modify-writes after it) ordered before its value.
struct WordClock {
  unsigned long long address;
  unsigned generation;  // the block it belongs to; older ones are free slots
  unsigned row;         // in word_rows
  unsigned long long version;
};

static bool ordering;             // this launch has fenced: accesses are stamped, atomics carry rows
static int order_threads;         // the block's threads (rows and columns)
static int order_capacity;        // threads the rows below were allocated for
// Clocks and rows run on from block to block of a launch: a row's entry for
// thread u is a value u's clock had, which no access u makes later is below,
// so what an earlier block left in a row covers nothing of this one.
static unsigned* fence_clock;     // per thread: its fences in this launch
static unsigned* seen;            // per thread, a row over the block's threads
static unsigned* pending;         // per thread: the rows of its atomic reads since its last fence
static unsigned char* row_state;  // per thread, in this block: kFenced, kPending, kReleasedKept
static unsigned long long* joined_version;  // per thread: the last word version its pending row took in
// kReleasedKept: a __syncwarp since its last fence grew its row, and `released` keeps the row it fenced with.
constexpr unsigned char kFenced = 1, kPending = 2, kReleasedKept = 4;
static unsigned* released;        // per thread, a row: what its atomic writes release (kReleasedKept)
static unsigned released_capacity;  // threads `released` was allocated for
static Stamps* static_stamps;
static Stamps* dynamic_stamps;
static WordClock* words;
static unsigned long long word_capacity, word_count;
static unsigned* word_rows;
static unsigned word_row_count, word_row_capacity;
static unsigned word_generation;
static unsigned long long word_version;

AOTC_EMU_UNCHECKED static void zero_row(unsigned* row) { __builtin_memset(row, 0, sizeof(unsigned) * order_threads); }

AOTC_EMU_UNCHECKED static void join_row(unsigned* into, const unsigned* from) {
  for (int u = 0; u < order_threads; ++u) into[u] = from[u] > into[u] ? from[u] : into[u];
}

// A new block: no fences in it yet, no released words.
AOTC_EMU_UNCHECKED static void reset_order() {
  __builtin_memset(row_state, 0, order_threads);
  ++word_generation;
  word_count = 0;
  word_row_count = 0;
}

// The first fence of a launch. Until now no thread had fenced, so every
// stamp is 0: the stamps of the shared bytes are zeroed (those of global
// pages start zeroed when first asked for: cached_page_stamps).
AOTC_EMU_UNCHECKED static void begin_ordering(unsigned long long section_size, unsigned long long dynamic_size) {
  const int n = detail::grid.threads;
  if (n > order_capacity) {
    free(fence_clock);
    free(seen);
    free(pending);
    free(row_state);
    free(joined_version);
    fence_clock = static_cast<unsigned*>(calloc(n, sizeof(unsigned)));
    seen = static_cast<unsigned*>(calloc(1ull * n * n, sizeof(unsigned)));
    pending = static_cast<unsigned*>(calloc(1ull * n * n, sizeof(unsigned)));
    row_state = static_cast<unsigned char*>(calloc(n, 1));
    joined_version = static_cast<unsigned long long*>(calloc(n, sizeof(unsigned long long)));
    order_capacity = n;
  }
  if (fence_clock == nullptr || seen == nullptr || pending == nullptr || row_state == nullptr || joined_version == nullptr) {
    order_capacity = 0;  // out of memory: the check stays barrier-only
    return;
  }
  order_threads = n;
  __builtin_memset(fence_clock, 0, n * sizeof(unsigned));
  __builtin_memset(seen, 0, 1ull * n * n * sizeof(unsigned));
  __builtin_memset(pending, 0, 1ull * n * n * sizeof(unsigned));
  free(word_rows);  // spaced for an earlier launch's block too
  word_rows = nullptr;
  word_row_capacity = 0;
  reset_order();
  if (static_stamps == nullptr && section_size > 0) static_stamps = static_cast<Stamps*>(calloc(section_size, sizeof(Stamps)));
  if (dynamic_stamps == nullptr) dynamic_stamps = static_cast<Stamps*>(calloc(kMaxDynamicSharedBytes, sizeof(Stamps)));
  if (static_stamps != nullptr) __builtin_memset(static_stamps, 0, section_size * sizeof(Stamps));
  if (dynamic_stamps != nullptr) __builtin_memset(dynamic_stamps, 0, dynamic_size * sizeof(Stamps));
  ordering = dynamic_stamps != nullptr && (static_stamps != nullptr || section_size == 0);
}

// Whether thread u's access stamped `stamp` is ordered before the accessor by
// a release it acquired (`seen`: the accessor's row, null while nothing is ordered so).
AOTC_EMU_UNCHECKED_HOT static bool released_before(unsigned u, unsigned stamp, const unsigned* seen_row) {
  return seen_row != nullptr && u < static_cast<unsigned>(order_threads) && stamp < seen_row[u];
}

// A fence of the running thread: it acquires what its atomic reads since
// its last fence saw, and releases everything before it to its next atomic write.
AOTC_EMU_UNCHECKED static void fence(unsigned long long section_size, unsigned long long dynamic_size) {
  if (!ordering) begin_ordering(section_size, dynamic_size);
  if (!ordering) return;  // out of memory: the check stays barrier-only
  const unsigned id = linear_thread();
  unsigned* row = seen + 1ull * id * order_threads;
  if (row_state[id] & kPending) join_row(row, pending + 1ull * id * order_threads);
  row[id] = ++fence_clock[id];
  row_state[id] = kFenced;
}

// A __syncwarp of the lanes `group` of warp `warp` has completed: each counts
// it, and each takes the join of their rows (see the top of this file). A
// lane's atomic write releases only what came before its last fence, so a
// lane that has fenced keeps the row it had then for its releases
// (`released`) until it fences again.
AOTC_EMU_UNCHECKED static void syncwarp_done(int warp, unsigned group) {
  if (!ordering || group == 0) return;
  const unsigned first = static_cast<unsigned>(kWarpSize * warp), n = static_cast<unsigned>(order_threads);
  if (first + 31 - __builtin_clz(group) >= n) return;
  for (unsigned rest = group; rest != 0; rest &= rest - 1) {
    const unsigned id = first + __builtin_ctz(rest);
    if ((row_state[id] & (kFenced | kReleasedKept)) != kFenced) continue;
    if (released_capacity < n) {
      free(released);
      released = static_cast<unsigned*>(malloc(1ull * n * n * sizeof(unsigned)));
      released_capacity = released == nullptr ? 0 : n;
    }
    if (released == nullptr) {
      row_state[id] &= static_cast<unsigned char>(~kFenced);  // releases nothing until it fences again: never a hidden race
      continue;
    }
    __builtin_memcpy(released + 1ull * id * n, seen + 1ull * id * n, sizeof(unsigned) * n);
    row_state[id] |= kReleasedKept;
  }
  unsigned* joined = seen + 1ull * (first + __builtin_ctz(group)) * n;
  for (unsigned rest = group; rest != 0; rest &= rest - 1) {
    const unsigned id = first + __builtin_ctz(rest);
    unsigned* row = seen + 1ull * id * n;
    row[id] = ++fence_clock[id];  // its accesses before this __syncwarp are below it
    if (row != joined) join_row(joined, row);
  }
  for (unsigned rest = group & (group - 1); rest != 0; rest &= rest - 1) {
    __builtin_memcpy(seen + 1ull * (first + __builtin_ctz(rest)) * n, joined, sizeof(unsigned) * n);
  }
}

// The row of the atomic word at `address`, made if `make`; null if none.
AOTC_EMU_UNCHECKED static WordClock* word_clock(unsigned long long address, bool make) {
  if (make && 2 * (word_count + 1) > word_capacity) {
    const unsigned long long capacity = word_capacity == 0 ? 64 : 2 * word_capacity;
    WordClock* table = static_cast<WordClock*>(calloc(capacity, sizeof(WordClock)));
    if (table == nullptr) return nullptr;
    for (unsigned long long i = 0; i < word_capacity; ++i) {
      if (words[i].generation != word_generation) continue;
      unsigned long long h = (words[i].address * 0x9E3779B97F4A7C15ull) & (capacity - 1);
      while (table[h].generation == word_generation) h = (h + 1) & (capacity - 1);
      table[h] = words[i];
    }
    free(words);
    words = table;
    word_capacity = capacity;
  }
  if (word_capacity == 0) return nullptr;
  unsigned long long h = (address * 0x9E3779B97F4A7C15ull) & (word_capacity - 1);
  while (words[h].generation == word_generation && words[h].address != address) h = (h + 1) & (word_capacity - 1);
  if (words[h].generation == word_generation) return &words[h];
  if (!make) return nullptr;
  if (word_row_count == word_row_capacity) {
    const unsigned capacity = word_row_capacity == 0 ? 16 : 2 * word_row_capacity;
    unsigned* rows = static_cast<unsigned*>(realloc(word_rows, 1ull * capacity * order_threads * sizeof(unsigned)));
    if (rows == nullptr) return nullptr;
    word_rows = rows;
    word_row_capacity = capacity;
  }
  words[h] = WordClock{address, word_generation, word_row_count++, 0};
  zero_row(word_rows + 1ull * words[h].row * order_threads);
  ++word_count;
  return &words[h];
}

// After an atomic of the running thread on `address` (its hook performed it):
// what it read, it acquires at its next fence; what it wrote, it releases.
// `replaced`: a store, which ends the word's release sequence.
AOTC_EMU_UNCHECKED static void atomic_done(const volatile void* pointer, bool read, bool wrote, bool replaced) {
  if (!ordering || detail::current_fiber == nullptr) return;
  const unsigned id = linear_thread();
  const bool releases = (row_state[id] & kFenced) != 0;
  WordClock* word = word_clock(reinterpret_cast<unsigned long long>(pointer), wrote && releases);
  if (word == nullptr) return;
  unsigned* word_row = word_rows + 1ull * word->row * order_threads;
  if (read && joined_version[id] != word->version && word->version != 0) {
    join_row(pending + 1ull * id * order_threads, word_row);
    joined_version[id] = word->version;
    row_state[id] |= kPending;
  }
  if (!wrote || (!releases && !replaced)) return;  // a read-modify-write that releases nothing leaves the row as it was
  const unsigned* row = (row_state[id] & kReleasedKept ? released : seen) + 1ull * id * order_threads;
  if (replaced) {
    if (releases) {
      __builtin_memcpy(word_row, row, sizeof(unsigned) * order_threads);
    } else {
      zero_row(word_row);
    }
  } else {
    join_row(word_row, row);
  }
  word->version = ++word_version;
}

}  // namespace aotc_emu::check
