"""The emulator's compute-sanitizer (AOTC_EMULATOR_CHECK): the check set, its
place in the cache key, clean kernels passing, and the violations a small
kernel can show without a template (the planted template bugs are in
test_emulator_planted_bugs.py)."""

from __future__ import annotations

import ctypes
import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import aotc_env, first_fault

from aotc.errors import ConfigurationError, KernelFaultError
from aotc.runtime.cache import DiskCache
from aotc.runtime.emulator.backend import EmulatorBackend
from aotc.runtime.emulator.checks import (
    ASAN_PRELOAD,
    CHECKS,
    asan_environment,
    asan_loaded,
    check_mask,
    requested_checks,
)
from aotc.runtime.emulator.compile import compile_library_bytes, toolchain
from aotc.runtime.emulator.launch import EmulatorLibrary, load_library_bytes

KERNELS = Path(__file__).parent / "emulator_kernels"


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def checked(name: str, symbols: tuple[str, ...], checks: tuple[str, ...], source: str | None = None) -> EmulatorLibrary:
    text = source if source is not None else (KERNELS / name).read_text()
    payload = compile_library_bytes(text.encode(), symbols, source_name=name)
    return load_library_bytes(payload)


@pytest.fixture
def race_init_sync(monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "race,init,sync")
    return ("race", "init", "sync")


# ---- the check set ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "checks"),
    [("", ()), ("all", CHECKS), ("sync, race", ("race", "sync")), ("memory", ("memory",)), ("init,init", ("init",))],
)
def test_check_names(text: str, checks: tuple[str, ...]) -> None:
    assert requested_checks(text) == checks


@pytest.mark.parametrize("text", ["races", "all,race", "race;sync"])
def test_unknown_check_names_are_one_line_errors(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"^AOTC_EMULATOR_CHECK must be 'all' or a comma-separated subset of race, memory, init, sync, got ") as caught:
        requested_checks(text)
    assert "\n" not in str(caught.value)


def test_check_mask_follows_the_header_bits() -> None:
    header = (Path(__file__).resolve().parents[2] / "aotc/runtime/emulator/aotc_emulator_check.h").read_text()
    bits = dict(re.findall(r"k(Race|Memory|Init|Sync) = (\d+)", header))
    assert {c: check_mask((c,)) for c in CHECKS} == {c: int(bits[c.capitalize()]) for c in CHECKS}


def test_checked_builds_are_cached_apart(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    backend = EmulatorBackend(cache=DiskCache(tmp_path))
    source, symbols = b'extern "C" __global__ void k() {}', ("k",)
    monkeypatch.delenv("AOTC_EMULATOR_CHECK", raising=False)
    plain = backend.cache_key(source, symbols)
    keys = {}
    for text in ("race", "race,init", "init,race", "all", "race,memory,init,sync"):
        monkeypatch.setenv("AOTC_EMULATOR_CHECK", text)
        keys[text] = backend.cache_key(source, symbols)
    assert plain not in keys.values()
    assert keys["race"] != keys["race,init"] == keys["init,race"]
    assert keys["all"] == keys["race,memory,init,sync"] != keys["race,init"]
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "")
    assert backend.cache_key(source, symbols) == plain
    assert "-fsanitize=thread" in toolchain(("race",)).flags and "-fsanitize=thread" not in toolchain(()).flags


# ---- clean kernels pass, broken ones fail ---------------------------------------------------


