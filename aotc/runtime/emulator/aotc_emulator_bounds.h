// aotc_emulator_bounds.h: where a checked launch's global accesses may go, and
// how an access it finds bad is kept from happening. Included by
// aotc_emulator_check.h, inside namespace aotc_emu::check.
//
// A hook runs before its access and cannot change the address the kernel's
// instruction then uses. So a bad access is made harmless instead of skipped:
// - bytes the process owns and no live data holds (an ASan redzone or guard
//   band, freed memory, the launch's own shared memory or arguments) are
//   swapped: saved, filled with poison (0xFF) for a read, and put back at the
//   next hook or fiber switch, so a read gets poison and a write is undone;
// - an unmapped page gets a fresh page of poison (MAP_FIXED_NOREPLACE), which
//   is unmapped again at the same point;
// - anything else (another live allocation, a protected page, the null page, a
//   non-canonical address) cannot stand in for itself: the CUDA thread stops
//   there, as if it had returned (__builtin_longjmp to fiber_main).
// The access after a hook runs before the next hook: every hook is an opaque
// call, which the compiler cannot move a load or store of escaped memory
// across. One exception: an aggregate copy calls its write hook, then its read
// hook, then copies, so a write's diversion outlives the read hook right after.
//
// Where global accesses may go (the memory check, which has AddressSanitizer):
// the allocations the launch reaches, its arguments' (ASan's heap chunk holding
// each pointer, or the mapping holding it), those whose addresses it reads
// from memory (a table of pointers, a struct argument), this library's own
// segments (__device__ and __constant__ data), its thread-local block and the
// running thread's fiber stack. Without the memory check, an access must only
// find its bytes mapped with the protection it needs.
#pragma once

#include <link.h>
#include <sys/auxv.h>

namespace aotc_emu::check {

enum Problem : int { kPoisoned = 0, kUnreachable = 1, kUnmapped = 2, kProtected = 3 };  // Fault::reason of kOutOfBounds
enum Protection : int { kNoAccess = 0, kReadable = 1, kWritable = 2 };

// ---- the process's mappings: /proc/self/maps, read once a launch when first needed

struct Mapping {
  unsigned long long begin, end;
  int protection;
};
static Mapping* mappings;
static unsigned long mapping_count, mapping_capacity;
static bool mappings_read, mappings_reread;  // in this launch

AOTC_EMU_UNCHECKED static void read_mappings() {
  mapping_count = 0;
  FILE* file = fopen("/proc/self/maps", "r");
  if (file == nullptr) return;
  char line[256];
  bool line_start = true;  // a long line (a path) comes in pieces: parse only its start
  while (fgets(line, sizeof(line), file) != nullptr) {
    const bool starts = line_start;
    line_start = strchr(line, '\n') != nullptr;
    unsigned long long begin = 0, end = 0;
    char permissions[5] = {0};
    if (!starts || sscanf(line, "%llx-%llx %4s", &begin, &end, permissions) != 3) continue;
    if (mapping_count == mapping_capacity) {
      const unsigned long capacity = mapping_capacity == 0 ? 1024 : 2 * mapping_capacity;
      Mapping* grown = static_cast<Mapping*>(realloc(mappings, capacity * sizeof(Mapping)));
      if (grown == nullptr) break;
      mappings = grown;
      mapping_capacity = capacity;
    }
    const int protection = (permissions[0] == 'r' ? kReadable : 0) | (permissions[1] == 'w' ? kWritable : 0);
    mappings[mapping_count++] = Mapping{begin, end, protection};
  }
  fclose(file);
}

// The protection of the mapping holding `address`; -1 where none does.
AOTC_EMU_UNCHECKED static int protection_of(unsigned long long address) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!mappings_read) {
      read_mappings();
      mappings_read = true;
    }
    unsigned long low = 0, high = mapping_count;  // the first mapping that ends past address
    while (low < high) {
      const unsigned long middle = (low + high) / 2;
      if (mappings[middle].end <= address) low = middle + 1; else high = middle;
    }
    if (low < mapping_count && mappings[low].begin <= address) return mappings[low].protection;
    if (mappings_reread) break;
    mappings_read = false;  // something may have been mapped since: read them once more
    mappings_reread = true;
  }
  return -1;
}

static unsigned long long page_bytes = 4096;
static unsigned page_shift = 12;  // log2(page_bytes): a shift, where a division costs tens of cycles an access

