"""A device assert() that fails is the launch's KernelFaultError, as a GPU's
cudaErrorAssert is a launch error: one line naming the assertion, its line,
the block and the thread, in plain, checked and AddressSanitizer runs. The
C library's assert would abort the process, so each case runs in a fresh
Python."""

from __future__ import annotations

from pathlib import Path

import pytest
from runtime_support import run_checked_script

KERNELS = Path(__file__).parent / "emulator_kernels"

SCRIPT = """
import ctypes
import numpy as np
from aotc.errors import KernelFaultError
from aotc.runtime.emulator.compile import compile_library_bytes
from aotc.runtime.emulator.launch import load_library_bytes

source = {prefix!r}.encode() + open({path!r}, "rb").read()
library = load_library_bytes(compile_library_bytes(source, ["assert_not", "assert_then_sync"], source_name="asserts.cu"))
library.cdll.aotc_emu_configure({threading}, 0)
p = lambda a: ctypes.c_void_p(a.ctypes.data)
values = np.arange(64, dtype=np.int32)

def launch(symbol, grid, *args):
    out = np.zeros(64, np.int32)
    try:
        library.launch(symbol, grid, 32, 0, [p(values), *args, p(out)])
        print("clean", int(out.sum()))
    except KernelFaultError as error:
        print(type(error).__name__, error)

launch("assert_not", 2, ctypes.c_int(64))  # every assertion holds
launch("assert_not", 2, ctypes.c_int(5))   # thread 5 of block 0 fails; block 1 never starts
launch("assert_then_sync", 1)                # the others pass the barrier the failed thread left
launch("assert_not", 2, ctypes.c_int(64))  # the next launch is right
"""

BELOW = "assert_not: device-side assert triggered: block (0, 0, 0) thread (5, 0, 0): assertion `in[threadIdx.x] != value' failed"
THEN_SYNC = "assert_then_sync: device-side assert triggered: block (0, 0, 0) thread (7, 0, 0): assertion `in[threadIdx.x] != 7' failed"


def run(checks: str, *, threading: int = 0, asan: bool = False, prefix: str = "") -> list[str]:
    script = SCRIPT.format(path=str(KERNELS / "asserts.cu"), threading=threading, prefix=prefix)
    return run_checked_script(script, checks, asan=asan)


@pytest.mark.parametrize(
    ("checks", "threading", "asan"),
    [("", 0, False), ("", 1, False), ("race,init,sync", 0, False), ("all", 0, True)],
    ids=["fibers", "os-threads", "checked", "asan"],
)
def test_a_failed_assert_is_a_kernel_fault_and_the_process_lives_on(checks: str, threading: int, asan: bool) -> None:
    assert run(checks, threading=threading, asan=asan) == [
        "clean 32",
        f"KernelFaultError {BELOW} (asserts.cu:5, in void assert_not(const int*, int, int*))",
        f"KernelFaultError {THEN_SYNC} (asserts.cu:10, in void assert_then_sync(const int*, int*))",
        "clean 32",
    ]


def test_ndebug_still_removes_asserts() -> None:
    lines = run("", prefix="#define NDEBUG\n")
    assert lines == ["clean 32", "clean 32", "clean 32", "clean 32"]
