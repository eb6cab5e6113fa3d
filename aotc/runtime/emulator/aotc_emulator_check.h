// aotc_emulator_check.h: the emulator's compute-sanitizer (AOTC_EMULATOR_CHECK).
// Included by aotc_emulator_runtime.h when AOTC_EMU_CHECKS is nonzero.
//
// The kernel is built with gcc's -fsanitize=thread instrumentation, but no
// ThreadSanitizer runtime: the __tsan_* hooks below are the runtime. Every
// load and store of the kernel calls one with its address and size.
// - Shared memory (the static __shared__ objects, which the shim puts in the
//   ELF section aotc_shared, and the extern __shared__ buffer) keeps a shadow
//   per byte: the epoch, thread and warp-sync interval of the last write, of
//   the last reads and of the last atomic updates. Global memory keeps the
//   same shadow, per launch, for the pages the kernel touches.
// - The block's threads run as fibers on one worker, and each barrier phase is
//   an epoch. A write and another thread's access to a byte in one epoch are
//   a race by CUDA's rules, whichever order the fibers ran in (race); so is a
//   plain access and another thread's atomic, though atomics never race with
//   each other. A volatile access is morally strong, as an atomic is
//   (kVolatile), except against lanes of its own warp (lockstep code). Two
//   lanes of one warp are ordered within an epoch only by a
//   __syncwarp both took part in (lanes are not in lockstep): each lane counts
//   its __syncwarps (its interval, aotc_emulator_warp.h). Within an epoch, a
//   release (a fence, then an atomic write) that another thread acquires (an
//   atomic read of the word, then a fence) orders accesses of any two threads
//   too (aotc_emulator_order.h: fence clocks, stamps). A plain read of a
//   word another thread updates atomically is forgiven if the reader itself
//   then updates it atomically before its next barrier (the guess of a CAS
//   loop), and is a note, not a fault, where every update was a
//   compare-and-swap, min or max (an early exit of a float atomicMax). A read
//   of a byte no thread of this block wrote since the block
//   began is an uninitialized read (init), and so is a read of bytes an
//   asynchronous copy lands in only at its wait. An access outside every
//   shared object, or past the launch's dynamic shared bytes, is out of
//   bounds (memory).
// - An access the compiler believes aligned (__tsan_readN, an atomic) must be
//   N-aligned, as on a GPU, whatever the checks: a misaligned one stops its
//   thread (misaligned_access). The kernel is compiled without scalar
//   replacement of aggregates (aotc_emulator.h), so a float4's load is one
//   16-byte access, not four 4-byte ones.
// - Global memory (the memory check): an access must fall inside an
//   allocation the launch reaches, on bytes not poisoned in
//   AddressSanitizer's shadow (guard bands, freed memory):
//   aotc_emulator_bounds.h. That needs libasan loaded first in the process
//   (LD_PRELOAD); a launch refuses the memory check without it.
// - A bad access is never performed, whatever the checks: a read gets
//   poison, a write is dropped, or the thread stops (aotc_emulator_bounds.h).
// - At a barrier, the waiting threads must all wait at the same __syncthreads
//   (sync): a barrier that part of the block skips shows as two call sites.
//   A warp collective must name its own lane, every lane it names must reach
//   it, and a shuffle must read a lane that takes part (sync).
// The first violation is recorded (aotc_emu_fault), with the count of the
// others, and the launch returns kKernelFault once the grid finishes; Python
// turns it into KernelFaultError. The first note (aotc_emu_note) is logged.
#pragma once

namespace aotc_emu::check {

enum : unsigned { kRace = 1, kMemory = 2, kInit = 4, kSync = 8 };
enum Kind : int {
  kNone = 0,
  kReadAfterWrite = 1,
  kWriteAfterRead = 2,
  kWriteAfterWrite = 3,
  kUninitializedRead = 4,
  kOutOfBounds = 5,
  kMisaligned = 6,
  kDivergentBarrier = 7,
  kDivergentWarp = 8,      // a collective's mask names a lane that waits elsewhere
  kLaneNotInMask = 9,      // a lane calls a collective whose mask does not name it
  kInactiveSource = 10,    // a shuffle reads a lane its mask names, which returned or waits elsewhere
  kCopyNotLanded = 11,     // a read of bytes an asynchronous copy lands in at its wait
};
// Why a shuffle's source lane does not take part (Fault::reason).
enum SourceReason : int { kSourceWaitsElsewhere = 0, kSourceExited = 1 };
enum Space : int { kGlobal = 0, kStaticShared = 1, kDynamicShared = 2 };

// Read by aotc/runtime/emulator/faults.py (ctypes): keep the two in step.
struct Fault {
  int check;  // one of kRace, kMemory, kInit, kSync
  int kind;
  int space;
  int is_write;
  unsigned block[3];
  unsigned thread[3];
  unsigned other_thread[3];  // the other side of a race or a divergent barrier
  int line, other_line;      // __syncthreads call sites (sync)
  unsigned long long size;   // bytes accessed
  long long offset;          // from the start of `array`
  long long extent;          // bytes of `array` (0: unknown)
  unsigned long long pc;     // the access's return address in the library's file (0: none)
  char array[128];           // shared object, argument name, or empty
  char file[128];
  // Warp-level faults, and races between lanes of one warp.
  unsigned warp, lane, other_lane;
  unsigned mask, other_mask;  // the collectives' masks
  int same_warp;              // a race with a lane of the same warp: only __syncwarp orders them
  int atomic, other_atomic;   // a race's accesses: 1 for an atomic update
  int reason;                 // kInactiveSource: a SourceReason; kDivergentWarp: 1 if the other lane waits at __syncthreads;
                              // kOutOfBounds: a Problem; kMisaligned: the address's bytes past a multiple of `size`
  char operation[32], other_operation[32];
  char other_file[128];
  unsigned long long others;  // the launch's other faults (notes: other such reads)
  int stopped;                // its thread stopped there: nothing could stand in for the memory
};

constexpr unsigned short kNobody = 0xFFFF;
constexpr unsigned short kWarpOrdered = 0x8000;  // reader, updater: lanes before it, ordered by its later interval
constexpr unsigned short kSeveral = 0x4000;      // reader, updater: other threads share its interval
constexpr unsigned short kAccumulated = 0x2000;  // updater: an update of this epoch was no compare-and-swap
constexpr unsigned short kUpdateWrites = 0x1000;  // updater: an update of this epoch wrote (else only volatile reads)
constexpr unsigned short kAtomicWrites = 0x0800;  // updater: an atomic of this epoch wrote (else only volatile stores did)
constexpr unsigned short kThreadBits = 0x07FF;   // reader, updater: the thread
static_assert(kMaxThreadsPerBlock - 1 <= kThreadBits, "a thread's number must fit a group's thread bits");
constexpr unsigned short kPendingCopy = 0xFFFD;  // writer: an asynchronous copy lands here at its wait
constexpr unsigned char kManyWarps = 0xFF;
struct Shadow {
  unsigned written;  // epoch of the last plain write; 0: never
  unsigned read;     // epoch of the last plain reads
  unsigned updated;  // epoch of the last atomic updates and volatile accesses
  unsigned write_interval, read_interval, update_interval;  // of the writer, the latest reader, the latest updater
  unsigned short writer, reader, updater;                  // reader, updater: maybe | kSeveral
  unsigned char read_warp, update_warp;                    // the warp of every reader / updater, or kManyWarps
};
// The thread making an access: its linear index, warp and warp-sync interval;
// in a launch that fences, its fence clock and its row of what releases it
// acquired ordered before it (aotc_emulator_order.h; else 0 and null).
struct Accessor {
  unsigned short id;
  unsigned char warp;
  unsigned interval;
  unsigned clock;
  const unsigned* seen;
};
// What an atomic does to its word, as the race check tells reads apart
// (docs/design.md, "The race check's model of atomics").
enum AtomicKind : int {
  kPlain = 0,
  kAccumulate = 1,  // add, sub, inc, dec, and, or, xor, exchange: a read between sees a partial result
  kCompare = 2,     // compare-and-swap, min, max: a read between is a guess the update checks
  // A volatile load or store: morally strong, as PTX has it (ld/st.volatile are
  // relaxed at system scope), so it races with no atomic or volatile access of
  // another warp, and a fence orders through it as through an atomic. With a
  // lane of its own warp that no __syncwarp orders it after, it is still a
  // race: the warp-synchronous code of old, which trusted lockstep.
  kVolatile = 3,
};
// A plain read of a word another thread updated atomically in this epoch:
// reported at the reader's next barrier unless it updates the word itself
// (a note, not a fault, where every update was a compare-and-swap).
struct Suspect {
  bool active;
  int space;
  bool same_warp;
  bool compare_only;
  unsigned short other;
  unsigned long long address, offset, size;
  void* pc;
};
struct SharedObject {
  unsigned long long offset, size;
  char name[128];
};

#define AOTC_EMU_UNCHECKED __attribute__((no_sanitize_thread, noinline))
// What runs for every byte of every access: inlined where it is used.
#define AOTC_EMU_UNCHECKED_HOT __attribute__((no_sanitize_thread, always_inline)) inline

static Fault fault;
static bool faulted;
static Fault note;  // the first read of a word that others compare-and-swap (a note, never a fault)
static bool noted;
static unsigned long long fault_count, note_count;
static unsigned long long event_serial, counted_serial;  // one access (or barrier, collective) counts once
static unsigned long long fault_serial;                   // the event `fault` records
static int atomic_kind = kCompare;                          // of the next atomic hooks (begin_accumulate)
// The launching thread's copy of its last launch's report: another thread's
// launch may start before Python reads it.
static thread_local Fault launch_fault, launch_note;
static thread_local bool launch_faulted, launch_noted;
static unsigned epoch;        // the current barrier phase, counted over every block
static unsigned block_epoch;  // the first epoch of the running block
static Shadow* static_shadow;
static Shadow* dynamic_shadow;
static unsigned short* object_of_byte;  // index into objects per byte of aotc_shared; kNobody: padding
static SharedObject* objects;
static unsigned long long dynamic_bytes;
static void* access_pc;  // the instrumented access being checked (a hook's return address)
static void* (*asan_region_is_poisoned)(void*, unsigned long);
static const char* (*asan_locate_address)(void*, char*, unsigned long, void**, unsigned long*);
static const char* parameter_names;
static unsigned long long pointer_arguments[256];
static int pointer_argument_count;
static Suspect suspects[kMaxThreadsPerBlock];
// Global memory's shadow: one Shadow per byte of each 4 KiB page touched in
// this launch, found through an open-addressing table of page numbers.
constexpr unsigned long long kPageBytes = 4096;
struct Stamps;
struct GlobalPage {
  unsigned long long page;
  Shadow* shadow;
  Stamps* stamps;  // launches that fence (aotc_emulator_order.h): made when first asked for
};
static GlobalPage* global_pages;
static unsigned long long global_capacity, global_count;
static unsigned long long cached_page = ~0ull;
static Shadow* cached_shadow;
static GlobalPage* cached_slot;
// A plain write of bytes another thread wrote in this epoch, judged once it
// has happened: two threads storing the same value (a flag all set to 1) are
// right on every GPU, whichever lands last. A hook runs before its store, so
// the bytes there are the earlier writer's value; the store has happened by
// the thread's next hook or fiber switch (settle), which reports the write
// after write only if a racing byte changed.
constexpr unsigned long long kPendingWriteBytes = 16;
struct PendingWrite {
  unsigned long long serial;  // the access's event
  unsigned long long address;  // of its first byte
  unsigned long long offset, size;  // the whole access, as access_fault takes it
  unsigned long long byte;     // the first racing byte, as check_byte saw it
  unsigned racing;             // bit i: byte i of the access races
  int space, other;
  bool same_warp;
  uint3 thread;
  void* pc;
  unsigned char before[kPendingWriteBytes];
};
constexpr int kMaxPendingWrites = 4;
static PendingWrite pending_writes[kMaxPendingWrites];
static int pending_write_count;
static void settle_writes();
}  // namespace aotc_emu::check

