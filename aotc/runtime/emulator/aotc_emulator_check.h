// aotc_emulator_check.h: the emulator's compute-sanitizer (AOTC_EMULATOR_CHECK).
// Included by aotc_emulator_runtime.h when AOTC_EMU_CHECKS is nonzero.
//
// The kernel is built with gcc's -fsanitize=thread instrumentation, but no
// ThreadSanitizer runtime: the __tsan_* hooks below are the runtime. Every
// load and store of the kernel calls one with its address and size.
// - Shared memory (the static __shared__ objects, which the shim puts in the
//   ELF section aotc_shared, and the extern __shared__ buffer) keeps a shadow
//   per byte: the epoch and thread of the last write and of the last read.
// - The block's threads run as fibers on one worker, and each barrier phase is
//   an epoch. A write and another thread's access to a byte in one epoch are
//   a race by CUDA's rules, whichever order the fibers ran in (race). A read
//   of a byte no thread of this block wrote since the block began is an
//   uninitialized read (init). An access outside every shared object, or past
//   the launch's dynamic shared bytes, is out of bounds (memory).
// - Global memory: an access the compiler believes aligned (__tsan_readN)
//   must be N-aligned, as on a GPU; the bytes must not be poisoned in
//   AddressSanitizer's shadow (redzones around each malloc, freed memory).
//   That needs libasan loaded first in the process (LD_PRELOAD); compile.py
//   refuses the memory check without it.
// - At a barrier, the waiting threads must all wait at the same __syncthreads
//   (sync): a barrier that part of the block skips shows as two call sites.
// The first violation is recorded (aotc_emu_fault) and the launch returns
// kKernelFault once the grid finishes; Python turns it into KernelFaultError.
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
};
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
};

constexpr unsigned short kNobody = 0xFFFF;
constexpr unsigned short kMany = 0xFFFE;    // several threads read in this epoch
constexpr unsigned short kAtomic = 0xFFFD;  // written by atomics, which never race
struct Shadow {
  unsigned written;  // epoch of the last write; 0: never
  unsigned read;     // epoch of the last read
  unsigned short writer, reader;
};
struct SharedObject {
  unsigned long long offset, size;
  char name[128];
};

#define AOTC_EMU_UNCHECKED __attribute__((no_sanitize_thread, noinline))

static Fault fault;
static bool faulted;
// The launching thread's copy of its last launch's report: another thread's
// launch may start before Python reads it.
static thread_local Fault launch_fault;
static thread_local bool launch_faulted;
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

AOTC_EMU_UNCHECKED static void copy_text(char* to, const char* from, unsigned long capacity) {
  unsigned long i = 0;
  for (; from != nullptr && from[i] != 0 && i + 1 < capacity; ++i) to[i] = from[i];
  to[i] = 0;
}

AOTC_EMU_UNCHECKED static unsigned linear_thread() {
  const uint3 t = detail::thread_idx;
  return t.x + t.y * detail::block_dim.x + t.z * detail::block_dim.x * detail::block_dim.y;
}

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

// Records the launch's first violation of the highest rank; the launch runs
// on to its end either way.
AOTC_EMU_UNCHECKED static Fault* report(int check, int kind, int space) {
  if (faulted && rank(check) <= rank(fault.check)) return nullptr;
  faulted = true;
  __builtin_memset(&fault, 0, sizeof(fault));
  fault.check = check;
  fault.kind = kind;
  fault.space = space;
  const uint3 b = detail::block_idx;
  fault.block[0] = b.x;
  fault.block[1] = b.y;
  fault.block[2] = b.z;
  put_thread(fault.thread, linear_thread());
  Dl_info info;
  if (check != kSync && access_pc != nullptr && dladdr(access_pc, &info) != 0) {
    fault.pc = reinterpret_cast<unsigned long long>(access_pc) - reinterpret_cast<unsigned long long>(info.dli_fbase);
  }
  return &fault;
}

