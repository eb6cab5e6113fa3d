"""A checked launch never performs a bad access (AOTC_EMULATOR_CHECK): a read
gets poison, a write is dropped, the first is the launch's KernelFaultError with
a count of the others, and the process lives on for the next call. Each case
runs in a fresh Python, with AddressSanitizer preloaded or not, since a wild
access that slipped through would take that process down."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from runtime_support import run_checked_script

KERNELS = Path(__file__).parent / "emulator_kernels"

SCRIPT = """
import ctypes, mmap
import numpy as np
from aotc.errors import KernelFaultError
from aotc.runtime.emulator.checks import poison, unpoison
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes

symbols = ["wild_gather", "write_then_read_past", "shared_write_then_read_past", "read_and_write", "copy_row_past",
           "misaligned_float4_copy", "misaligned_float2_store", "misaligned_double_read", "misaligned_int2_read",
           "misaligned_shared_float4", "misaligned_atomic", "vector_or_scalar_copy"]
library = load_library_bytes(compile_library_bytes({path!r}, symbols, source_name="bad_accesses.cu"))
p = lambda a: ctypes.c_void_p(a.ctypes.data)

def launch(symbol, threads, shared, *args):
    try:
        library.launch(symbol, 1, threads, shared, list(args))
        print("clean")
    except KernelFaultError as error:
        print(error)

def bits(value):
    return hex(np.float32(value).view(np.uint32))

def gather(n):  # y = x[idx] over n elements, on a 256-thread block
    x = np.arange(n, dtype=np.float32) * 0.5
    idx, y = np.arange(n, dtype=np.int32)[::-1].copy(), np.zeros(n, np.float32)
    launch("wild_gather", 256, 0, p(x), p(idx), p(y), ctypes.c_int(n))
    print("gathered", bool(np.array_equal(y, x[idx])))

def guarded(values, kept):  # `values` floats, then a guard band of `kept` floats AddressSanitizer marks off limits
    array = np.concatenate([np.asarray(values, np.float32), np.full(kept, 7.0, np.float32)])
    poison(array.ctypes.data + 4 * len(values), 4 * kept)
    return array

def aligned(values):  # a copy of `values` whose first element is 16-byte aligned
    spare = np.zeros(len(values) + 4, values.dtype)
    start = (-spare.ctypes.data % 16) // values.itemsize
    spare[start:start + len(values)] = values
    return spare[start:start + len(values)]

def released(array, n):  # the guard band after the launch: 7.0 unless a dropped write landed
    unpoison(array.ctypes.data + 4 * n, array.nbytes - 4 * n)
    return array[n:].tolist() == [7.0] * (len(array) - n)

for case in {cases!r}:
    if case == "wild gather":
        gather(15)
        gather(256)  # a later call, right
    elif case == "guard band":
        out = guarded(np.zeros(16), 16)
        launch("write_then_read_past", 32, 0, p(out), ctypes.c_int(16), ctypes.c_int(16), ctypes.c_float(2.0))
        print("read", bits(out[0]), "band kept", released(out, 16))
        rows, x = guarded(np.zeros(24), 24), np.arange(12, dtype=np.float32)
        launch("copy_row_past", 32, 0, p(x), p(rows), ctypes.c_int(2))
        print("band kept", released(rows, 24))
    elif case == "shared":
        out = np.zeros(1, np.float32)
        launch("shared_write_then_read_past", 32, 16, p(out), ctypes.c_int(4), ctypes.c_int(4), ctypes.c_float(5.0))
        print("read", bits(out[0]))
    elif case == "unmapped":
        region = mmap.mmap(-1, mmap.PAGESIZE)
        view = ctypes.c_char.from_buffer(region)
        address = ctypes.addressof(view)
        del view
        region.close()  # no memory is mapped at `address` now
        out = np.zeros(2, np.float32)
        launch("read_and_write", 32, 0, ctypes.c_void_p(address), p(out))
        print("read", bits(out[0]), "went on", out[1] == 1.0)
    elif case == "unmappable":  # no page can be mapped at a non-canonical address
        out = np.zeros(2, np.float32)
        launch("read_and_write", 32, 0, ctypes.c_void_p(1 << 63), p(out))
        print("stopped", out.tolist() == [0.0, 0.0])
    elif case == "misaligned":
        x = aligned(np.arange(64, dtype=np.float32))
        for symbol, shared in [("misaligned_float4_copy", 0), ("misaligned_float2_store", 0), ("misaligned_double_read", 0),
                               ("misaligned_int2_read", 0), ("misaligned_shared_float4", 144), ("misaligned_atomic", 0)]:
            out = aligned(np.zeros(72, np.float32))
            launch(symbol, 8, shared, p(x), p(out))
            print("untouched", not out.any())
    elif case == "vector or scalar":  # aligned, then one float past alignment
        x = aligned(np.arange(64, dtype=np.float32))
        for shift in (0, 1):
            out = aligned(np.zeros(40, np.float32))
            launch("vector_or_scalar_copy", 8, 0, p(x), ctypes.c_void_p(out.ctypes.data + 4 * shift), ctypes.c_int(30))
            print("copied", bool(np.array_equal(out[shift:shift + 30], x[:30])), bool(out[shift + 30] == x[2]))
    gather(256)  # the process lives on, and calls are right
