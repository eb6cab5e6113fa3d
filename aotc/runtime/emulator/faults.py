"""What a launch under ``AOTC_EMULATOR_CHECK`` found, as one line.

The checked library records the first violation of a launch in a C struct
(``Fault`` in ``aotc_emulator_check.h``); this reads it and names the kernel,
the check, the block and thread, and the array and offset, and where
addr2line can tell, the source line of the access.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
from typing import Any

from aotc.errors import ConfigurationError, KernelFaultError
from aotc.runtime.emulator.checks import ASAN_PRELOAD

__all__ = ["CHECK_STATUSES", "check_failure"]

KERNEL_FAULT = 11
NO_ADDRESS_SANITIZER = 12
CHECK_STATUSES = (KERNEL_FAULT, NO_ADDRESS_SANITIZER)
_CHECK_NAMES = {1: "race", 2: "memory", 4: "init", 8: "sync"}
_GLOBAL, _STATIC_SHARED, _DYNAMIC_SHARED = 0, 1, 2


class _Fault(ctypes.Structure):
    _fields_ = [
        ("check", ctypes.c_int),
        ("kind", ctypes.c_int),
        ("space", ctypes.c_int),
        ("is_write", ctypes.c_int),
        ("block", ctypes.c_uint * 3),
        ("thread", ctypes.c_uint * 3),
        ("other_thread", ctypes.c_uint * 3),
        ("line", ctypes.c_int),
        ("other_line", ctypes.c_int),
        ("size", ctypes.c_ulonglong),
        ("offset", ctypes.c_longlong),
        ("extent", ctypes.c_longlong),
        ("pc", ctypes.c_ulonglong),
        ("array", ctypes.c_char * 128),
        ("file", ctypes.c_char * 128),
    ]


def _dims(values: Any) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _place(fault: _Fault) -> str:
    """Where the access went: an array and a byte offset, and how far that is from its end."""
    array = _text(fault.array)
    if fault.space == _GLOBAL:
        if not array:
            return f"address {fault.offset:#x}"
        where = f"argument {array} + {fault.offset} bytes"
        if fault.kind == 5 and 0 < fault.extent <= fault.offset:
            where += f" (its allocation ends at {array} + {fault.extent})"
        elif fault.kind == 5:
            where += " (bytes AddressSanitizer marks off limits: a guard band, or freed memory)"
        return where
    kind = "shared" if fault.space == _STATIC_SHARED else "dynamic shared memory"
    name = f"{kind} {array}" if fault.space == _STATIC_SHARED else kind
    return f"{name} + {fault.offset} bytes (of {fault.extent})"


def _describe(fault: _Fault) -> str:
    block, thread, other = _dims(fault.block), _dims(fault.thread), _dims(fault.other_thread)
    access = "writes" if fault.is_write else "reads"
    who = f"block {block} thread {thread}"
    if fault.kind in (1, 2, 3):
        kind = {1: "read after write", 2: "write after read", 3: "write after write"}[fault.kind]
        verb = {1: "wrote", 2: "read", 3: "wrote"}[fault.kind]
        return f"{kind}: {who} {access} {_place(fault)}, which thread {other} {verb} since the last __syncthreads"
    if fault.kind == 4:
        return f"uninitialized read: {who} reads {_place(fault)}, which no thread of the block has written"
    if fault.kind in (5, 6):
        problem = "out of bounds" if fault.kind == 5 else f"misaligned for a {fault.size}-byte access"
        return f"{problem}: {who} {access} {fault.size} bytes at {_place(fault)}"
    if fault.kind == 7:
        file = _text(fault.file)
        return (
            f"divergent barrier: in block {block}, thread {thread} waits at the __syncthreads of {file}:{fault.line} "
            f"while thread {other} waits at {file}:{fault.other_line}"
        )
    return f"kind {fault.kind}: {who}"


def _source_line(library_path: str, pc: int) -> str:
    """``file:line`` of the instruction before return address ``pc`` in the
    library's file, from its debug information; "" when that cannot be read."""
    tool = shutil.which("addr2line")
    if not pc or tool is None:
        return ""
    # A library loaded from memory is /proc/self/fd/N, which names another file in addr2line.
    path = library_path.replace("/proc/self/", f"/proc/{os.getpid()}/", 1)
    try:
        result = subprocess.run([tool, "-e", path, f"{pc - 1:#x}"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = result.stdout.strip().splitlines()
    # The build's folder is ".", which addr2line may write more than once.
    where = re.sub(r"^(?:\./)+| \(discriminator \d+\)$", "", lines[0]) if lines else ""
    return "" if not where or where.startswith("??") or where.endswith(":?") else where


def check_failure(kernel: Any, status: int) -> Exception:
    """The error for a launch of ``kernel`` (an EmulatorKernel) that returned ``status``."""
    if status == NO_ADDRESS_SANITIZER:
        msg = (
            f"launching {kernel.symbol}: AOTC_EMULATOR_CHECK=memory needs AddressSanitizer first in the process: "
            f"start Python with {ASAN_PRELOAD}"
        )
        return ConfigurationError(msg)
    read = kernel.library.cdll.aotc_emu_fault
    read.restype = ctypes.POINTER(_Fault)
    pointer = read()
    if not pointer:
        return KernelFaultError(f"{kernel.symbol}: a check failed but left no report")
    fault = pointer.contents
    check = _CHECK_NAMES.get(fault.check, str(fault.check))
    where = _source_line(kernel.library.path, fault.pc)
    return KernelFaultError(f"{kernel.symbol}: {check} check: {_describe(fault)}{f' ({where})' if where else ''}")