// The static __shared__ objects: the symbols of section aotc_shared, read
// from this library's own file once (local statics are not in .dynsym).
AOTC_EMU_UNCHECKED static void find_shared_objects(unsigned long long section_size) {
  object_of_byte = static_cast<unsigned short*>(malloc(section_size * sizeof(unsigned short)));
  for (unsigned long long i = 0; i < section_size; ++i) object_of_byte[i] = 0;  // one unnamed object
  objects = static_cast<SharedObject*>(calloc(1, sizeof(SharedObject)));
  objects[0] = SharedObject{0, section_size, "__shared__"};
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&find_shared_objects), &info) == 0 || info.dli_fname == nullptr) return;
  FILE* file = fopen(info.dli_fname, "rb");
  if (file == nullptr) return;
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
    return;
  }
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

// Called before each launch, on the launching thread.
AOTC_EMU_UNCHECKED static bool begin_launch(unsigned long long shared_bytes, const char* names,
                                            const unsigned long long* pointers, int count) {
  faulted = false;
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
  return static_shadow != nullptr || section_size == 0;
}

AOTC_EMU_UNCHECKED static void enter_block() { block_epoch = ++epoch; }

// Called on the launching thread, under the launch lock, once the grid is done.
AOTC_EMU_UNCHECKED static bool end_launch() {
  launch_faulted = faulted;
  if (faulted) launch_fault = fault;
  return faulted;
}