def test_clean_kernels_pass(race_init_sync: tuple[str, ...]) -> None:
    # A tiled GEMM, shared atomics with a counting barrier, threads leaving early.
    gemm = checked("tiled_matmul.cu", ("tiled_matmul",), race_init_sync)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((40, 96)).astype(np.float32), rng.standard_normal((96, 36)).astype(np.float32)
    c = np.full((40, 36), np.nan, np.float32)
    args = [ptr(a), ptr(b), ptr(c), ctypes.c_int(40), ctypes.c_int(36), ctypes.c_int(96)]
    gemm.launch("tiled_matmul", (3, 3), (16, 16), 0, [*args, ctypes.c_longlong(96), ctypes.c_longlong(36), ctypes.c_longlong(36)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)

    tally = checked("atomics.cu", ("block_tally",), race_init_sync)
    flags = (np.random.default_rng(5).random(3 * 64) < 0.3).astype(np.int32)
    hits, counts = np.full(3, -1, np.int32), np.full(3, -1, np.int32)
    tally.launch("block_tally", 3, 64, 0, [ptr(flags), ptr(hits), ptr(counts)])
    np.testing.assert_array_equal(hits, flags.reshape(3, 64).sum(axis=1))

    early = checked("indexing.cu", ("early_exit_sum",), race_init_sync)
    values, out = np.arange(300, dtype=np.int32), np.zeros(3, np.int32)
    early.launch("early_exit_sum", 3, 128, 0, [ptr(values), ptr(out), ctypes.c_int(300)])
    np.testing.assert_array_equal(out, [values[i : i + 128].sum() for i in range(0, 300, 128)])


def test_a_read_of_unwritten_shared_memory_is_named(race_init_sync: tuple[str, ...]) -> None:
    library = checked("checked.cu", ("read_static_unwritten",), race_init_sync)
    out = np.zeros(64, np.uint32)
    with pytest.raises(KernelFaultError) as caught:
        library.launch("read_static_unwritten", 1, 32, 0, [ptr(out)])
    assert first_fault(caught.value) == (
        "read_static_unwritten: init check: uninitialized read: block (0, 0, 0) thread (0, 0, 0) reads "
        "shared read_static_unwritten::own + 0 bytes (of 128), which no thread of the block has written (checked.cu:15)"
    )


def test_a_missing_barrier_is_a_race(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "race")
    source = (KERNELS / "tiled_matmul.cu").read_text().replace("__syncthreads();  // barrier: tile consumed", "")
    library = checked("tiled_matmul.cu", ("tiled_matmul",), ("race",), source)
    a, b, c = np.ones((16, 32), np.float32), np.ones((32, 16), np.float32), np.zeros((16, 16), np.float32)
    args = [ptr(a), ptr(b), ptr(c), ctypes.c_int(16), ctypes.c_int(16), ctypes.c_int(32)]
    # Thread 0 stores the next tile over the one thread 1 has yet to read.
    expected = (
        r"^tiled_matmul: race check: read after write: block \(0, 0, 0\) thread \(1, 0, 0\) reads shared "
        r"tiled_matmul::As \+ 0 bytes \(of 1024\), which thread \(0, 0, 0\) wrote since the last __syncthreads "
        r"\(warp 0, lanes 1 and 0: lanes of a warp are not in lockstep, and no __syncwarp orders them\) "
        r"\(tiled_matmul\.cu:27\); \d+ more faults in this launch$"
    )
    with pytest.raises(KernelFaultError, match=expected):
        library.launch("tiled_matmul", 1, (16, 16), 0, [*args, ctypes.c_longlong(32), ctypes.c_longlong(16), ctypes.c_longlong(16)])


def test_a_race_on_a_function_templates_shared_array_names_it(race_init_sync: tuple[str, ...]) -> None:
    """Such an object lies outside section aotc_shared, among the library's
    own data, and its report named the nearest argument below it, gigabytes
    past that argument's end."""
    library = checked("checked.cu", ("template_shared_race",), race_init_sync)
    values, out = np.ones(128, np.float32), np.zeros(4, np.float32)
    with pytest.raises(KernelFaultError) as caught:
        library.launch("template_shared_race", 1, 128, 0, [ptr(values), ptr(out)])
    assert first_fault(caught.value) == (
        "template_shared_race: race check: write after read: block (0, 0, 0) thread (32, 0, 0) writes shared "
        "block_sum_without_barrier<4>(float)::partial + 4 bytes (of 16), which thread (1, 0, 0) read since the last "
        "__syncthreads (checked.cu:49)"
    )


@pytest.mark.skipif(asan_loaded(), reason="this process has AddressSanitizer; the refusal shows only without it")
def test_the_memory_check_needs_address_sanitizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "memory")
    library = checked("checked.cu", ("global_overrun",), ("memory",))
    out = np.zeros(8, np.float32)
    with pytest.raises(ConfigurationError, match=r"^launching global_overrun: AOTC_EMULATOR_CHECK=memory needs AddressSanitizer first in the process: start Python with LD_PRELOAD="):
        library.launch("global_overrun", 1, 8, 0, [ptr(out), ctypes.c_int(8)])