#include "aotc_emulator_bounds.h"

namespace aotc_emu::check {

AOTC_EMU_UNCHECKED static void copy_text(char* to, const char* from, unsigned long capacity) {
  unsigned long i = 0;
  for (; from != nullptr && from[i] != 0 && i + 1 < capacity; ++i) to[i] = from[i];
  to[i] = 0;
}

AOTC_EMU_UNCHECKED_HOT static unsigned linear_thread() {
  const uint3 t = detail::thread_idx;
  return t.x + t.y * detail::block_dim.x + t.z * detail::block_dim.x * detail::block_dim.y;
}
}  // namespace aotc_emu::check

#include "aotc_emulator_order.h"

namespace aotc_emu::check {

AOTC_EMU_UNCHECKED static void put_thread(unsigned* to, unsigned linear) {
  const unsigned bx = detail::block_dim.x, by = detail::block_dim.y;
  to[0] = linear % bx;
  to[1] = (linear / bx) % by;
  to[2] = linear / (bx * by);
}

// A fault of another check may follow from it: a divergent barrier leaves
// races, a race reads what was not yet written.
AOTC_EMU_UNCHECKED static int rank(int check) {
  return check == kMemory ? 4 : check == kSync ? 3 : check == kRace ? 2 : 1;
}

AOTC_EMU_UNCHECKED static Fault* begin_record(Fault& f, int check, int kind, int space) {
  __builtin_memset(&f, 0, sizeof(f));
  f.check = check;
  f.kind = kind;
  f.space = space;
  const uint3 b = detail::block_idx;
  f.block[0] = b.x;
  f.block[1] = b.y;
  f.block[2] = b.z;
  put_thread(f.thread, linear_thread());
  Dl_info info;
  if (check != kSync && access_pc != nullptr && dladdr(access_pc, &info) != 0) {
    f.pc = reinterpret_cast<unsigned long long>(access_pc) - reinterpret_cast<unsigned long long>(info.dli_fbase);
  }
  return &f;
}

// Counts a violation once per access (or barrier, or collective), and records
// the launch's first of the highest rank; the launch runs on to its end.
AOTC_EMU_UNCHECKED static Fault* report(int check, int kind, int space) {
  if (counted_serial != event_serial) {
    counted_serial = event_serial;
    ++fault_count;
  }
  if (faulted && rank(check) <= rank(fault.check)) return nullptr;
  faulted = true;
  fault_serial = event_serial;
  return begin_record(fault, check, kind, space);
}

// The first read of a word other threads compare-and-swap in its epoch:
// right as an early exit or a loop's guess, wrong as a final result.
static unsigned long long noted_serial;
AOTC_EMU_UNCHECKED static Fault* report_note(int kind, int space) {
  if (noted_serial != event_serial) {
    noted_serial = event_serial;
    ++note_count;
  }
  if (noted) return nullptr;
  noted = true;
  return begin_record(note, kRace, kind, space);
}

// This library's own file, read whole (its symbol table is not mapped, and
// local statics are not in .dynsym); null if it cannot be read. The caller frees it.
AOTC_EMU_UNCHECKED static unsigned char* own_image(Dl_info& info) {
  if (dladdr(reinterpret_cast<void*>(&own_image), &info) == 0 || info.dli_fname == nullptr) return nullptr;
  FILE* file = fopen(info.dli_fname, "rb");
  if (file == nullptr) return nullptr;
  fseek(file, 0, SEEK_END);
  const long length = ftell(file);
  fseek(file, 0, SEEK_SET);
  unsigned char* image = static_cast<unsigned char*>(malloc(length > 0 ? length : 1));
  const bool whole = length > static_cast<long>(sizeof(Elf64_Ehdr)) &&
                     fread(image, 1, length, file) == static_cast<unsigned long>(length);
  fclose(file);
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(image);
  if (!whole || header->e_shoff + 1ull * header->e_shnum * sizeof(Elf64_Shdr) > static_cast<unsigned long long>(length)) {
    free(image);
    return nullptr;
  }
  return image;
}

// Names a global access that falls in this library's own data: a
// function-local static there is a __shared__ object of a function template
// (those stay out of aotc_shared), named as shared memory. Returns false if
// `address` is not the library's.
AOTC_EMU_UNCHECKED static bool name_own_static(Fault* f, unsigned long long address) {
  Dl_info info, own;
  if (dladdr(reinterpret_cast<void*>(address), &info) == 0 || dladdr(reinterpret_cast<void*>(&own_image), &own) == 0 ||
      info.dli_fbase != own.dli_fbase) {
    return false;
  }
  f->offset = static_cast<long long>(address);
  f->extent = 0;
  unsigned char* image = own_image(info);
  if (image == nullptr) return true;
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(image);
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image + header->e_shoff);
  const unsigned long long at = address - reinterpret_cast<unsigned long long>(info.dli_fbase);
  for (unsigned s = 0; s < header->e_shnum; ++s) {
    if (sections[s].sh_type != SHT_SYMTAB) continue;
    const auto* symbols = reinterpret_cast<const Elf64_Sym*>(image + sections[s].sh_offset);
    const char* names = reinterpret_cast<const char*>(image + sections[sections[s].sh_link].sh_offset);
    for (unsigned long long i = 0; i < sections[s].sh_size / sizeof(Elf64_Sym); ++i) {
      const Elf64_Sym& symbol = symbols[i];
      if (ELF64_ST_TYPE(symbol.st_info) != STT_OBJECT || at < symbol.st_value || at >= symbol.st_value + symbol.st_size) continue;
      const char* name = names + symbol.st_name;
      int status = 0;
      char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
      if (strncmp(name, "_ZZ", 3) == 0 && status == 0 && readable != nullptr && strncmp(readable, "aotc_emu::", 10) != 0) {
        f->space = kStaticShared;
        copy_text(f->array, readable, sizeof(f->array));
        f->offset = static_cast<long long>(at - symbol.st_value);
        f->extent = static_cast<long long>(symbol.st_size);
      }
      free(readable);
      break;
    }
  }
  free(image);
  return true;
}