// Without the memory check: what each page touched in this launch allows
// (a direct-mapped cache of protection_of; `page` holds the page number + 1).
struct PageVerdict {
  unsigned long long page;
  int protection;
};
constexpr unsigned kVerdicts = 512;
static PageVerdict verdicts[kVerdicts];

AOTC_EMU_UNCHECKED static int look_up_page(PageVerdict& slot, unsigned long long page) {
  slot = PageVerdict{page + 1, protection_of(page << page_shift)};
  return slot.protection;
}

AOTC_EMU_UNCHECKED_HOT static int page_protection(unsigned long long page) {
  PageVerdict& slot = verdicts[(page * 0x9E3779B97F4A7C15ull) >> 55];
  return slot.page == page + 1 ? slot.protection : look_up_page(slot, page);
}

// Whether [address, address + size) is mapped for a read (a write).
AOTC_EMU_UNCHECKED_HOT static bool mapped_for(unsigned long long address, unsigned long long size, bool write) {
  const int need = write ? kReadable | kWritable : kReadable;
  const unsigned long long last = (address + size - 1) >> page_shift;
  for (unsigned long long page = address >> page_shift; page <= last; ++page) {
    const int protection = page_protection(page);
    if (protection < 0 || (protection & need) != need) return false;
  }
  return true;
}

// ---- the allocations a launch reaches (the memory check) -----------------------------

struct Region {
  unsigned long long begin, end;
};
static Region* regions;  // sorted, disjoint
static unsigned long region_count, region_capacity;
static Region last_region;
static unsigned long long shadow_begin, shadow_end;  // AddressSanitizer's own shadow memory
static Region library_segments[16];
static int library_segment_count;
static unsigned long long tls_size;

AOTC_EMU_UNCHECKED static void add_region(unsigned long long begin, unsigned long long end) {
  if (begin >= end) return;
  unsigned long at = 0;
  while (at < region_count && regions[at].end < begin) ++at;
  // Merge with every region it touches.
  unsigned long past = at;
  while (past < region_count && regions[past].begin <= end) {
    begin = regions[past].begin < begin ? regions[past].begin : begin;
    end = regions[past].end > end ? regions[past].end : end;
    ++past;
  }
  if (past == at && region_count == region_capacity) {
    const unsigned long capacity = region_capacity == 0 ? 64 : 2 * region_capacity;
    Region* grown = static_cast<Region*>(realloc(regions, capacity * sizeof(Region)));
    if (grown == nullptr) return;
    regions = grown;
    region_capacity = capacity;
  }
  if (past == at) {
    __builtin_memmove(regions + at + 1, regions + at, (region_count - at) * sizeof(Region));
    ++region_count;
  } else if (past > at + 1) {
    __builtin_memmove(regions + at + 1, regions + past, (region_count - past) * sizeof(Region));
    region_count -= past - at - 1;
  }
  regions[at] = Region{begin, end};
}

AOTC_EMU_UNCHECKED_HOT static bool reachable(unsigned long long address, unsigned long long size) {
  if (address >= last_region.begin && address + size <= last_region.end) return true;
  const detail::Fiber* fiber = detail::current_fiber;
  if (fiber != nullptr) {  // the running thread's own stack: its locals whose address escaped
    const unsigned long long stack = reinterpret_cast<unsigned long long>(detail::fiber_stacks[fiber - detail::fibers]);
    if (address >= stack && address + size <= stack + kFiberStackBytes) return true;
  }
  unsigned long low = 0, high = region_count;
  while (low < high) {
    const unsigned long middle = (low + high) / 2;
    if (regions[middle].end <= address) low = middle + 1; else high = middle;
  }
  if (low == region_count || regions[low].begin > address || address + size > regions[low].end) return false;
  last_region = regions[low];
  return true;
}

// The live heap chunk (ASan) holding `address`, if any.
AOTC_EMU_UNCHECKED static bool heap_chunk(unsigned long long address, Region& chunk) {
  if (asan_locate_address == nullptr) return false;
  void* begin = nullptr;
  unsigned long size = 0;
  char unused[8];
  const char* kind = asan_locate_address(reinterpret_cast<void*>(address), unused, sizeof(unused), &begin, &size);
  const unsigned long long start = reinterpret_cast<unsigned long long>(begin);
  if (kind == nullptr || strcmp(kind, "heap") != 0 || address < start || address > start + size) return false;
  chunk = Region{start, start + size};
  return true;
}

