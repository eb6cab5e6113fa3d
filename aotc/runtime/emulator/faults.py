"""What a launch under ``AOTC_EMULATOR_CHECK`` found, or a failed device
``assert()`` in any launch, as one line.

The checked library records the first violation of a launch in a C struct
(``Fault`` in ``aotc_emulator_check.h``); this reads it and names the kernel,
the check, the block and thread (and for warp-level faults the warp and the
lane), the array and offset, and the source line: a warp collective's call
site, or where addr2line can tell, the line of the access.
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

__all__ = ["CHECK_STATUSES", "check_failure", "log_note"]

KERNEL_FAULT = 11
NO_ADDRESS_SANITIZER = 12
DEVICE_ASSERT = 15  # a device assert() failed, checked or not
CHECK_STATUSES = (KERNEL_FAULT, NO_ADDRESS_SANITIZER, DEVICE_ASSERT)
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
        ("warp", ctypes.c_uint),
        ("lane", ctypes.c_uint),
        ("other_lane", ctypes.c_uint),
        ("mask", ctypes.c_uint),
        ("other_mask", ctypes.c_uint),
        ("same_warp", ctypes.c_int),
        ("atomic", ctypes.c_int),
        ("other_atomic", ctypes.c_int),
        ("reason", ctypes.c_int),
        ("operation", ctypes.c_char * 32),
        ("other_operation", ctypes.c_char * 32),
        ("other_file", ctypes.c_char * 128),
        ("others", ctypes.c_ulonglong),
        ("stopped", ctypes.c_int),
    ]


_SHIM_FOLDER = os.path.dirname(os.path.abspath(__file__)) + os.sep
_UNKNOWN_THREAD = 0xFFFFFFFF  # other_thread[0] when the other side is one of several threads
# Why global bytes are off limits (Fault::reason of an out-of-bounds access; aotc_emulator_bounds.h).
_OFF_LIMITS = {
    0: "bytes AddressSanitizer marks off limits: a redzone, a guard band, or freed memory",
    1: "inside no allocation the launch was given or found a pointer to",
    2: "no memory is mapped there",
    3: "memory the process may not {access}",
}
_SOURCE_REASONS = {
    0: "does not take part (the mask leaves it out, or it waits at another collective)",
    1: "has returned",
}


def _dims(values: Any) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _place(fault: _Fault) -> str:
    """Where the access went: an array and a byte offset, and how far that is from its end."""
    array = _text(fault.array)
    if fault.space == _GLOBAL:
        if not array:
            return f"address {fault.offset:#x}" + (f" ({_off_limits(fault)})" if fault.kind == 5 else "")
        where = f"argument {array} + {fault.offset} bytes"
        if fault.kind == 5 and 0 < fault.extent <= fault.offset:
            where += f" (its allocation ends at {array} + {fault.extent})"
        elif fault.kind == 5:
            where += f" ({_off_limits(fault)})"
        return where
    kind = "shared" if fault.space == _STATIC_SHARED else "dynamic shared memory"
    name = f"{kind} {array}" if fault.space == _STATIC_SHARED else kind
    return f"{name} + {fault.offset} bytes (of {fault.extent})"


def _off_limits(fault: _Fault) -> str:
    return _OFF_LIMITS.get(fault.reason, _OFF_LIMITS[0]).format(access="write" if fault.is_write else "read")


def _race(fault: _Fault, block: str, thread: str, other: str) -> str:
    kind = {1: "read after write", 2: "write after read", 3: "write after write"}[fault.kind]
    access = "atomically updates" if fault.atomic else "writes" if fault.is_write else "reads"
    verb = "updated atomically" if fault.other_atomic else {1: "wrote", 2: "read", 3: "wrote"}[fault.kind]
    unknown = fault.other_thread[0] == _UNKNOWN_THREAD
    whom = "other threads" if unknown else f"thread {other}"
    text = f"{kind}: block {block} thread {thread} {access} {_place(fault)}, which {whom} {verb} since the last __syncthreads"
    if fault.same_warp:  # lanes of one warp: a __syncwarp would have ordered them too
        lanes = f"lane {fault.lane} and others" if unknown else f"lanes {fault.lane} and {fault.other_lane}"
        text += f" (warp {fault.warp}, {lanes}: lanes of a warp are not in lockstep, and no __syncwarp orders them)"
    return text


def _warp(fault: _Fault, block: str, thread: str, other: str) -> str:
    """A warp collective that broke CUDA's rules (the sync check)."""
    operation, where = _text(fault.operation), f"{_text(fault.file)}:{fault.line}"
    lane = f"in block {block} warp {fault.warp}, lane {fault.lane} (thread {thread})"
    call = f"{operation} with mask {fault.mask:#010x}"
    if fault.kind == 8:
        elsewhere = _text(fault.other_operation)
        if not fault.reason:
            elsewhere += f" with mask {fault.other_mask:#010x}"
        return (
            f"divergent warp: {lane} waits at {call} ({where}), which names lane {fault.other_lane} (thread {other}), "
            f"but that lane waits at {elsewhere} ({_text(fault.other_file)}:{fault.other_line})"
        )
    if fault.kind == 9:
        return f"lane not in mask: {lane} calls {call}, which does not name lane {fault.lane} ({where})"
    why = _SOURCE_REASONS.get(fault.reason, "does not take part")
    return f"inactive source lane: {lane} reads lane {fault.other_lane} in {call}, but that lane {why} ({where})"