// The static __shared__ objects: the symbols of section aotc_shared, read
// from this library's own file once.
AOTC_EMU_UNCHECKED static void find_shared_objects(unsigned long long section_size) {
  object_of_byte = static_cast<unsigned short*>(malloc(section_size * sizeof(unsigned short)));
  for (unsigned long long i = 0; i < section_size; ++i) object_of_byte[i] = 0;  // one unnamed object
  objects = static_cast<SharedObject*>(calloc(1, sizeof(SharedObject)));
  objects[0] = SharedObject{0, section_size, "__shared__"};
  Dl_info info;
  unsigned char* image = own_image(info);
  if (image == nullptr) return;
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(image);
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image + header->e_shoff);
  const char* section_names = reinterpret_cast<const char*>(image + sections[header->e_shstrndx].sh_offset);
  unsigned shared_index = 0;
  for (unsigned s = 0; s < header->e_shnum; ++s) {
    if (strcmp(section_names + sections[s].sh_name, "aotc_shared") == 0) shared_index = s;
  }
  const unsigned long long section_address = sections[shared_index].sh_addr;
  int count = 1;
  for (unsigned s = 0; s < header->e_shnum && shared_index != 0; ++s) {
    if (sections[s].sh_type != SHT_SYMTAB) continue;
    const auto* symbols = reinterpret_cast<const Elf64_Sym*>(image + sections[s].sh_offset);
    const char* names = reinterpret_cast<const char*>(image + sections[sections[s].sh_link].sh_offset);
    const unsigned long long n = sections[s].sh_size / sizeof(Elf64_Sym);
    for (unsigned long long i = 0; i < n; ++i) {
      const Elf64_Sym& symbol = symbols[i];
      if (symbol.st_shndx != shared_index || ELF64_ST_TYPE(symbol.st_info) != STT_OBJECT || symbol.st_size == 0) continue;
      objects = static_cast<SharedObject*>(realloc(objects, (count + 1) * sizeof(SharedObject)));
      SharedObject& object = objects[count];
      object.offset = symbol.st_value - section_address;
      object.size = symbol.st_size;
      int status = 0;
      char* readable = abi::__cxa_demangle(names + symbol.st_name, nullptr, nullptr, &status);
      copy_text(object.name, status == 0 && readable != nullptr ? readable : names + symbol.st_name, sizeof(object.name));
      free(readable);
      ++count;
    }
  }
  free(image);
  if (count == 1) return;
  for (unsigned long long i = 0; i < section_size; ++i) object_of_byte[i] = kNobody;
  for (int o = 1; o < count; ++o) {
    for (unsigned long long i = objects[o].offset; i < objects[o].offset + objects[o].size && i < section_size; ++i) {
      object_of_byte[i] = static_cast<unsigned short>(o);
    }
  }
}

// Called before each launch, on the launching thread. `words`: the 8-byte
// words of the arguments' values, any of which may be a pointer.
AOTC_EMU_UNCHECKED static bool begin_launch(unsigned long long shared_bytes, const char* names,
                                            const unsigned long long* pointers, int count,
                                            const unsigned long long* words, int word_count) {
  faulted = noted = false;
  fault_count = note_count = 0;
  counted_serial = noted_serial = ~0ull;
  dynamic_bytes = shared_bytes;
  parameter_names = names;
  pointer_argument_count = count < 256 ? count : 256;
  for (int i = 0; i < pointer_argument_count; ++i) pointer_arguments[i] = pointers[i];
  const unsigned long long section_size = detail::__stop_aotc_shared - detail::__start_aotc_shared;
  if (static_shadow == nullptr && section_size > 0) {
    static_shadow = static_cast<Shadow*>(calloc(section_size, sizeof(Shadow)));
    find_shared_objects(section_size);
  }
  if (dynamic_shadow == nullptr) dynamic_shadow = static_cast<Shadow*>(calloc(kMaxDynamicSharedBytes, sizeof(Shadow)));
  if (AOTC_EMU_CHECKS & kMemory) {
    asan_region_is_poisoned = reinterpret_cast<void* (*)(void*, unsigned long)>(dlsym(RTLD_DEFAULT, "__asan_region_is_poisoned"));
    asan_locate_address = reinterpret_cast<const char* (*)(void*, char*, unsigned long, void**, unsigned long*)>(
        dlsym(RTLD_DEFAULT, "__asan_locate_address"));
    if (asan_region_is_poisoned == nullptr) return false;
  }
  begin_regions(pointer_arguments, pointer_argument_count, words, word_count);
  return static_shadow != nullptr || section_size == 0;
}

AOTC_EMU_UNCHECKED static void enter_block() {
  block_epoch = ++epoch;
  if (ordering) reset_order();
}

AOTC_EMU_UNCHECKED static void free_global_shadow() {
  for (unsigned long long i = 0; i < global_capacity; ++i) {
    free(global_pages[i].shadow);
    free(global_pages[i].stamps);
  }
  free(global_pages);
  global_pages = nullptr;
  global_capacity = global_count = 0;
  cached_page = ~0ull;
}

// The shadow of global byte `address`; null if there is no memory for it.
AOTC_EMU_UNCHECKED static Shadow* global_shadow(unsigned long long address) {
  const unsigned long long page = address / kPageBytes;
  if (page == cached_page) return cached_shadow + address % kPageBytes;
  if (2 * (global_count + 1) > global_capacity) {
    const unsigned long long capacity = global_capacity == 0 ? 64 : 2 * global_capacity;
    GlobalPage* table = static_cast<GlobalPage*>(calloc(capacity, sizeof(GlobalPage)));
    if (table == nullptr) return nullptr;
    for (unsigned long long i = 0; i < global_capacity; ++i) {
      if (global_pages[i].shadow == nullptr) continue;
      unsigned long long h = (global_pages[i].page * 0x9E3779B97F4A7C15ull) & (capacity - 1);
      while (table[h].shadow != nullptr) h = (h + 1) & (capacity - 1);
      table[h] = global_pages[i];
    }
    free(global_pages);
    global_pages = table;
    global_capacity = capacity;
  }
  unsigned long long h = (page * 0x9E3779B97F4A7C15ull) & (global_capacity - 1);
  while (global_pages[h].shadow != nullptr && global_pages[h].page != page) h = (h + 1) & (global_capacity - 1);
  if (global_pages[h].shadow == nullptr) {
    Shadow* shadow = static_cast<Shadow*>(calloc(kPageBytes, sizeof(Shadow)));
    if (shadow == nullptr) return nullptr;
    global_pages[h] = GlobalPage{page, shadow, nullptr};
    ++global_count;
  }
  cached_page = page;
  cached_shadow = global_pages[h].shadow;
  cached_slot = &global_pages[h];
  return cached_shadow + address % kPageBytes;
}

// The stamps of the page global_shadow found last, in a launch that fences;
// null if there is no memory for them.
AOTC_EMU_UNCHECKED static Stamps* cached_page_stamps() {
  if (cached_slot->stamps == nullptr) cached_slot->stamps = static_cast<Stamps*>(calloc(kPageBytes, sizeof(Stamps)));
  return cached_slot->stamps;
}

// Called on the launching thread, under the launch lock, once the grid is done.
AOTC_EMU_UNCHECKED static bool end_launch() {
  settle();
  free_global_shadow();  // epochs never repeat, so the next launch starts afresh
  launch_faulted = faulted;
  if (faulted) {
    launch_fault = fault;
    launch_fault.others = fault_count - 1;
  }
  launch_noted = noted;
  if (noted) {
    launch_note = note;
    launch_note.others = note_count - 1;
  }
  return faulted;
}

// kOrdered: the launch has fenced (`ordering`), so the accessor's fence clock and row count.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static Accessor accessor() {
  const unsigned id = linear_thread();
  const detail::Fiber* fiber = detail::current_fiber;
  return Accessor{static_cast<unsigned short>(id), static_cast<unsigned char>(id / kWarpSize),
                  fiber != nullptr ? fiber->interval : 0u, kOrdered ? fence_clock[id] : 0u,
                  kOrdered ? seen + 1ull * id * order_threads : nullptr};
}

// A group of accesses in this epoch (the readers, or the updaters) against
// the accessor: the thread that races with it, kNobody for an unnamed one of
// several, or -1 when every one is ordered before it (the accessor itself, or
// a lane of its warp that took part in a __syncwarp since). The group keeps
// one thread of its latest interval, and whether there were others (`who`).
// Sets same_warp when the group is of the accessor's warp.
AOTC_EMU_UNCHECKED_HOT static int barrier_group_race(unsigned short who, unsigned char warp, unsigned interval,
                                                 const Accessor& me, bool& same_warp) {
  const unsigned short id = who & kThreadBits;
  same_warp = warp == me.warp;
  if (warp == kManyWarps) return id / kWarpSize != me.warp ? id : kNobody;
  if (warp != me.warp) return id;
  if (interval < me.interval) return -1;
  if (id != me.id) return id;
  return (who & kSeveral) != 0 ? kNobody : -1;
}

// Whether a group of one thread, whose latest access is stamped `stamp`, is
// ordered before the accessor by a release the accessor acquired. Lanes the
// interval rule left out of the group (kWarpOrdered) may not be: the rule
// assumes a __syncwarp they took part in, which a release does not pass on.
AOTC_EMU_UNCHECKED_HOT static bool group_released(unsigned short who, unsigned char warp, unsigned stamp, const Accessor& me) {
  return (who & (kSeveral | kWarpOrdered)) == 0 && warp != kManyWarps && released_before(who & kThreadBits, stamp, me.seen);
}

// As barrier_group_race, and in a launch that fences, a release orders the group too.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static int group_race(unsigned short who, unsigned char warp, unsigned interval, unsigned stamp,
                                         const Accessor& me, bool& same_warp) {
  const int other = barrier_group_race(who, warp, interval, me, same_warp);
  return kOrdered && other >= 0 && group_released(who, warp, stamp, me) ? -1 : other;
}