# ---- the memory check, in a Python with libasan loaded first --------------------------------

MEMORY_SCRIPT = """
import ctypes, numpy as np
from aotc.errors import KernelFaultError
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes
symbols = ["read_static_unwritten", "misaligned_vector", "dynamic_overrun", "global_overrun"]
library = load_library_bytes(compile_library_bytes({path!r}, symbols, source_name="checked.cu"))
p = lambda a: ctypes.c_void_p(a.ctypes.data)
inputs, out = np.zeros(64 + 4, np.float32), np.zeros(16, np.float32)
launches = [
    ("misaligned_vector", 4, 0, [p(inputs), p(out)]),
    ("dynamic_overrun", 8, 32, [p(out), ctypes.c_int(8)]),
    ("global_overrun", 16, 0, [p(out), ctypes.c_int(16)]),
    ("global_overrun", 16, 0, [p(out), ctypes.c_int(15)]),
]
for symbol, threads, shared, args in launches:
    try:
        library.launch(symbol, 1, threads, shared, args)
        print("clean")
    except KernelFaultError as error:
        print(error)
"""


def test_memory_check_under_address_sanitizer() -> None:
    script = MEMORY_SCRIPT.format(path=str(KERNELS / "checked.cu"))
    env = aotc_env({**asan_environment(), "AOTC_EMULATOR_CHECK": "memory"})
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [first_fault(line) for line in result.stdout.splitlines()] == [
        "misaligned_vector: memory check: misaligned address: block (0, 0, 0) thread (0, 0, 0) reads 16 bytes at argument in + 4 bytes, "
        "whose address is 4 bytes past a multiple of 16 (checked.cu:24); its thread stopped there, since no bytes can stand in for a "
        "misaligned access",
        "dynamic_overrun: memory check: out of bounds: block (0, 0, 0) thread (0, 0, 0) writes 4 bytes at dynamic shared memory + 32 bytes (of 32) (checked.cu:31)",
        "global_overrun: memory check: out of bounds: block (0, 0, 0) thread (15, 0, 0) writes 4 bytes at argument out + 64 bytes (its allocation ends at out + 64) (checked.cu:38)",
        "clean",
    ]


# A C++ exception thrown and caught inside an extension (PyTorch's own error
# for a bad view), then whether libasan is in the process.
THROWING_EXTENSION = """
import torch
try:
    torch.ones(3).view(5)
except RuntimeError:
    print("caught")
from aotc.runtime.emulator.checks import asan_loaded
print(asan_loaded())
"""


@pytest.mark.parametrize("how", ["asan_environment", "the shell line"])
def test_a_process_under_address_sanitizer_survives_a_cpp_exception(how: str) -> None:
    """With libasan alone first, the first C++ throw aborts on ASan's CHECK (it
    found no __cxa_throw to wrap): libstdc++ is preloaded right after it."""
    pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")
    if how == "asan_environment":
        command, env = [sys.executable, "-c", THROWING_EXTENSION], aotc_env(asan_environment())
    else:  # ASAN_PRELOAD, as the README and the memory check's refusal give it
        command, env = ["bash", "-c", f'{ASAN_PRELOAD} exec "$0" -c "$1"', sys.executable, THROWING_EXTENSION], aotc_env()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["caught", "True"]


# ---- plain accesses racing with atomics, on shared and on global memory ----------------------


def run_atomic_races(symbol: str, planted: int) -> np.ndarray:
    library = checked("atomic_races.cu", ("shared_histogram", "global_totals", "cas_add"), ("race",))
    values = np.random.default_rng(2).integers(0, 1000, 256).astype(np.int32)
    if symbol == "shared_histogram":
        counts = np.zeros(16, np.int32)
        library.launch(symbol, 2, 64, 0, [ptr(values), ctypes.c_int(256), ptr(counts), ctypes.c_int(planted)])
        np.testing.assert_array_equal(counts, np.bincount(values % 16, minlength=16))
        return counts
    totals, copies = np.full(4, -1, np.int32), np.full(4, -1, np.int32)
    library.launch(symbol, 4, 64, 0, [ptr(values), ptr(totals), ptr(copies), ctypes.c_int(planted)])
    np.testing.assert_array_equal(copies, values.reshape(4, 64).sum(axis=1))
    return copies