def _describe(fault: _Fault) -> str:
    block, thread, other = _dims(fault.block), _dims(fault.thread), _dims(fault.other_thread)
    access = "writes" if fault.is_write else "reads"
    who = f"block {block} thread {thread}"
    if fault.kind in (1, 2, 3):
        return _race(fault, block, thread, other)
    if fault.kind in (8, 9, 10):
        return _warp(fault, block, thread, other)
    if fault.kind == 11:
        return (
            f"read before an asynchronous copy landed: {who} reads {_place(fault)}, which an asynchronous copy "
            "fills only at its wait"
        )
    if fault.kind == 4:
        return f"uninitialized read: {who} reads {_place(fault)}, which no thread of the block has written"
    if fault.kind == 5:
        return f"out of bounds: {who} {access} {fault.size} bytes at {_place(fault)}"
    if fault.kind == 6:  # reason: the address's bytes past a multiple of the size
        return (
            f"misaligned address: {who} {access} {fault.size} bytes at {_place(fault)}, "
            f"whose address is {fault.reason} bytes past a multiple of {fault.size}"
        )
    if fault.kind == 7:
        file = _text(fault.file)
        return (
            f"divergent barrier: in block {block}, thread {thread} waits at the __syncthreads of {file}:{fault.line} "
            f"while thread {other} waits at {file}:{fault.other_line}"
        )
    return f"kind {fault.kind}: {who}"


def _source_line(library_path: str, pc: int) -> str:
    """``file:line`` of the instruction before return address ``pc`` in the
    library's file, from its debug information; "" when that cannot be read.
    An access inlined from the emulator's own headers (an atomic, a half-type
    operator) is named by the kernel line it was inlined into."""
    tool = shutil.which("addr2line")
    if not pc or tool is None:
        return ""
    # A library loaded from memory is /proc/self/fd/N, which names another file in addr2line.
    path = library_path.replace("/proc/self/", f"/proc/{os.getpid()}/", 1)
    try:
        command = [tool, "-i", "-e", path, f"{pc - 1:#x}"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    # Innermost frame first; the build's folder is ".", which addr2line may write more than once.
    frames = [re.sub(r"^(?:\./)+| \(discriminator \d+\)$", "", line) for line in result.stdout.strip().splitlines()]
    frames = [frame for frame in frames if frame and not frame.startswith("??") and not frame.endswith(":?")]
    own = [frame for frame in frames if not frame.startswith(_SHIM_FOLDER)]
    return (own or frames or [""])[0]


def _aftermath(fault: _Fault, others: str) -> str:
    """What the report adds after the source line: a stopped thread, the count of the others."""
    why = "no bytes can stand in for a misaligned access" if fault.kind == 6 else "no memory can stand in for those bytes"
    text = f"; its thread stopped there, since {why}" if fault.stopped else ""
    if fault.others:
        text += f"; {fault.others} more {others}{'' if fault.others == 1 else 's'} in this launch"
    return text


def _note(fault: _Fault, block: str, thread: str, other: str) -> str:
    """A plain read and another thread's compare-and-swap of one word in one barrier interval."""
    whom = "other threads" if fault.other_thread[0] == _UNKNOWN_THREAD else f"thread {other}"
    if fault.kind == 2:  # the compare-and-swap came after the read
        text = f"block {block} thread {thread} compare-and-swaps {_place(fault)}, which {whom} read since the last __syncthreads"
    else:
        text = (
            f"block {block} thread {thread} reads {_place(fault)}, which {whom} compare-and-swapped since the "
            "last __syncthreads, and leaves it alone"
        )
    return text + (
        ": right if that read only decides whether to update (the early exit of a float atomicMax), "
        "a race if it takes the word as a result"
    )


def log_note(kernel: Any) -> None:
    """Logs, on the ``aotc.runtime.emulator`` logger at INFO, the first read of
    ``kernel``'s last launch that the race check keeps as a note (a word other
    threads compare-and-swap): right in the idioms CUDA code is written with,
    so never a fault."""
    read = kernel.library.cdll.aotc_emu_note
    read.restype = ctypes.POINTER(_Fault)
    pointer = read()
    if not pointer:
        return
    note = pointer.contents
    where = _source_line(kernel.library.path, note.pc)
    text = _note(note, _dims(note.block), _dims(note.thread), _dims(note.other_thread))
    import logging  # here: only a checked launch with a note needs it

    logging.getLogger("aotc.runtime.emulator").info(
        "%s: race check note: %s%s%s", kernel.symbol, text, f" ({where})" if where else "", _aftermath(note, "such read")
    )


def check_failure(kernel: Any, status: int) -> Exception:
    """The error for a launch of ``kernel`` (an EmulatorKernel) that returned ``status``."""
    if status == NO_ADDRESS_SANITIZER:
        msg = (
            f"launching {kernel.symbol}: AOTC_EMULATOR_CHECK=memory needs AddressSanitizer first in the process: "
            f"start Python with {ASAN_PRELOAD}"
        )
        return ConfigurationError(msg)
    if status == DEVICE_ASSERT:
        assertion = kernel.library.cdll.aotc_emu_assertion
        assertion.restype = ctypes.c_char_p
        return KernelFaultError(f"{kernel.symbol}: {_text(assertion() or b'a device assert failed')}")
    read = kernel.library.cdll.aotc_emu_fault
    read.restype = ctypes.POINTER(_Fault)
    pointer = read()
    if not pointer:
        return KernelFaultError(f"{kernel.symbol}: a check failed but left no report")
    fault = pointer.contents
    check = _CHECK_NAMES.get(fault.check, str(fault.check))
    where = _source_line(kernel.library.path, fault.pc)
    text = f"{kernel.symbol}: {check} check: {_describe(fault)}{f' ({where})' if where else ''}{_aftermath(fault, 'fault')}"
    return KernelFaultError(text)