// Adds the accessor to a group. A group that only a release orders before
// the accessor is replaced by it: whatever is ordered after the accessor is
// ordered after the group too, so a lock's holders stay a group of one.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static void group_add(unsigned& when, unsigned short& who, unsigned char& warp, unsigned& interval,
                                         unsigned& stamp, const Accessor& me) {
  bool same_warp;
  if (when != epoch ||
      (kOrdered && barrier_group_race(who, warp, interval, me, same_warp) >= 0 && group_released(who, warp, stamp, me))) {
    when = epoch;
    who = me.id;
    warp = me.warp;
    interval = me.interval;
    stamp = me.clock;
    return;
  }
  if (warp != me.warp) warp = kManyWarps;
  if (me.interval > interval) {
    // Kept before a launch first fences too: a release later in the epoch must not clear the group.
    const bool left_out = (who & kThreadBits) != me.id || (who & (kSeveral | kWarpOrdered)) != 0;
    // What the group did: in a group of one warp, a later interval is ordered after the earlier ones
    // (a lane's volatile read after the __syncwarp that follows another's store), so only the
    // newcomer's access counts; lanes of other warps are not, and keep theirs.
    const unsigned short done = warp == kManyWarps ? who & (kAccumulated | kUpdateWrites | kAtomicWrites) : 0;
    who = static_cast<unsigned short>(me.id | done | (left_out ? kWarpOrdered : 0));
    interval = me.interval;
  } else if (me.interval == interval && (who & kThreadBits) != me.id) {
    who |= kSeveral;
  }
  if ((who & kThreadBits) == me.id) stamp = me.clock;  // its latest access: a release that covers it covers the earlier
}

// The last plain write in this epoch against the accessor, as group_race.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static int write_race(const Shadow& s, const Stamps* stamps, const Accessor& me, bool& same_warp) {
  if (s.written != epoch || s.writer >= kPendingCopy || s.writer == me.id) return -1;
  same_warp = s.writer / kWarpSize == me.warp;
  if (same_warp && s.write_interval < me.interval) return -1;
  if (kOrdered && released_before(s.writer, stamps->write, me.seen)) return -1;
  return s.writer;
}

AOTC_EMU_UNCHECKED static void fill_lane(Fault* f, unsigned id, int other) {
  f->warp = id / kWarpSize;
  f->lane = id % kWarpSize;
  if (other >= 0 && other < kMaxThreadsPerBlock) f->other_lane = static_cast<unsigned>(other) % kWarpSize;
}

// The argument whose pointer is the nearest at or below `address`, and
// within the allocation that holds `address` where AddressSanitizer knows it;
// for the library's own data, its object (name_own_static).
AOTC_EMU_UNCHECKED static void name_global(Fault* f, unsigned long long address) {
  if (name_own_static(f, address)) return;
  int best = -1;
  for (int i = 0; i < pointer_argument_count; ++i) {
    const unsigned long long p = pointer_arguments[i];
    if (p != 0 && p <= address && (best < 0 || p > pointer_arguments[best])) best = i;
  }
  if (asan_locate_address != nullptr) {
    void* region = nullptr;
    unsigned long region_size = 0;
    char unused[8];
    asan_locate_address(reinterpret_cast<void*>(address), unused, sizeof(unused), &region, &region_size);
    const unsigned long long begin = reinterpret_cast<unsigned long long>(region);
    if (region != nullptr) f->extent = static_cast<long long>(begin + region_size);
    // An argument below the allocation holding `address` points into another one.
    if (region != nullptr && best >= 0 && pointer_arguments[best] < begin) best = -1;
  }
  if (best < 0) {
    f->offset = static_cast<long long>(address);
    f->extent = 0;
    return;
  }
  // The argument's name: the best-th entry of "A,B,M,...".
  const char* cursor = parameter_names;
  for (int i = 0; cursor != nullptr && *cursor != 0; ++i) {
    const char* end = cursor;
    while (*end != 0 && *end != ',') ++end;
    if (i == best) {
      unsigned long n = static_cast<unsigned long>(end - cursor);
      if (n + 1 > sizeof(f->array)) n = sizeof(f->array) - 1;
      __builtin_memcpy(f->array, cursor, n);
      f->array[n] = 0;
      break;
    }
    cursor = *end == ',' ? end + 1 : end;
  }
  f->offset = static_cast<long long>(address - pointer_arguments[best]);
  // extent: bytes from the argument's pointer to the end of its allocation.
  if (f->extent != 0) f->extent -= static_cast<long long>(pointer_arguments[best]);
}

// Fills in `f` (if any) for an access at `offset` of its space (global: the address).
AOTC_EMU_UNCHECKED static Fault* fill_access(Fault* f, int check, int space, unsigned long long offset,
                                             unsigned long long size, bool write, int other, bool atomic,
                                             bool other_atomic, bool same_warp) {
  if (f == nullptr) return nullptr;
  f->is_write = write;
  f->size = size;
  f->atomic = atomic;
  f->other_atomic = other_atomic;
  f->same_warp = same_warp;
  if (other >= 0 && other < kMaxThreadsPerBlock) {
    put_thread(f->other_thread, static_cast<unsigned>(other));
  } else if (check == kRace) {
    f->other_thread[0] = 0xFFFFFFFFu;  // one of several threads
  }
  fill_lane(f, linear_thread(), other);
  if (space == kGlobal) {
    name_global(f, offset);
    return f;
  }
  if (space == kDynamicShared) {
    copy_text(f->array, "extern __shared__", sizeof(f->array));
    f->offset = static_cast<long long>(offset);
    f->extent = static_cast<long long>(dynamic_bytes);
    return f;
  }
  unsigned short object = offset < detail::__stop_aotc_shared - detail::__start_aotc_shared ? object_of_byte[offset] : kNobody;
  if (object == kNobody) {  // padding, or past the section: name the object just before it
    unsigned long long o = offset < detail::__stop_aotc_shared - detail::__start_aotc_shared
                               ? offset
                               : detail::__stop_aotc_shared - detail::__start_aotc_shared;
    while (o-- > 0 && object == kNobody) object = object_of_byte[o];
  }
  if (object == kNobody) object = 0;
  copy_text(f->array, objects[object].name, sizeof(f->array));
  f->offset = static_cast<long long>(offset - objects[object].offset);
  f->extent = static_cast<long long>(objects[object].size);
  return f;
}

AOTC_EMU_UNCHECKED static Fault* access_fault(int check, int kind, int space, unsigned long long offset,
                                              unsigned long long size, bool write, int other, bool atomic = false,
                                              bool other_atomic = false, bool same_warp = false) {
  return fill_access(report(check, kind, space), check, space, offset, size, write, other, atomic, other_atomic, same_warp);
}

// A plain read and another thread's compare-and-swap of one word in one epoch.
AOTC_EMU_UNCHECKED static void access_note(int kind, int space, unsigned long long offset, unsigned long long size,
                                           bool atomic, int other, bool same_warp) {
  fill_access(report_note(kind, space), kRace, space, offset, size, atomic, other, atomic, !atomic, same_warp);
}

// The address of byte `offset` of a space (global: the address itself).
AOTC_EMU_UNCHECKED static unsigned long long space_address(int space, unsigned long long offset) {
  if (space == kStaticShared) return reinterpret_cast<unsigned long long>(detail::__start_aotc_shared) + offset;
  if (space == kDynamicShared) return reinterpret_cast<unsigned long long>(detail::dynamic_shared) + offset;
  return offset;
}

// A plain write's byte `byte` races with another thread's plain write of this
// epoch: kept (PendingWrite) until the write has happened, or reported now
// where it cannot be kept (a long access, or too many pending).
AOTC_EMU_UNCHECKED static void defer_write_race(int space, unsigned long long first, unsigned long long byte,
                                                unsigned long long size, int other, bool same_warp) {
  PendingWrite* last = pending_write_count > 0 ? &pending_writes[pending_write_count - 1] : nullptr;
  if (last != nullptr && last->serial == event_serial) {  // another byte of the same access
    last->racing |= 1u << (byte - first);
    return;
  }
  if (size > kPendingWriteBytes || pending_write_count == kMaxPendingWrites) {
    access_fault(kRace, kWriteAfterWrite, space, byte, size, true, other, false, false, same_warp);
    return;
  }
  PendingWrite& p = pending_writes[pending_write_count++];
  p.serial = event_serial;
  p.address = space_address(space, first);
  p.offset = first;
  p.size = size;
  p.byte = byte;
  p.racing = 1u << (byte - first);
  p.space = space;
  p.other = other;
  p.same_warp = same_warp;
  p.thread = detail::thread_idx;
  p.pc = access_pc;
  __builtin_memcpy(p.before, reinterpret_cast<const void*>(p.address), size);
}

// The pending writes, now done: those that changed a racing byte are
// reported, as their hooks would have, the others were the same value again.
AOTC_EMU_UNCHECKED static void settle_writes() {
  const uint3 thread = detail::thread_idx;
  void* const pc = access_pc;
  const unsigned long long serial = event_serial;
  for (int i = 0; i < pending_write_count; ++i) {
    const PendingWrite& p = pending_writes[i];
    const auto* now = reinterpret_cast<const unsigned char*>(p.address);
    bool changed = false;
    for (unsigned long long b = 0; b < p.size; ++b) changed = changed || ((p.racing >> b & 1u) != 0 && now[b] != p.before[b]);
    if (!changed) continue;
    detail::thread_idx = p.thread;
    access_pc = p.pc;
    event_serial = p.serial;
    access_fault(kRace, kWriteAfterWrite, p.space, p.byte, p.size, true, p.other, false, false, p.same_warp);
  }
  pending_write_count = 0;
  detail::thread_idx = thread;
  access_pc = pc;
  event_serial = serial;
}