# ---- plain writes of one value by many threads ------------------------------------------------

FLAGS = ("shared_flag", "global_flag", "different_values", "same_then_different", "different_last_stores")


def test_a_flag_many_threads_set_to_one_value_is_clean(race_init_sync: tuple[str, ...]) -> None:
    # Right on every GPU, whichever store lands last: shared, and global (BFS's "changed").
    library = checked("flags.cu", FLAGS, race_init_sync)
    values = np.zeros(96, np.int32)
    values[[3, 40, 70, 71]] = 9  # lanes of three warps, two of one warp
    out, changed = np.full(96, -1, np.int32), np.zeros(1, np.int32)
    library.launch("shared_flag", 1, 96, 0, [ptr(values), ptr(out)])
    library.launch("global_flag", 1, 96, 0, [ptr(values), ptr(changed)])
    np.testing.assert_array_equal(out, np.ones(96, np.int32))
    assert changed[0] == 1


# same_then_different: warp 1's 1 over warp 0's passes, warp 2's 2 over warp 1's is the race.
# different_last_stores: each store is its thread's last access, judged when the thread returns.
DIFFERENT_VALUES = {
    "different_values": (
        "thread (32, 0, 0) writes shared different_values::last + 0 bytes (of 4), which thread (0, 0, 0) wrote "
        "since the last __syncthreads (flags.cu:23)"
    ),
    "same_then_different": (
        "thread (64, 0, 0) writes shared same_then_different::flag + 0 bytes (of 4), which thread (32, 0, 0) wrote "
        "since the last __syncthreads (flags.cu:31)"
    ),
    "different_last_stores": (
        "thread (32, 0, 0) writes argument out + 0 bytes, which thread (0, 0, 0) wrote since the last __syncthreads "
        "(flags.cu:38)"
    ),
}


@pytest.mark.parametrize("symbol", sorted(DIFFERENT_VALUES))
def test_plain_writes_of_different_values_are_named(race_init_sync: tuple[str, ...], symbol: str) -> None:
    library = checked("flags.cu", FLAGS, race_init_sync)
    out = np.zeros(96, np.int32)
    with pytest.raises(KernelFaultError) as caught:
        library.launch(symbol, 1, 96, 0, [ptr(out)])
    expected = f"{symbol}: race check: write after write: block (0, 0, 0) {DIFFERENT_VALUES[symbol]}"
    assert first_fault(caught.value) == expected


# ---- volatile stores of one value, by lanes of one warp -----------------------------------------

VOLATILE_FLAGS = ("volatile_flag", "warp_found_flags", "mixed_flag", "volatile_different_values", "plain_over_volatile", "plain_over_atomic")


def test_a_flag_lanes_of_one_warp_set_through_volatile_to_one_value_is_clean(race_init_sync: tuple[str, ...]) -> None:
    """A volatile store races with a lane of its own warp that no __syncwarp
    orders it after (the lockstep reduction of old, test_emulator_warps.py);
    where every racing store leaves the same bytes, whichever lands last, it
    is right on every GPU: through volatile alone, a warp's own flag between
    __syncwarps, and plain and volatile stores mixed."""
    library = checked("flags.cu", VOLATILE_FLAGS, race_init_sync)
    values = np.zeros(96, np.int32)
    values[[3, 4, 9, 40, 70, 71]] = 9  # three lanes of warp 0, one of warp 1, two of warp 2
    out, changed = np.full(96, -1, np.int32), np.zeros(1, np.int32)
    library.launch("volatile_flag", 1, 96, 0, [ptr(values), ptr(out), ptr(changed)])
    np.testing.assert_array_equal(out, np.ones(96, np.int32))
    assert changed[0] == 1
    library.launch("warp_found_flags", 1, 96, 0, [ptr(values), ptr(out)])
    np.testing.assert_array_equal(out, np.ones(96, np.int32))
    values[40] = 0  # warp 1 finds nothing
    library.launch("warp_found_flags", 1, 96, 0, [ptr(values), ptr(out)])
    np.testing.assert_array_equal(out, np.repeat([1, 0, 1], 32).astype(np.int32))
    library.launch("mixed_flag", 1, 96, 0, [ptr(values), ptr(out)])
    np.testing.assert_array_equal(out, np.ones(96, np.int32))