// Called by the (single) worker when every live fiber waits at a barrier.
AOTC_EMU_UNCHECKED static void end_phase(const detail::Fiber* fibers, int count) {
  int first = -1;
  for (int t = 0; t < count; ++t) {
    if (fibers[t].finished) continue;
    if (first < 0) {
      first = t;
    } else if ((AOTC_EMU_CHECKS & kSync) &&
               (fibers[t].sync_line != fibers[first].sync_line || strcmp(fibers[t].sync_file, fibers[first].sync_file) != 0)) {
      detail::thread_idx = fibers[t].thread_idx;
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

// The argument whose pointer is the nearest at or below `address`.
AOTC_EMU_UNCHECKED static void name_global(Fault* f, unsigned long long address) {
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
    if (region != nullptr) f->extent = static_cast<long long>(reinterpret_cast<unsigned long long>(region) + region_size);
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

AOTC_EMU_UNCHECKED static void check_global(unsigned long long address, unsigned long long size, bool write, bool aligned) {
  if (!(AOTC_EMU_CHECKS & kMemory)) return;
  const bool misaligned = aligned && (address & (size - 1)) != 0;
  if (!misaligned && asan_region_is_poisoned(reinterpret_cast<void*>(address), size) == nullptr) return;
  if (Fault* f = report(kMemory, misaligned ? kMisaligned : kOutOfBounds, kGlobal)) {
    f->is_write = write;
    f->size = size;
    name_global(f, address);
  }
}

AOTC_EMU_UNCHECKED static void shared_fault(int check, int kind, int space, unsigned long long offset,
                                            unsigned long long size, bool write, unsigned short other) {
  Fault* f = report(check, kind, space);
  if (f == nullptr) return;
  f->is_write = write;
  f->size = size;
  if (other < kAtomic) put_thread(f->other_thread, other);
  if (space == kDynamicShared) {
    copy_text(f->array, "extern __shared__", sizeof(f->array));
    f->offset = static_cast<long long>(offset);
    f->extent = static_cast<long long>(dynamic_bytes);
    return;
  }
  unsigned short object = object_of_byte[offset];
  if (object == kNobody) {  // padding: name the object just before it
    for (unsigned long long o = offset; o-- > 0 && object == kNobody;) object = object_of_byte[o];
  }
  if (object == kNobody) object = 0;
  copy_text(f->array, objects[object].name, sizeof(f->array));
  f->offset = static_cast<long long>(offset - objects[object].offset);
  f->extent = static_cast<long long>(objects[object].size);
}

AOTC_EMU_UNCHECKED static void check_shared(Shadow* shadow, int space, unsigned long long offset,
                                            unsigned long long size, bool write, bool atomic) {
  const unsigned short me = static_cast<unsigned short>(linear_thread());
  for (unsigned long long i = 0; i < size; ++i) {
    Shadow& s = shadow[offset + i];
    if (!write || atomic) {
      if ((AOTC_EMU_CHECKS & kInit) && s.written < block_epoch) {
        shared_fault(kInit, kUninitializedRead, space, offset + i, size, write, kNobody);
      } else if ((AOTC_EMU_CHECKS & kRace) && !atomic && s.written == epoch && s.writer != me && s.writer != kAtomic) {
        shared_fault(kRace, kReadAfterWrite, space, offset + i, size, false, s.writer);
      }
      if (!atomic) {
        if (s.read != epoch) {
          s.read = epoch;
          s.reader = me;
        } else if (s.reader != me) {
          s.reader = kMany;
        }
      }
    }
    if (write) {
      if ((AOTC_EMU_CHECKS & kRace) && !atomic) {
        if (s.written == epoch && s.writer != me && s.writer != kAtomic) {
          shared_fault(kRace, kWriteAfterWrite, space, offset + i, size, true, s.writer);
        } else if (s.read == epoch && s.reader != me) {
          shared_fault(kRace, kWriteAfterRead, space, offset + i, size, true, s.reader == kMany ? kNobody : s.reader);
        }
      }
      s.written = epoch;
      s.writer = atomic ? kAtomic : me;
    }
  }
}

AOTC_EMU_UNCHECKED static void access(const volatile void* pointer, unsigned long long size, bool write, bool aligned,
                                      bool atomic = false) {
  if (detail::current_fiber == nullptr) return;  // the emulator's own code, outside any CUDA thread
  const unsigned long long address = reinterpret_cast<unsigned long long>(pointer);
  const unsigned long long section = reinterpret_cast<unsigned long long>(detail::__start_aotc_shared);
  const unsigned long long section_end = reinterpret_cast<unsigned long long>(detail::__stop_aotc_shared);
  const unsigned long long dynamic = reinterpret_cast<unsigned long long>(detail::dynamic_shared);
  if (address >= section && address < section_end) {
    const unsigned long long offset = address - section;
    const bool inside = offset + size <= section_end - section && object_of_byte[offset] != kNobody &&
                        object_of_byte[offset] == object_of_byte[offset + size - 1];
    if (!inside) {
      if (AOTC_EMU_CHECKS & kMemory) shared_fault(kMemory, kOutOfBounds, kStaticShared, offset, size, write, kNobody);
      return;
    }
    if ((AOTC_EMU_CHECKS & kMemory) && aligned && (address & (size - 1)) != 0) {
      shared_fault(kMemory, kMisaligned, kStaticShared, offset, size, write, kNobody);
    }
    check_shared(static_shadow, kStaticShared, offset, size, write, atomic);
  } else if (address >= dynamic && address < dynamic + kMaxDynamicSharedBytes) {
    const unsigned long long offset = address - dynamic;
    if (offset + size > dynamic_bytes) {
      if (AOTC_EMU_CHECKS & kMemory) shared_fault(kMemory, kOutOfBounds, kDynamicShared, offset, size, write, kNobody);
      return;
    }
    if ((AOTC_EMU_CHECKS & kMemory) && aligned && (address & (size - 1)) != 0) {
      shared_fault(kMemory, kMisaligned, kDynamicShared, offset, size, write, kNobody);
    }
    check_shared(dynamic_shadow, kDynamicShared, offset, size, write, atomic);
  } else {
    check_global(address, size, write, aligned);
  }
}

}  // namespace aotc_emu::check

// ---- the hooks gcc's -fsanitize=thread instrumentation calls --------------------
#define AOTC_EMU_HOOK extern "C" __attribute__((visibility("hidden"), no_sanitize_thread, noinline))
#define AOTC_EMU_HERE (::aotc_emu::check::access_pc = __builtin_return_address(0))
AOTC_EMU_HOOK void __tsan_init() {}
AOTC_EMU_HOOK void __tsan_func_entry(void*) {}
AOTC_EMU_HOOK void __tsan_func_exit() {}
AOTC_EMU_HOOK void __tsan_vptr_update(void**, void*) {}
AOTC_EMU_HOOK void __tsan_vptr_read(void**) {}
AOTC_EMU_HOOK void __tsan_read_range(void* p, unsigned long n) { AOTC_EMU_HERE; ::aotc_emu::check::access(p, n, false, false); }
AOTC_EMU_HOOK void __tsan_write_range(void* p, unsigned long n) { AOTC_EMU_HERE; ::aotc_emu::check::access(p, n, true, false); }
#define AOTC_EMU_ACCESS_HOOKS(N)                                                                                  \
  AOTC_EMU_HOOK void __tsan_read##N(void* p) { AOTC_EMU_HERE; ::aotc_emu::check::access(p, N, false, true); }                   \
  AOTC_EMU_HOOK void __tsan_write##N(void* p) { AOTC_EMU_HERE; ::aotc_emu::check::access(p, N, true, true); }                   \
  AOTC_EMU_HOOK void __tsan_unaligned_read##N(void* p) { AOTC_EMU_HERE; ::aotc_emu::check::access(p, N, false, false); }        \
  AOTC_EMU_HOOK void __tsan_unaligned_write##N(void* p) { AOTC_EMU_HERE; ::aotc_emu::check::access(p, N, true, false); }        \
  AOTC_EMU_HOOK void __tsan_volatile_read##N(void* p) { AOTC_EMU_HERE; ::aotc_emu::check::access(p, N, false, true); }          \
  AOTC_EMU_HOOK void __tsan_volatile_write##N(void* p) { AOTC_EMU_HERE; ::aotc_emu::check::access(p, N, true, true); }
AOTC_EMU_ACCESS_HOOKS(1)
AOTC_EMU_ACCESS_HOOKS(2)
AOTC_EMU_ACCESS_HOOKS(4)
AOTC_EMU_ACCESS_HOOKS(8)
AOTC_EMU_ACCESS_HOOKS(16)
#undef AOTC_EMU_ACCESS_HOOKS

// Atomics: performed here (sequentially consistent, which is at least what was
// asked), and seen by the checks as accesses that never race with each other.
#define AOTC_EMU_ATOMIC_HOOKS(N, T)                                                                              \
  AOTC_EMU_HOOK T __tsan_atomic##N##_load(const volatile T* a, int) {                                            \
    AOTC_EMU_HERE;                                                                                               \
    ::aotc_emu::check::access(a, sizeof(T), false, true, true);                                                  \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                                 \
  }                                                                                                              \
  AOTC_EMU_HOOK void __tsan_atomic##N##_store(volatile T* a, T v, int) {                                         \
    AOTC_EMU_HERE;                                                                                               \
    ::aotc_emu::check::access(a, sizeof(T), true, true, true);                                                   \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                                    \
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
    ::aotc_emu::check::access(a, sizeof(T), true, true, true);                                                   \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                      \
  }                                                                                                              \
  AOTC_EMU_HOOK int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {               \
    AOTC_EMU_HERE;                                                                                               \
    ::aotc_emu::check::access(a, sizeof(T), true, true, true);                                                   \
    return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                       \
  }                                                                                                              \
  AOTC_EMU_HOOK T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                   \
    AOTC_EMU_HERE;                                                                                               \
    ::aotc_emu::check::access(a, sizeof(T), true, true, true);                                                   \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                            \
    return c;                                                                                                    \
  }