// Values a launch may use as pointers that no region holds yet: pages found to hold no chunk.
static unsigned long long plain_pages[64];

// A pointer-sized value the launch read or was given: the heap chunk it
// points into becomes reachable (a table of pointers, a struct argument).
AOTC_EMU_UNCHECKED_HOT static void learn(unsigned long long value) {
  if (value < 65536 || value >= 0x800000000000ull || (value >= shadow_begin && value < shadow_end)) return;
  if (value >= last_region.begin && value < last_region.end) return;
  const unsigned long long page = value >> page_shift;
  unsigned long long& plain = plain_pages[page % 64];
  if (plain == page + 1 || reachable(value, 1) || protection_of(value) < 0) return;
  Region chunk;
  if (heap_chunk(value, chunk)) {
    add_region(chunk.begin, chunk.end);
  } else {
    plain = page + 1;
  }
}

// This library's loaded segments and its thread-local block, for the
// launching thread (a checked launch's one worker).
AOTC_EMU_UNCHECKED static int find_segments(struct dl_phdr_info* info, size_t, void* base) {
  if (reinterpret_cast<unsigned long long>(base) != info->dlpi_addr) return 0;
  library_segment_count = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_TLS) tls_size = header.p_memsz;
    if (header.p_type != PT_LOAD || library_segment_count == 15) continue;  // 15: the thread-locals' slot
    const unsigned long long begin = info->dlpi_addr + header.p_vaddr;
    library_segments[library_segment_count++] = Region{begin, begin + header.p_memsz};
  }
  if (info->dlpi_tls_data != nullptr) {
    const unsigned long long tls = reinterpret_cast<unsigned long long>(info->dlpi_tls_data);
    library_segments[15] = Region{tls, tls + tls_size};  // the slot kept for it
  }
  return 1;
}

// Called by begin_launch: the launch's regions from its arguments' values
// (each parameter's, or each 8-byte word of a struct parameter's).
AOTC_EMU_UNCHECKED static void begin_regions(const unsigned long long* pointers, int pointer_count, const unsigned long long* words,
                                             int word_count) {
  page_bytes = getauxval(AT_PAGESZ) != 0 ? getauxval(AT_PAGESZ) : 4096;
  page_shift = static_cast<unsigned>(__builtin_ctzll(page_bytes));
  mappings_read = mappings_reread = false;
  __builtin_memset(verdicts, 0, sizeof(verdicts));
  __builtin_memset(plain_pages, 0, sizeof(plain_pages));
  region_count = 0;
  last_region = Region{1, 0};
  if (!(AOTC_EMU_CHECKS & kMemory)) return;
  unsigned long scale = 0, offset = 0;
  using ShadowMapping = void (*)(unsigned long*, unsigned long*);
  if (auto mapping = reinterpret_cast<ShadowMapping>(dlsym(RTLD_DEFAULT, "__asan_get_shadow_mapping"))) {
    mapping(&scale, &offset);
    shadow_begin = offset;
    shadow_end = offset + (0x800000000000ull >> scale);
  }
  (void)detail::thread_idx;  // this thread's block of thread-locals exists once it is used
  library_segment_count = 0;
  library_segments[15] = Region{0, 0};
  static void* own_base = nullptr;  // this library's load address, found once
  Dl_info own;
  if (own_base == nullptr && dladdr(reinterpret_cast<void*>(&find_segments), &own) != 0) own_base = own.dli_fbase;
  dl_iterate_phdr(&find_segments, own_base);
  for (int i = 0; i < library_segment_count; ++i) add_region(library_segments[i].begin, library_segments[i].end);
  add_region(library_segments[15].begin, library_segments[15].end);
  for (int i = 0; i < pointer_count; ++i) {
    const unsigned long long p = pointers[i];
    Region chunk;
    if (p == 0) continue;
    if (heap_chunk(p, chunk)) {
      add_region(chunk.begin, chunk.end);
    } else if (protection_of(p) >= 0) {  // not ASan's heap (a memory-mapped file): its whole mapping
      unsigned long low = 0;
      while (low < mapping_count && mappings[low].end <= p) ++low;
      add_region(mappings[low].begin, mappings[low].end);
    }
  }
  for (int i = 0; i < word_count; ++i) learn(words[i]);
}

// ---- keeping a bad access from happening ----------------------------------------------