# plain_over_atomic: a plain store of the value an atomic left is still a race (docs/design.md, "The
# race check's model of atomics"): a GPU may land the store first, and the atomic then returns 1, not 0.
VOLATILE_RACES = {
    "volatile_different_values": (
        "thread (8, 0, 0) writes shared volatile_different_values::last + 0 bytes (of 4), which thread (0, 0, 0) "
        "wrote since the last __syncthreads (warp 0, lanes 8 and 0: lanes of a warp are not in lockstep, and no "
        "__syncwarp orders them) (flags.cu:91)"
    ),
    "plain_over_volatile": (
        "thread (32, 0, 0) writes shared plain_over_volatile::flag + 0 bytes (of 4), which thread (0, 0, 0) wrote "
        "since the last __syncthreads (flags.cu:100)"
    ),
    "plain_over_atomic": (
        "thread (32, 0, 0) writes shared plain_over_atomic::flag + 0 bytes (of 4), which thread (0, 0, 0) updated "
        "atomically since the last __syncthreads (flags.cu:113)"
    ),
}


@pytest.mark.parametrize("symbol", sorted(VOLATILE_RACES))
def test_stores_beside_volatile_and_atomic_ones_that_change_the_value_are_named(
    race_init_sync: tuple[str, ...], symbol: str
) -> None:
    library = checked("flags.cu", VOLATILE_FLAGS, race_init_sync)
    out = np.zeros(97, np.int32)
    with pytest.raises(KernelFaultError) as caught:
        library.launch(symbol, 1, 96, 0, [ptr(out)])
    expected = f"{symbol}: race check: write after write: block (0, 0, 0) {VOLATILE_RACES[symbol]}"
    assert first_fault(caught.value) == expected


@pytest.mark.parametrize("symbol", ["shared_histogram", "global_totals"])
def test_atomics_with_their_barriers_are_clean(monkeypatch: pytest.MonkeyPatch, symbol: str) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "race")
    run_atomic_races(symbol, planted=0)


# Thread 0 reads what the other threads still add to: bin 0 to flush it, its
# block's total to copy it. Lanes of one warp, so __syncwarp would order them too.
IN_ONE_WARP = "lanes of a warp are not in lockstep, and no __syncwarp orders them"
ATOMIC_RACES = {
    "shared_histogram": (
        "shared_histogram: race check: write after read: block (0, 0, 0) thread (3, 0, 0) atomically updates shared "
        "shared_histogram::bins + 0 bytes (of 64), which thread (0, 0, 0) read since the last __syncthreads "
        f"(warp 0, lanes 3 and 0: {IN_ONE_WARP}) (atomic_races.cu:10)"
    ),
    "global_totals": (
        "global_totals: race check: write after read: block (0, 0, 0) thread (1, 0, 0) atomically updates argument "
        "totals + 0 bytes, which thread (0, 0, 0) read since the last __syncthreads "
        f"(warp 0, lanes 1 and 0: {IN_ONE_WARP}) (atomic_races.cu:20)"
    ),
}


@pytest.mark.parametrize("symbol", ["shared_histogram", "global_totals"])
def test_a_plain_access_racing_with_atomics_is_named(monkeypatch: pytest.MonkeyPatch, symbol: str) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "race")
    with pytest.raises(KernelFaultError) as caught:
        run_atomic_races(symbol, planted=1)
    assert first_fault(caught.value) == ATOMIC_RACES[symbol]


def test_the_guess_of_a_cas_loop_is_not_a_race(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "race")
    library = checked("atomic_races.cu", ("shared_histogram", "global_totals", "cas_add"), ("race",))
    total, values = np.zeros(1, np.float64), np.arange(64, dtype=np.float64)
    library.launch("cas_add", 1, 64, 0, [ptr(total), ptr(values)])
    assert total[0] == values.sum()


# ---- plain reads against compare-and-swaps: notes, never faults ------------------------------

