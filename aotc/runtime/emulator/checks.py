"""Which checks of the emulator's compute-sanitizer a build carries: ``AOTC_EMULATOR_CHECK``.

``AOTC_EMULATOR_CHECK=race,memory,init,sync`` (any subset, or ``all``) builds
each kernel with the checks (``aotc_emulator_check.h`` says how they work) and
runs its launches under them; a violation raises ``KernelFaultError``. The
check set is part of the build's flags, so checked and plain libraries are
cached apart.

The memory check reads AddressSanitizer's shadow for global memory, so
libasan must be the first library of the process: :func:`asan_environment`
gives the variables to start Python with.
"""

from __future__ import annotations

import ctypes
import os
import subprocess

from aotc.errors import ConfigurationError, echo

__all__ = [
    "CHECKS",
    "CHECK_ENV",
    "asan_environment",
    "asan_loaded",
    "check_mask",
    "poison",
    "requested_checks",
    "unpoison",
]

CHECK_ENV = "AOTC_EMULATOR_CHECK"
# The order is the bit order of AOTC_EMU_CHECKS in aotc_emulator_check.h.
CHECKS = ("race", "memory", "init", "sync")


def requested_checks(text: str | None = None) -> tuple[str, ...]:
    """The checks ``text`` (default: ``$AOTC_EMULATOR_CHECK``) names, in CHECKS order."""
    text = os.environ.get(CHECK_ENV, "") if text is None else text
    names = {part.strip() for part in text.split(",") if part.strip()}
    if names == {"all"}:
        return CHECKS
    unknown = sorted(names - set(CHECKS))
    if unknown:
        msg = f"{CHECK_ENV} must be 'all' or a comma-separated subset of {', '.join(CHECKS)}, got {echo(text)}"
        raise ConfigurationError(msg)
    return tuple(check for check in CHECKS if check in names)


def check_mask(checks: tuple[str, ...]) -> int:
    """``checks`` as the AOTC_EMU_CHECKS bit mask."""
    return sum(1 << CHECKS.index(check) for check in checks)


def _asan_function(name: str) -> ctypes._CFuncPtr | None:
    try:
        return getattr(ctypes.CDLL(None), name)
    except AttributeError:
        return None


def asan_loaded() -> bool:
    """Whether AddressSanitizer's runtime is in this process."""
    return _asan_function("__asan_region_is_poisoned") is not None


def asan_environment(compiler: str = "g++") -> dict[str, str]:
    """The variables that start a process with ``compiler``'s libasan first.

    ``PYTHONMALLOC=malloc`` gives every Python allocation its own malloc
    block, so small buffers get exact bounds too; leak reports are off
    because Python keeps memory until exit on purpose.
    """
    result = subprocess.run([compiler, "-print-file-name=libasan.so"], capture_output=True, text=True, check=False)
    library = result.stdout.strip() or "libasan.so"
    return {"LD_PRELOAD": library, "ASAN_OPTIONS": "detect_leaks=0", "PYTHONMALLOC": "malloc"}


def _set_poison(name: str, pointer: int, nbytes: int) -> None:
    function = _asan_function(name)
    if function is not None and nbytes > 0:
        function.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        function.restype = None
        function(pointer, nbytes)


def poison(pointer: int, nbytes: int) -> None:
    """Marks host memory as off limits for the memory check (a guard band inside
    an allocation); nothing happens without AddressSanitizer."""
    _set_poison("__asan_poison_memory_region", pointer, nbytes)


def unpoison(pointer: int, nbytes: int) -> None:
    """Undoes :func:`poison`, before the host itself reads or frees the bytes."""
    _set_poison("__asan_unpoison_memory_region", pointer, nbytes)