// Byte copies and fills that stay loops: memcpy and memset are AddressSanitizer's
// interceptors, which would report (and abort on) the redzones being swapped.
AOTC_EMU_UNCHECKED static void copy_bytes(unsigned char* to, const unsigned char* from, unsigned long long size) {
  volatile unsigned char* target = to;
  for (unsigned long long i = 0; i < size; ++i) target[i] = from[i];
}

AOTC_EMU_UNCHECKED static void fill_poison(unsigned char* to, unsigned long long size) {
  volatile unsigned char* target = to;
  for (unsigned long long i = 0; i < size; ++i) target[i] = 0xFF;
}

struct Diversion {
  unsigned char* address;
  unsigned long long size;
  unsigned char* saved;  // the bytes to put back; null for a page of our own (unmapped after)
  bool write;
};
constexpr int kMaxDiversions = 8;
static Diversion diversions[kMaxDiversions];
static int diversion_count;
static bool last_hook_wrote;  // the previous hook was a plain write (an aggregate copy's first hook)

AOTC_EMU_UNCHECKED static void put_back(const Diversion& d) {
  if (d.saved != nullptr) {
    copy_bytes(d.address, d.saved, d.size);
    free(d.saved);
  } else {
    munmap(d.address, d.size);
  }
}

// Judges the pending writes (settle_writes), and puts back what the pending
// diversions changed, newest first.
AOTC_EMU_UNCHECKED static void settle() {
  if (pending_write_count > 0) settle_writes();
  while (diversion_count > 0) {
    Diversion& d = diversions[--diversion_count];
    put_back(d);
  }
}

// Called by each plain hook before its own checks.
AOTC_EMU_UNCHECKED_HOT static void settle_before(bool write) {
  if ((diversion_count > 0 || pending_write_count > 0) && (write || !last_hook_wrote)) settle();
  last_hook_wrote = write;
}

AOTC_EMU_UNCHECKED static bool swap(unsigned char* address, unsigned long long size, bool write) {
  if (diversion_count == kMaxDiversions) return false;
  unsigned char* saved = static_cast<unsigned char*>(malloc(size));
  if (saved == nullptr) return false;
  copy_bytes(saved, address, size);
  if (!write) fill_poison(address, size);
  diversions[diversion_count++] = Diversion{address, size, saved, write};
  return true;
}

AOTC_EMU_UNCHECKED static bool map_poison(unsigned long long page) {
#if defined(MAP_FIXED_NOREPLACE)
  if (diversion_count == kMaxDiversions) return false;
  void* at = reinterpret_cast<void*>(page);
  void* got = mmap(at, page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == MAP_FAILED) return false;
  if (got != at) {  // a kernel that ignores the flag placed it elsewhere
    munmap(got, page_bytes);
    return false;
  }
  fill_poison(static_cast<unsigned char*>(got), page_bytes);
  diversions[diversion_count++] = Diversion{static_cast<unsigned char*>(got), page_bytes, nullptr, true};
  return true;
#else
  (void)page;
  return false;
#endif
}

// Makes the access after this hook harmless: a read finds poison, a write is
// undone. `swappable`: its bytes hold no live data of anyone else. False
// (with nothing changed) where no stand-in can be made.
AOTC_EMU_UNCHECKED static bool divert(unsigned long long address, unsigned long long size, bool write, bool swappable) {
  const int before = diversion_count;
  bool ok = true;
  for (unsigned long long at = address; ok && at < address + size;) {
    const unsigned long long page_end = (at / page_bytes + 1) * page_bytes;
    const unsigned long long piece = (page_end < address + size ? page_end : address + size) - at;
    const bool in_shadow = at < shadow_end && at + piece > shadow_begin;
    const int protection = protection_of(at);
    if (protection < 0) {
      ok = map_poison(at - at % page_bytes);
    } else {
      ok = swappable && !in_shadow && protection == (kReadable | kWritable) &&
           swap(reinterpret_cast<unsigned char*>(at), piece, write);
    }
    at += piece;
  }
  if (!ok) {
    while (diversion_count > before) put_back(diversions[--diversion_count]);  // the pieces already diverted
  }
  return ok;
}

// Ends the running CUDA thread at a bad access nothing can stand in for.
[[noreturn]] AOTC_EMU_UNCHECKED static void stop_thread() {
  settle();
  __builtin_longjmp(detail::current_fiber->stop, 1);
}

}  // namespace aotc_emu::check