// A volatile access (kVolatile) against a byte's shadow. Its reads join the
// updaters (atomics' writes), without kUpdateWrites: each is morally strong.
// It races with plain accesses as a plain access does, and with the updates
// and volatile reads of this epoch only where they are a lane of its own warp
// that no __syncwarp orders it after (lockstep, which no GPU since sm_70
// keeps). A store over another's store is judged by value once it has
// happened (defer_write_race), as a plain one is: lanes setting one flag to
// the same value are right on every GPU, whichever lands last. Out of line:
// volatile accesses are rare, and every other access inlines check_byte.
template <bool kOrdered>
AOTC_EMU_UNCHECKED static void volatile_race(const Shadow& s, Stamps& st, int space, unsigned long long first,
                                             unsigned long long byte, unsigned long long size, bool write,
                                             const Accessor& me) {
  int other;
  bool warp = false;  // the other access is a lane of the accessor's warp
  if ((other = write_race<kOrdered>(s, &st, me, warp)) >= 0) {
    if (write) {
      defer_write_race(space, first, byte, size, other, warp);
    } else {
      access_fault(kRace, kReadAfterWrite, space, byte, size, false, other, false, false, warp);
    }
  } else if (write && s.read == epoch &&
             (other = group_race<kOrdered>(s.reader, s.read_warp, s.read_interval, st.read, me, warp)) >= 0) {
    access_fault(kRace, kWriteAfterRead, space, byte, size, true, other, false, false, warp);
  } else if (s.updated == epoch && (write || (s.updater & kUpdateWrites) != 0) &&
             (other = group_race<kOrdered>(s.updater, s.update_warp, s.update_interval, st.update, me, warp)) >= 0 && warp) {
    if (write && (s.updater & kUpdateWrites) != 0) {
      defer_write_race(space, first, byte, size, other, warp);
    } else {
      access_fault(kRace, write ? kWriteAfterRead : kReadAfterWrite, space, byte, size, write, other, false, false, warp);
    }
  }
}

// One byte of an access. `offset` is the byte's offset in its space (global:
// its address); `first` and `size` describe the whole access, for a report.
// `atomic`: an AtomicKind. kOrdered: the launch fences, and `stamps` are the byte's.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static void check_byte(Shadow& s, Stamps* stamps, int space, unsigned long long first,
                                          unsigned long long byte, unsigned long long size, bool write, int atomic,
                                          const Accessor& me) {
  Stamps unstamped;  // not kOrdered: written to, never read
  Stamps& st = kOrdered ? *stamps : unstamped;
  if ((AOTC_EMU_CHECKS & kInit) && space != kGlobal && (!write || (atomic && atomic != kVolatile))) {
    if (s.writer == kPendingCopy && s.written >= block_epoch) {
      access_fault(kInit, kCopyNotLanded, space, byte, size, write, kNobody);
    } else if (s.written < block_epoch && s.updated < block_epoch) {
      access_fault(kInit, kUninitializedRead, space, byte, size, write, kNobody);
    }
  }
  if (AOTC_EMU_CHECKS & kRace) {
    int other;
    bool warp = false;  // the other access is a lane of the accessor's warp
    if (!atomic && !write) {
      if ((other = write_race<kOrdered>(s, &st, me, warp)) >= 0) {
        access_fault(kRace, kReadAfterWrite, space, byte, size, false, other, false, false, warp);
      } else if (s.updated == epoch && (s.updater & kUpdateWrites) != 0 &&
                 (other = group_race<kOrdered>(s.updater, s.update_warp, s.update_interval, st.update, me, warp)) >= 0) {
        // Judged at the reader's next barrier: its own atomic on the word may follow (a CAS loop's guess).
        Suspect& suspect = suspects[me.id];
        const bool compare_only = (s.updater & kAccumulated) == 0;
        if (!suspect.active || (suspect.compare_only && !compare_only)) {
          suspect = Suspect{true, space, warp, compare_only, static_cast<unsigned short>(other), first, byte, size, access_pc};
        }
      }
    } else if (!atomic) {
      if ((other = write_race<kOrdered>(s, &st, me, warp)) >= 0) {
        defer_write_race(space, first, byte, size, other, warp);
      } else if (s.read == epoch && (other = group_race<kOrdered>(s.reader, s.read_warp, s.read_interval, st.read, me, warp)) >= 0) {
        access_fault(kRace, kWriteAfterRead, space, byte, size, true, other, false, false, warp);
      } else if (s.updated == epoch && (other = group_race<kOrdered>(s.updater, s.update_warp, s.update_interval, st.update, me, warp)) >= 0) {
        const bool wrote = (s.updater & kUpdateWrites) != 0;  // else only volatile reads, which a plain write races with
        if (wrote && (s.updater & kAtomicWrites) == 0) {
          defer_write_race(space, first, byte, size, other, warp);  // over volatile stores: judged by value
        } else {
          access_fault(kRace, wrote ? kWriteAfterWrite : kWriteAfterRead, space, byte, size, true, other, false, wrote, warp);
        }
      }
    } else if (atomic == kVolatile) {
      volatile_race<kOrdered>(s, st, space, first, byte, size, write, me);
    } else {
      if ((other = write_race<kOrdered>(s, &st, me, warp)) >= 0) {
        access_fault(kRace, write ? kWriteAfterWrite : kReadAfterWrite, space, byte, size, write, other, true, false, warp);
      } else if (write && s.read == epoch && (other = group_race<kOrdered>(s.reader, s.read_warp, s.read_interval, st.read, me, warp)) >= 0) {
        if (atomic == kCompare) {
          access_note(kWriteAfterRead, space, byte, size, true, other, warp);
        } else {
          access_fault(kRace, kWriteAfterRead, space, byte, size, true, other, true, false, warp);
        }
      }
    }
  }
  if (!write && !atomic) {
    group_add<kOrdered>(s.read, s.reader, s.read_warp, s.read_interval, st.read, me);
  } else if (!atomic) {
    s.written = epoch;
    s.writer = me.id;
    s.write_interval = me.interval;
    st.write = me.clock;
  } else if (write) {
    group_add<kOrdered>(s.updated, s.updater, s.update_warp, s.update_interval, st.update, me);
    s.updater |= atomic == kVolatile ? kUpdateWrites : kUpdateWrites | kAtomicWrites;
    if (atomic == kAccumulate || atomic == kVolatile) s.updater |= kAccumulated;  // a plain read between is a race
    if (s.read == epoch && (s.reader & ~kWarpOrdered) == me.id) s.read = 0;  // its own read was the guess this update checks
    Suspect& suspect = suspects[me.id];
    if (suspect.active && suspect.space == space && byte >= suspect.address && byte < suspect.address + suspect.size) {
      suspect.active = false;
    }
  } else if (atomic == kVolatile) {
    group_add<kOrdered>(s.updated, s.updater, s.update_warp, s.update_interval, st.update, me);  // a volatile read
  }
}

// A byte of a launch that fences: out of line, so that g++ compiles the
// stamping form of check_byte once, not in every loop that inlines the other.
AOTC_EMU_UNCHECKED static void check_ordered_byte(Shadow& s, Stamps* stamps, int space, unsigned long long first,
                                                  unsigned long long byte, unsigned long long size, bool write, int atomic,
                                                  const Accessor& me) {
  check_byte<true>(s, stamps, space, first, byte, size, write, atomic, me);
}

// One byte, in the form the launch needs.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static void check_any_byte(Shadow& s, Stamps* stamps, int space, unsigned long long first,
                                              unsigned long long byte, unsigned long long size, bool write, int atomic,
                                              const Accessor& me) {
  if (kOrdered) {
    check_ordered_byte(s, stamps, space, first, byte, size, write, atomic, me);
  } else {
    check_byte<false>(s, stamps, space, first, byte, size, write, atomic, me);
  }
}

template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static void check_bytes_as(Shadow* shadow, Stamps* stamps, int space, unsigned long long offset,
                                              unsigned long long size, bool write, int atomic) {
  const Accessor me = accessor<kOrdered>();
  for (unsigned long long byte = offset, end = offset + size; byte < end; ++byte) {
    check_any_byte<kOrdered>(shadow[byte], kOrdered ? stamps + byte : nullptr, space, offset, byte, size, write, atomic, me);
  }
}

// The bytes of a shared access. `stamps`: of the space, for a launch that fences.
template <bool kOrdered>
AOTC_EMU_UNCHECKED static void check_bytes(Shadow* shadow, Stamps* stamps, int space, unsigned long long offset,
                                           unsigned long long size, bool write, int atomic) {
  check_bytes_as<kOrdered>(shadow, stamps, space, offset, size, write, atomic);
}

// The bytes of a global access (the race check), a shadow page at a time.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static void check_global(unsigned long long address, unsigned long long size, bool write, int atomic) {
  const Accessor me = accessor<kOrdered>();
  Shadow* shadow = nullptr;  // of byte `first` of the access, whose page holds byte i
  Stamps* stamps = nullptr;
  for (unsigned long long i = 0, first = 0; i < size; ++i) {
    if (i == 0 || (address + i) % kPageBytes == 0) {  // one lookup a page
      shadow = global_shadow(address + i);
      if (kOrdered && shadow != nullptr && (stamps = cached_page_stamps()) == nullptr) shadow = nullptr;
      first = i;
    }
    if (shadow != nullptr) {
      check_any_byte<kOrdered>(shadow[i - first], kOrdered ? stamps + (address + i) % kPageBytes : nullptr, kGlobal,
                               address, address + i, size, write, atomic, me);
    }
  }
}

// Whether the bytes of the last access found bad hold no one else's live data
// (so that divert may swap them): set with each memory fault.
static bool bad_bytes_swappable;

AOTC_EMU_UNCHECKED static void global_fault(int kind, int problem, unsigned long long address, unsigned long long size,
                                            bool write) {
  if (Fault* f = report(kMemory, kind, kGlobal)) {
    f->is_write = write;
    f->size = size;
    f->reason = problem;
    name_global(f, address);
  }
}