EXTREMA_SCRIPT = """
import ctypes, logging
import numpy as np
from aotc.errors import KernelFaultError
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
symbols = ["float_extrema", "shared_histogram"]
library = load_library_bytes(compile_library_bytes({path!r}, symbols, source_name="atomic_races.cu"))
p = lambda a: ctypes.c_void_p(a.ctypes.data)
values = np.random.default_rng(3).standard_normal(100_000).astype(np.float32)
for through_shared in (0, 1):
    extrema = np.array([-np.inf, np.inf], np.float32)
    library.launch("float_extrema", 391, 256, 0, [p(values), ctypes.c_int(100_000), p(extrema), ctypes.c_int(through_shared)])
    print("extrema right", extrema.tolist() == [values.max(), values.min()])
numbers, counts = np.random.default_rng(2).integers(0, 1000, 256).astype(np.int32), np.zeros(16, np.int32)
try:
    library.launch("shared_histogram", 2, 64, 0, [p(numbers), ctypes.c_int(256), p(counts), ctypes.c_int(1)])
except KernelFaultError as error:
    print(error)
"""


def test_the_early_exit_float_atomic_max_passes_every_check() -> None:
    """The float atomicMax and atomicMin many kernels write (a plain first read,
    an early exit if the value is not larger, else a CAS loop) over 100,000
    values, straight into global memory and through shared memory: right on
    every GPU, so under AOTC_EMULATOR_CHECK=all the launches succeed with the
    right result, and the race check's finding is a note on the log. The
    histogram flushed without its barrier is still a fault."""
    script = EXTREMA_SCRIPT.format(path=str(KERNELS / "atomic_races.cu"))
    env = aotc_env({**asan_environment(), "AOTC_EMULATOR_CHECK": "all"})
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[:2] == ["extrema right True"] * 2
    assert first_fault(result.stdout.splitlines()[2]) == ATOMIC_RACES["shared_histogram"]
    notes = [line for line in result.stderr.splitlines() if line.startswith("aotc.runtime.emulator INFO float_extrema: race check note: ")]
    assert len(notes) == 2, result.stderr[-3000:]
    assert re.fullmatch(
        r"aotc\.runtime\.emulator INFO float_extrema: race check note: block \(0, 0, 0\) thread \(\d+, 0, 0\) "
        r"compare-and-swaps argument extrema \+ 0 bytes, which thread \(\d+, 0, 0\) read since the last __syncthreads: "
        r"right if that read only decides whether to update \(the early exit of a float atomicMax\), a race if it "
        r"takes the word as a result \(atomic_races\.cu:\d+\); \d+ more such reads in this launch",
        notes[0],
    ), notes[0]
    assert "compare-and-swaps shared float_extrema::block_extrema + 0 bytes (of 8), which thread" in notes[1]


def test_a_read_back_of_a_compare_and_swap_sum_is_a_note(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The check cannot tell a flush from an early exit where every update is a
    compare-and-swap (here the CUDA guide's double atomicAdd, with thread 0
    reading the total back before the barrier): that read is a note, which
    names the word, the reader and the compare-and-swap that followed it."""
    monkeypatch.setenv("AOTC_EMULATOR_CHECK", "race")
    source = (KERNELS / "atomic_races.cu").read_text() + (
        'extern "C" __global__ void cas_total(double* total, const double* values, double* copy) {\n'
        "  cas_add(total, values);\n"
        "  if (threadIdx.x == 0) *copy = *total;\n"
        "}\n"
    )
    source = source.replace('extern "C" __global__ void cas_add(', "__device__ void cas_add(")
    library = checked("atomic_races.cu", ("cas_total",), ("race",), source)
    total, values, copy = np.zeros(1), np.arange(64, dtype=np.float64), np.zeros(1)
    with caplog.at_level(logging.INFO, logger="aotc.runtime.emulator"):
        library.launch("cas_total", 1, 64, 0, [ptr(total), ptr(values), ptr(copy)])
    assert total[0] == values.sum()
    [note] = [record.getMessage() for record in caplog.records]
    assert re.fullmatch(
        r"cas_total: race check note: block \(0, 0, 0\) thread \(1, 0, 0\) compare-and-swaps argument total \+ 0 bytes, "
        r"which thread \(0, 0, 0\) read since the last __syncthreads: right if that read only decides whether to update "
        r"\(the early exit of a float atomicMax\), a race if it takes the word as a result \(atomic_races\.cu:\d+\); "
        r"\d+ more such reads in this launch",
        note,
    ), note