"""

POISON = "0xffffffff"
WILD_GATHER = [
    "wild_gather: memory check: out of bounds: block (0, 0, 0) thread (15, 0, 0) reads 4 bytes at argument idx + 60 bytes "
    "(its allocation ends at idx + 60) (bad_accesses.cu:8); {others} more faults in this launch",
    "gathered False",
    "clean",
    "gathered True",
]
GUARD_BAND = [
    "write_then_read_past: memory check: out of bounds: block (0, 0, 0) thread (0, 0, 0) writes 4 bytes at argument out + 64 bytes "
    "(bytes AddressSanitizer marks off limits: a redzone, a guard band, or freed memory) (bad_accesses.cu:15); 1 more fault in this launch",
    f"read {POISON} band kept True",
    "copy_row_past: memory check: out of bounds: block (0, 0, 0) thread (0, 0, 0) writes 48 bytes at argument y + 96 bytes "
    "(bytes AddressSanitizer marks off limits: a redzone, a guard band, or freed memory) (bad_accesses.cu:44)",
    "band kept True",
]
SHARED = [
    "shared_write_then_read_past: memory check: out of bounds: block (0, 0, 0) thread (0, 0, 0) writes 4 bytes at dynamic shared "
    "memory + 16 bytes (of 16) (bad_accesses.cu:24); 1 more fault in this launch",
    f"read {POISON}",
]
UNMAPPED = [
    "read_and_write: memory check: out of bounds: block (0, 0, 0) thread (0, 0, 0) reads 4 bytes at argument p + 0 bytes "
    "(no memory is mapped there) (bad_accesses.cu:33); 1 more fault in this launch",
    f"read {POISON} went on True",
]
UNMAPPABLE = [
    "read_and_write: memory check: out of bounds: block (0, 0, 0) thread (0, 0, 0) reads 4 bytes at argument p + 0 bytes "
    "(no memory is mapped there) (bad_accesses.cu:33); its thread stopped there, since no memory can stand in for those bytes",
    "stopped True",
]
LATER = ["clean", "gathered True"]
STOPPED = "its thread stopped there, since no bytes can stand in for a misaligned access; 7 more faults in this launch"
MISALIGNED = [
    line
    for symbol, access, line in [
        ("misaligned_float4_copy", "reads 16 bytes at argument in + 4 bytes, whose address is 4 bytes past a multiple of 16", 51),
        ("misaligned_float2_store", "writes 8 bytes at argument out + 4 bytes, whose address is 4 bytes past a multiple of 8", 56),
        ("misaligned_double_read", "reads 8 bytes at argument in + 4 bytes, whose address is 4 bytes past a multiple of 8", 61),
        ("misaligned_int2_read", "reads 8 bytes at argument in + 4 bytes, whose address is 4 bytes past a multiple of 8", 64),
        (
            "misaligned_shared_float4",
            "writes 16 bytes at dynamic shared memory + 4 bytes (of 144), whose address is 4 bytes past a multiple of 16",
            71,
        ),
        ("misaligned_atomic", "writes 8 bytes at argument out + 4 bytes, whose address is 4 bytes past a multiple of 8", 78),
    ]
    for line in [
        f"{symbol}: memory check: misaligned address: block (0, 0, 0) thread (0, 0, 0) {access} (bad_accesses.cu:{line}); {STOPPED}",
        "untouched True",
    ]
]
VECTOR_OR_SCALAR = ["clean", "copied True True"] * 2


def run(cases: list[str], checks: str, *, asan: bool) -> list[str]:
    script = SCRIPT.format(path=str(KERNELS / "bad_accesses.cu"), cases=cases)
    return run_checked_script(script, checks, asan=asan)


@pytest.mark.parametrize("checks", ["all", "memory"])
def test_a_wild_gather_is_survived_and_the_next_call_is_right(checks: str) -> None:
    """Past n the gather reads idx's redzone (poison, so x[-1]: poison again),
    then writes past y (dropped): under AddressSanitizer the process used to
    abort on the dependent access, which went wherever idx's garbage pointed."""
    lines = run(["wild gather"], checks, asan=True)
    others = lines[0].rsplit("; ", 1)[1].split()[0]
    assert int(others) >= 240  # at least every other thread's read of idx past its end
    assert lines == [WILD_GATHER[0].format(others=others), *WILD_GATHER[1:], *LATER]


@pytest.mark.parametrize("checks", ["all", "memory"])
def test_a_bad_write_is_dropped_and_a_bad_read_gets_poison(checks: str) -> None:
    lines = run(["guard band", "shared"], checks, asan=True)
    assert lines == [*GUARD_BAND, *LATER, *SHARED, *LATER]


def test_memory_where_nothing_is_mapped_is_never_touched_under_address_sanitizer() -> None:
    assert run(["unmapped", "unmappable"], "all", asan=True) == [*UNMAPPED, *LATER, *UNMAPPABLE, *LATER]


@pytest.mark.skipif(os.name != "posix", reason="the unmapped page comes from mmap")
def test_memory_where_nothing_is_mapped_is_never_touched_without_address_sanitizer() -> None:
    """Without the memory check (it needs AddressSanitizer), every checked
    launch still keeps off memory the process has not mapped for the access."""
    assert run(["unmapped", "unmappable"], "race,init,sync", asan=False) == [*UNMAPPED, *LATER, *UNMAPPABLE, *LATER]


@pytest.mark.parametrize(("checks", "asan"), [("race,init,sync", False), ("all", True)])
def test_a_misaligned_vector_access_is_a_fault_that_never_happens(checks: str, asan: bool) -> None:
    """A GPU ends a kernel at a float4, float2, double or int2 access (or an
    8-byte atomic) one float past the alignment its type promises: the checks
    name it with any set, and its thread stops before the access, which the
    host could fault on (an aligned 16-byte move); nothing is written. The
    vector-or-scalar idiom, and one component read through a float4 pointer
    that is not aligned, run clean with the right values."""
    lines = run(["misaligned", "vector or scalar"], checks, asan=asan)
    assert lines == [*MISALIGNED, *LATER, *VECTOR_OR_SCALAR, *LATER]