// Why bytes that are no allocation of the launch's are off limits.
AOTC_EMU_UNCHECKED static int outside_problem(unsigned long long address, unsigned long long size, bool write) {
  if (mapped_for(address, size, write)) return kUnreachable;
  for (unsigned long long page = address / page_bytes; page <= (address + size - 1) / page_bytes; ++page) {
    if (page_protection(page) < 0) return kUnmapped;
  }
  return kProtected;
}

// Whether a global access may happen; one that may not is reported. With the
// memory check: inside an allocation the launch reaches, on bytes ASan leaves
// open; without it: on mapped bytes.
AOTC_EMU_UNCHECKED_HOT static bool global_allowed(unsigned long long address, unsigned long long size, bool write) {
  if (AOTC_EMU_CHECKS & kMemory) {
    const bool inside = reachable(address, size);
    const bool poisoned = asan_region_is_poisoned(reinterpret_cast<void*>(address), size) != nullptr;
    if (inside && !poisoned) return true;
    bad_bytes_swappable = inside || poisoned;  // the launch's own bytes, or a redzone, guard band or freed memory
    const bool redzone = poisoned && (inside || mapped_for(address, size, false));  // else outside the app's memory
    const int problem = inside || redzone ? kPoisoned : outside_problem(address, size, write);
    global_fault(kOutOfBounds, problem, address, size, write);
    return false;
  }
  if (mapped_for(address, size, write)) return true;
  bad_bytes_swappable = false;
  global_fault(kOutOfBounds, outside_problem(address, size, write), address, size, write);
  return false;
}

// The space of `address` and its offset there (global: the address itself).
AOTC_EMU_UNCHECKED_HOT static int space_of(unsigned long long address, unsigned long long& offset) {
  const unsigned long long section = reinterpret_cast<unsigned long long>(detail::__start_aotc_shared);
  const unsigned long long dynamic = reinterpret_cast<unsigned long long>(detail::dynamic_shared);
  if (address >= section && address < reinterpret_cast<unsigned long long>(detail::__stop_aotc_shared)) {
    offset = address - section;
    return kStaticShared;
  }
  if (address >= dynamic && address < dynamic + kMaxDynamicSharedBytes) {
    offset = address - dynamic;
    return kDynamicShared;
  }
  offset = address;
  return kGlobal;
}

// Where an access goes: its space and its offset there (space_of). False,
// reported, for one that must not happen.
AOTC_EMU_UNCHECKED_HOT static bool place_access(unsigned long long address, unsigned long long size, bool write, int& space,
                                            unsigned long long& offset) {
  space = space_of(address, offset);
  if (space == kStaticShared) {
    const unsigned long long section_bytes = reinterpret_cast<unsigned long long>(detail::__stop_aotc_shared) -
                                             reinterpret_cast<unsigned long long>(detail::__start_aotc_shared);
    const bool inside = offset + size <= section_bytes && object_of_byte[offset] != kNobody &&
                        object_of_byte[offset] == object_of_byte[offset + size - 1];
    if (inside) return true;
    if (!(AOTC_EMU_CHECKS & kMemory)) return false;  // check_access lets it pass unchecked, as before
    bad_bytes_swappable = true;                      // the library's own bytes
    access_fault(kMemory, kOutOfBounds, space, offset, size, write, kNobody);
    return false;
  }
  if (space == kDynamicShared) {
    if (offset + size <= dynamic_bytes || !(AOTC_EMU_CHECKS & kMemory)) return true;  // the buffer is the library's own
    bad_bytes_swappable = true;
    access_fault(kMemory, kOutOfBounds, space, offset, size, write, kNobody);
    return false;
  }
  return global_allowed(address, size, write);
}

// Checks one access of a CUDA thread against the shadow of its bytes. False,
// reported, for one that must not happen. `atomic`: an AtomicKind.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static bool check_access(const volatile void* pointer, unsigned long long size, bool write, int atomic) {
  const unsigned long long address = reinterpret_cast<unsigned long long>(pointer);
  int space = kGlobal;
  unsigned long long offset = 0;
  if (!place_access(address, size, write, space, offset)) {
    return space == kStaticShared && !(AOTC_EMU_CHECKS & kMemory);  // unchecked off the objects, as before
  }
  if (space == kStaticShared) {
    check_bytes<kOrdered>(static_shadow, static_stamps, space, offset, size, write, atomic);
  } else if (space == kDynamicShared) {
    if (offset + size <= dynamic_bytes) check_bytes<kOrdered>(dynamic_shadow, dynamic_stamps, space, offset, size, write, atomic);
  } else if (AOTC_EMU_CHECKS & kRace) {
    check_global<kOrdered>(address, size, write, atomic);
  }
  return true;
}

// check_access for a launch that fences: out of line, so that g++ compiles its
// stamping form once, where the plain and the atomic hooks inline the other.
AOTC_EMU_UNCHECKED static bool check_ordered_access(const volatile void* pointer, unsigned long long size, bool write,
                                                    int atomic) {
  return check_access<true>(pointer, size, write, atomic);
}
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static bool check_any_access(const volatile void* pointer, unsigned long long size, bool write,
                                                int atomic) {
  return kOrdered ? check_ordered_access(pointer, size, write, atomic) : check_access<false>(pointer, size, write, atomic);
}

// The suspect reads still standing when their threads reach a barrier or return.
AOTC_EMU_UNCHECKED static void report_suspects(const detail::Fiber* fibers, int count) {
  for (int t = 0; t < count; ++t) {
    const unsigned id = static_cast<unsigned>(&fibers[t] - detail::fibers);
    Suspect& suspect = suspects[id];
    if (!suspect.active) continue;
    suspect.active = false;
    detail::thread_idx = fibers[t].thread_idx;
    access_pc = suspect.pc;
    ++event_serial;
    if (suspect.compare_only) {
      access_note(kReadAfterWrite, suspect.space, suspect.offset, suspect.size, false, suspect.other, suspect.same_warp);
    } else {
      access_fault(kRace, kReadAfterWrite, suspect.space, suspect.offset, suspect.size, false, suspect.other, false, true,
                   suspect.same_warp);
    }
  }
}

// Called by the (single) worker when every live fiber waits at a barrier.
AOTC_EMU_UNCHECKED static void end_phase(const detail::Fiber* fibers, int count) {
  report_suspects(fibers, count);
  int first = -1;
  for (int t = 0; t < count; ++t) {
    if (fibers[t].state == detail::kFinished) continue;
    if (first < 0) {
      first = t;
    } else if ((AOTC_EMU_CHECKS & kSync) &&
               (fibers[t].sync_line != fibers[first].sync_line || strcmp(fibers[t].sync_file, fibers[first].sync_file) != 0)) {
      detail::thread_idx = fibers[t].thread_idx;
      ++event_serial;
      if (Fault* f = report(kSync, kDivergentBarrier, kGlobal)) {
        put_thread(f->other_thread, first);
        f->line = fibers[t].sync_line;
        f->other_line = fibers[first].sync_line;
        copy_text(f->file, fibers[t].sync_file, sizeof(f->file));
      }
    }
  }
  ++epoch;
}

// Called by the (single) worker once every fiber of the block has returned.
AOTC_EMU_UNCHECKED static void end_block(const detail::Fiber* fibers, int count) { report_suspects(fibers, count); }

// ---- warp collectives (aotc_emulator_warp.h) ---------------------------------------

AOTC_EMU_UNCHECKED static Fault* warp_fault(int kind, const detail::Fiber& lane, unsigned id) {
  if (!(AOTC_EMU_CHECKS & kSync)) return nullptr;
  detail::thread_idx = lane.thread_idx;
  ++event_serial;
  Fault* f = report(kSync, kind, kGlobal);
  if (f == nullptr) return nullptr;
  fill_lane(f, id, -1);
  f->mask = lane.mask;
  f->line = lane.sync_line;
  copy_text(f->file, lane.sync_file, sizeof(f->file));
  copy_text(f->operation, lane.op_name, sizeof(f->operation));
  return f;
}
AOTC_EMU_UNCHECKED static void lane_not_in_mask(const detail::Fiber& lane, unsigned id) { warp_fault(kLaneNotInMask, lane, id); }

AOTC_EMU_UNCHECKED static void divergent_warp(const detail::Fiber& lane, unsigned id, const detail::Fiber& other, unsigned other_id) {
  Fault* f = warp_fault(kDivergentWarp, lane, id);
  if (f == nullptr) return;
  f->other_lane = other_id % kWarpSize;
  put_thread(f->other_thread, other_id);
  f->reason = other.state == detail::kAtBarrier;
  f->other_mask = other.mask;
  f->other_line = other.sync_line;
  copy_text(f->other_file, other.sync_file, sizeof(f->other_file));
  copy_text(f->other_operation, f->reason ? "__syncthreads" : other.op_name, sizeof(f->other_operation));
}

AOTC_EMU_UNCHECKED static void inactive_source(const detail::Fiber& lane, unsigned id, int source, bool exited) {
  Fault* f = warp_fault(kInactiveSource, lane, id);
  if (f == nullptr) return;
  const unsigned source_id = id - id % kWarpSize + static_cast<unsigned>(source);
  f->other_lane = static_cast<unsigned>(source);
  f->reason = exited ? kSourceExited : kSourceWaitsElsewhere;
  put_thread(f->other_thread, source_id);
}