#define AOTC_EMU_ATOMIC_RMW(N, T, NAME, BUILTIN)                                                                 \
  AOTC_EMU_HOOK T __tsan_atomic##N##_##NAME(volatile T* a, T v, int) {                                           \
    AOTC_EMU_HERE;                                                                                               \
    ::aotc_emu::check::access(a, sizeof(T), true, true, true);                                                   \
    return BUILTIN(a, v, __ATOMIC_SEQ_CST);                                                                      \
  }
AOTC_EMU_ATOMIC_HOOKS(8, unsigned char)
AOTC_EMU_ATOMIC_HOOKS(16, unsigned short)
AOTC_EMU_ATOMIC_HOOKS(32, unsigned int)
AOTC_EMU_ATOMIC_HOOKS(64, unsigned long long)
#undef AOTC_EMU_ATOMIC_RMW
#undef AOTC_EMU_ATOMIC_HOOKS
AOTC_EMU_HOOK void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
AOTC_EMU_HOOK void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
#undef AOTC_EMU_HERE
#undef AOTC_EMU_HOOK

// The report of the calling thread's last launch, or null if it found nothing.
extern "C" __attribute__((visibility("default"))) const ::aotc_emu::check::Fault* aotc_emu_fault() {
  return ::aotc_emu::check::launch_faulted ? &::aotc_emu::check::launch_fault : nullptr;
}