// ---- asynchronous copies (aotc_emulator_async.h) -------------------------------------
// ---- asynchronous copies (aotc_emulator_async.h) -------------------------------------

// Whether an asynchronous copy's destination may be written (reported if not:
// the copy is then never issued).
AOTC_EMU_UNCHECKED static bool copy_allowed(void* destination, unsigned long long size) {
  if (detail::current_fiber == nullptr) return true;
  settle();
  ++event_serial;
  access_pc = nullptr;
  int space = kGlobal;
  unsigned long long offset = 0;
  return place_access(reinterpret_cast<unsigned long long>(destination), size, true, space, offset) ||
         (space == kStaticShared && !(AOTC_EMU_CHECKS & kMemory));
}

// Bytes an asynchronous copy will land in at its wait: reading them first is reported.
AOTC_EMU_UNCHECKED static void copy_issued(const void* destination, unsigned long long size) {
  if (!(AOTC_EMU_CHECKS & kInit) || detail::current_fiber == nullptr) return;
  const unsigned long long address = reinterpret_cast<unsigned long long>(destination);
  const unsigned long long section = reinterpret_cast<unsigned long long>(detail::__start_aotc_shared);
  const unsigned long long dynamic = reinterpret_cast<unsigned long long>(detail::dynamic_shared);
  Shadow* shadow = nullptr;
  if (address >= section && address + size <= reinterpret_cast<unsigned long long>(detail::__stop_aotc_shared)) {
    shadow = static_shadow + (address - section);
  } else if (address >= dynamic && address + size <= dynamic + dynamic_bytes) {
    shadow = dynamic_shadow + (address - dynamic);
  }
  for (unsigned long long i = 0; shadow != nullptr && i < size; ++i) {
    shadow[i].written = epoch;
    shadow[i].writer = kPendingCopy;
  }
}

// An asynchronous copy lands at its wait: the waiting thread reads its source
// and writes its destination. Whether it may (the emulator copies only then).
AOTC_EMU_UNCHECKED static bool copy_landed(void* destination, const void* source, unsigned long long copied,
                                           unsigned long long size) {
  if (detail::current_fiber == nullptr) return true;
  settle();
  access_pc = nullptr;
  ++event_serial;
  const auto check = ordering ? check_ordered_access : check_access<false>;
  bool allowed = copied == 0 || check(source, copied, false, kPlain);
  ++event_serial;
  allowed = check(destination, size, true, kPlain) && allowed;
  return allowed;
}

// ---- the hooks' accesses -------------------------------------------------------------

// A pointer-sized word of a read: what it points to becomes reachable.
AOTC_EMU_UNCHECKED_HOT static void learn_words(const volatile void* pointer, unsigned long long size) {
  const unsigned long long address = reinterpret_cast<unsigned long long>(pointer);
  const unsigned long long end = address + (size < 512 ? size : 512);
  for (unsigned long long word = (address + 7) & ~7ull; word + 8 <= end; word += 8) {
    learn(*reinterpret_cast<const unsigned long long*>(word));
  }
}

// An access the compiler believes aligned for its size (a float4's 16-byte
// load, an atomic) at an address that is not, whatever the checks: a GPU
// ends the kernel there (cudaErrorMisalignedAddress). It is reported, with
// the bytes past the last aligned address (Fault::reason), and never
// happens: the aligned vector move the compiler may have made of it faults
// on the host whatever bytes stand in, so its thread stops there, as if it
// had returned. Outside a CUDA thread (the emulator's own code) it does
// nothing, as the hooks then do.
AOTC_EMU_UNCHECKED __attribute__((cold)) static void misaligned_access(const volatile void* pointer, unsigned long long size,
                                                                       bool write) {
  if (detail::current_fiber == nullptr) return;
  settle();
  ++event_serial;
  const unsigned long long address = reinterpret_cast<unsigned long long>(pointer);
  unsigned long long offset = 0;
  const int space = space_of(address, offset);
  if (Fault* f = access_fault(kMemory, kMisaligned, space, offset, size, write, kNobody)) {
    f->reason = static_cast<int>(address & (size - 1));
    f->stopped = 1;
  }
  stop_thread();
}

// A load or store the compiler performs after its hook (plain or volatile):
// checked; true if it may happen, else diverted (a read finds poison, a write
// is undone) or its thread stopped there.
template <bool kOrdered>
AOTC_EMU_UNCHECKED_HOT static bool performed_access(const volatile void* pointer, unsigned long long size, bool write,
                                                    int kind) {
  settle_before(write);
  ++event_serial;
  if (check_any_access<kOrdered>(pointer, size, write, kind)) {
    if ((AOTC_EMU_CHECKS & kMemory) && !write && size >= 8) learn_words(pointer, size);
    return true;
  }
  if (divert(reinterpret_cast<unsigned long long>(pointer), size, write, bad_bytes_swappable)) return false;
  if (faulted && fault_serial == event_serial) fault.stopped = 1;
  stop_thread();
  return false;
}

// A plain load or store of a CUDA thread.
template <bool kOrdered>
AOTC_EMU_UNCHECKED static void plain_access(const volatile void* pointer, unsigned long long size, bool write) {
  if (detail::current_fiber == nullptr) return;  // the emulator's own code, outside any CUDA thread
  performed_access<kOrdered>(pointer, size, write, kPlain);
}

// A thread that spins on an atomic, waiting for another thread of its block
// (a flag, a lock), is right on a GPU, whose warps all make progress; fibers
// switch only at barriers and collectives, so it would wait for ever here if
// the thread it waits for had not run yet. Every kSpinAtomics atomics or
// volatile accesses (volatile_access), the running fiber lets the others run
// (runtime.h, yield_fiber), and comes back once each has waited, returned or
// yielded in turn.
constexpr unsigned kSpinAtomics = 1024;
static unsigned atomics_since_yield;

AOTC_EMU_UNCHECKED static void spin_point() {
  if (++atomics_since_yield < kSpinAtomics) return;
  atomics_since_yield = 0;
  void* const pc = access_pc;  // other fibers' accesses set these
  const int kind = atomic_kind;
  detail::yield_fiber();
  access_pc = pc;
  atomic_kind = kind;
}

// An atomic of a CUDA thread (the hooks perform it): false if it must not
// happen, and the hook then leaves memory alone.
template <bool kOrdered>
AOTC_EMU_UNCHECKED static bool atomic_access(const volatile void* pointer, unsigned long long size, bool write, int kind) {
  if (detail::current_fiber == nullptr) return true;
  if ((reinterpret_cast<unsigned long long>(pointer) & (size - 1)) != 0) misaligned_access(pointer, size, write);
  spin_point();
  // Another thread's first fence while this one let the others run: this
  // access is the first of its thread to be stamped.
  if (!kOrdered && ordering) return atomic_access<true>(pointer, size, write, kind);
  if (diversion_count > 0 || pending_write_count > 0) settle();
  last_hook_wrote = false;
  ++event_serial;
  const bool allowed = check_any_access<kOrdered>(pointer, size, write, kind);
  if (allowed && (AOTC_EMU_CHECKS & kMemory) && !write && size == 8) learn_words(pointer, size);
  return allowed;
}

// A volatile load or store of a CUDA thread: checked as one (kVolatile), and a
// spin point, as an atomic is (a spin on a volatile flag is right on a GPU);
// a fence orders through it as through an atomic (aotc_emulator_order.h).
// Bad ones are diverted or stop the thread, as plain ones are.
template <bool kOrdered>
AOTC_EMU_UNCHECKED static void volatile_access(const volatile void* pointer, unsigned long long size, bool write) {
  if (detail::current_fiber == nullptr) return;
  spin_point();
  if (!kOrdered && ordering) return volatile_access<true>(pointer, size, write);  // as in atomic_access
  // The access itself follows the hook with no other fiber between: a read
  // acquires at its next fence what the word's release left, and a write
  // after a fence releases, as an atomic's would.
  if (performed_access<kOrdered>(pointer, size, write, kVolatile) && kOrdered) atomic_done(pointer, !write, write, write);
}

// What the hooks call: the forms a launch without fences needs until its
// first fence, then those that stamp accesses. An indirect call costs what a
// direct one does, so a kernel without fences pays nothing for the other form.
static void (*plain_access_now)(const volatile void*, unsigned long long, bool) = plain_access<false>;
static bool (*atomic_access_now)(const volatile void*, unsigned long long, bool, int) = atomic_access<false>;
static void (*volatile_access_now)(const volatile void*, unsigned long long, bool) = volatile_access<false>;

// A __threadfence*() of a CUDA thread: the race check orders by it (aotc_emulator_order.h).
AOTC_EMU_UNCHECKED static void thread_fence() {
  if (!(AOTC_EMU_CHECKS & kRace) || detail::current_fiber == nullptr) return;
  fence(detail::__stop_aotc_shared - detail::__start_aotc_shared, dynamic_bytes);
  if (ordering) {
    plain_access_now = plain_access<true>;
    atomic_access_now = atomic_access<true>;
    volatile_access_now = volatile_access<true>;
  }
}

// Before a launch: no fence yet.
AOTC_EMU_UNCHECKED static void unordered_accesses() {
  ordering = false;
  plain_access_now = plain_access<false>;
  atomic_access_now = atomic_access<false>;
  volatile_access_now = volatile_access<false>;
}

// The shim's atomics that accumulate through a compare-and-swap loop (float
// atomicAdd, atomicInc, atomicDec) say so around it (aotc_emulator.h).
AOTC_EMU_UNCHECKED static void begin_accumulate() { atomic_kind = kAccumulate; }
AOTC_EMU_UNCHECKED static void end_accumulate() { atomic_kind = kCompare; }
struct Accumulating {
  Accumulating() { begin_accumulate(); }
  ~Accumulating() { end_accumulate(); }
};

}  // namespace aotc_emu::check

// ---- the hooks gcc's -fsanitize=thread instrumentation calls --------------------
#define AOTC_EMU_HOOK extern "C" __attribute__((visibility("hidden"), no_sanitize_thread, noinline))
#define AOTC_EMU_HERE (::aotc_emu::check::access_pc = __builtin_return_address(0))
AOTC_EMU_HOOK void __tsan_init() {}
AOTC_EMU_HOOK void __tsan_func_entry(void*) {}
AOTC_EMU_HOOK void __tsan_func_exit() {}
AOTC_EMU_HOOK void __tsan_vptr_update(void**, void*) {}
AOTC_EMU_HOOK void __tsan_vptr_read(void**) {}
AOTC_EMU_HOOK void __tsan_read_range(void* p, unsigned long n) { AOTC_EMU_HERE; ::aotc_emu::check::plain_access_now(p, n, false); }
AOTC_EMU_HOOK void __tsan_write_range(void* p, unsigned long n) { AOTC_EMU_HERE; ::aotc_emu::check::plain_access_now(p, n, true); }
// The compiler believes the address of __tsan_readN's access a multiple of N
// (else it calls __tsan_unaligned_readN): one that is not is a GPU's fault.
// A tail call, as the access's own: the hook keeps nothing across it.
#define AOTC_EMU_ALIGNED(p, N, WRITE) \
  if ((reinterpret_cast<unsigned long long>(p) & (N - 1)) != 0) return ::aotc_emu::check::misaligned_access(p, N, WRITE)
#define AOTC_EMU_ACCESS_HOOKS(N)                                                                                  \
  AOTC_EMU_HOOK void __tsan_read##N(void* p) {                                                                    \
    AOTC_EMU_HERE;                                                                                                \
    AOTC_EMU_ALIGNED(p, N, false);                                                                                \
    ::aotc_emu::check::plain_access_now(p, N, false);                                                             \
  }                                                                                                               \
  AOTC_EMU_HOOK void __tsan_write##N(void* p) {                                                                   \
    AOTC_EMU_HERE;                                                                                                \
    AOTC_EMU_ALIGNED(p, N, true);                                                                                 \
    ::aotc_emu::check::plain_access_now(p, N, true);                                                              \
  }                                                                                                               \
  AOTC_EMU_HOOK void __tsan_unaligned_read##N(void* p) { AOTC_EMU_HERE; ::aotc_emu::check::plain_access_now(p, N, false); } \
  AOTC_EMU_HOOK void __tsan_unaligned_write##N(void* p) { AOTC_EMU_HERE; ::aotc_emu::check::plain_access_now(p, N, true); } \
  AOTC_EMU_HOOK void __tsan_volatile_read##N(void* p) {                                                           \
    AOTC_EMU_HERE;                                                                                                \
    AOTC_EMU_ALIGNED(p, N, false);                                                                                \
    ::aotc_emu::check::volatile_access_now(p, N, false);                                                          \
  }                                                                                                               \
  AOTC_EMU_HOOK void __tsan_volatile_write##N(void* p) {                                                          \
    AOTC_EMU_HERE;                                                                                                \
    AOTC_EMU_ALIGNED(p, N, true);                                                                                 \
    ::aotc_emu::check::volatile_access_now(p, N, true);                                                           \
  }
AOTC_EMU_ACCESS_HOOKS(1)
AOTC_EMU_ACCESS_HOOKS(2)
AOTC_EMU_ACCESS_HOOKS(4)
AOTC_EMU_ACCESS_HOOKS(8)
AOTC_EMU_ACCESS_HOOKS(16)
#undef AOTC_EMU_ACCESS_HOOKS
#undef AOTC_EMU_ALIGNED

// Atomics: performed here (sequentially consistent, which is at least what was
// asked), and seen by the checks as accesses that never race with each other.
// One on memory it must not touch does nothing: a load or an update returns
// poison (all bits set), and a compare-and-swap reports success, so that the
// loop around it ends. Once a launch fences, each says what it read and wrote
// (check::atomic_done: releases and acquires, aotc_emulator_order.h).
#define AOTC_EMU_ORDER(A, READ, WROTE, REPLACED) \
  if (::aotc_emu::check::ordering) ::aotc_emu::check::atomic_done(A, READ, WROTE, REPLACED)
#define AOTC_EMU_ATOMIC_HOOKS(N, T)                                                                              \
  AOTC_EMU_HOOK T __tsan_atomic##N##_load(const volatile T* a, int) {                                            \
    AOTC_EMU_HERE;                                                                                               \
    if (!::aotc_emu::check::atomic_access_now(a, sizeof(T), false, ::aotc_emu::check::kCompare)) return static_cast<T>(~static_cast<T>(0));    \
    const T value = __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                        \
    AOTC_EMU_ORDER(a, true, false, false);                                                                       \
    return value;                                                                                                \
  }                                                                                                              \
  AOTC_EMU_HOOK void __tsan_atomic##N##_store(volatile T* a, T v, int) {                                         \
    AOTC_EMU_HERE;                                                                                               \
    if (!::aotc_emu::check::atomic_access_now(a, sizeof(T), true, ::aotc_emu::check::kAccumulate)) return;           \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                                    \
    AOTC_EMU_ORDER(a, false, true, true);                                                                        \
  }                                                                                                              \
  AOTC_EMU_ATOMIC_RMW(N, T, exchange, __atomic_exchange_n)                                                       \
  AOTC_EMU_ATOMIC_RMW(N, T, fetch_add, __atomic_fetch_add)                                                       \
  AOTC_EMU_ATOMIC_RMW(N, T, fetch_sub, __atomic_fetch_sub)                                                       \
  AOTC_EMU_ATOMIC_RMW(N, T, fetch_and, __atomic_fetch_and)                                                       \
  AOTC_EMU_ATOMIC_RMW(N, T, fetch_or, __atomic_fetch_or)                                                         \
  AOTC_EMU_ATOMIC_RMW(N, T, fetch_xor, __atomic_fetch_xor)                                                       \
  AOTC_EMU_ATOMIC_RMW(N, T, fetch_nand, __atomic_fetch_nand)                                                     \
  AOTC_EMU_HOOK int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {             \
    AOTC_EMU_HERE;                                                                                               \
    if (!::aotc_emu::check::atomic_access_now(a, sizeof(T), true, ::aotc_emu::check::atomic_kind)) return 1;         \
    const bool swapped = __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);        \
    AOTC_EMU_ORDER(a, true, swapped, false);                                                                     \
    return swapped;                                                                                              \
  }                                                                                                              \
  AOTC_EMU_HOOK int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {               \
    AOTC_EMU_HERE;                                                                                               \
    if (!::aotc_emu::check::atomic_access_now(a, sizeof(T), true, ::aotc_emu::check::atomic_kind)) return 1;         \
    const bool swapped = __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);         \
    AOTC_EMU_ORDER(a, true, swapped, false);                                                                     \
    return swapped;                                                                                              \
  }                                                                                                              \
  AOTC_EMU_HOOK T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                   \
    AOTC_EMU_HERE;                                                                                               \
    if (!::aotc_emu::check::atomic_access_now(a, sizeof(T), true, ::aotc_emu::check::atomic_kind)) return c;         \
    const bool swapped = __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
    AOTC_EMU_ORDER(a, true, swapped, false);                                                                     \
    return c;                                                                                                    \
  }
#define AOTC_EMU_ATOMIC_RMW(N, T, NAME, BUILTIN)                                                                 \
  AOTC_EMU_HOOK T __tsan_atomic##N##_##NAME(volatile T* a, T v, int) {                                           \
    AOTC_EMU_HERE;                                                                                               \
    if (!::aotc_emu::check::atomic_access_now(a, sizeof(T), true, ::aotc_emu::check::kAccumulate)) return static_cast<T>(~static_cast<T>(0));  \
    const T old = BUILTIN(a, v, __ATOMIC_SEQ_CST);                                                               \
    AOTC_EMU_ORDER(a, true, true, false);                                                                        \
    return old;                                                                                                  \
  }
AOTC_EMU_ATOMIC_HOOKS(8, unsigned char)
AOTC_EMU_ATOMIC_HOOKS(16, unsigned short)
AOTC_EMU_ATOMIC_HOOKS(32, unsigned int)
AOTC_EMU_ATOMIC_HOOKS(64, unsigned long long)
#undef AOTC_EMU_ATOMIC_RMW
#undef AOTC_EMU_ATOMIC_HOOKS
#undef AOTC_EMU_ORDER
AOTC_EMU_HOOK void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  ::aotc_emu::check::thread_fence();
}
AOTC_EMU_HOOK void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
#undef AOTC_EMU_HERE
#undef AOTC_EMU_HOOK

// The report of the calling thread's last launch, or null if it found nothing.
extern "C" __attribute__((visibility("default"))) const ::aotc_emu::check::Fault* aotc_emu_fault() {
  return ::aotc_emu::check::launch_faulted ? &::aotc_emu::check::launch_fault : nullptr;
}

// The calling thread's last launch's first note (a read of a word other
// threads compare-and-swap), or null if it has none.
extern "C" __attribute__((visibility("default"))) const ::aotc_emu::check::Fault* aotc_emu_note() {
  return ::aotc_emu::check::launch_noted ? &::aotc_emu::check::launch_note : nullptr;
}
