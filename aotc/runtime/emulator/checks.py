"""Which checks of the emulator's compute-sanitizer a build carries: ``AOTC_EMULATOR_CHECK``.

``AOTC_EMULATOR_CHECK=race,memory,init,sync`` (any subset, or ``all``) builds
each kernel with the checks (``aotc_emulator_check.h`` says how they work) and
runs its launches under them; a violation raises ``KernelFaultError``. The
check set is part of the build's flags, so checked and plain libraries are
cached apart.

The memory check reads AddressSanitizer's shadow for global memory, so
libasan must be the first library of the process: :func:`asan_environment`
gives the variables to start Python with (``ASAN_PRELOAD`` as a shell line).
libstdc++ is preloaded right after it: Python itself links no C++, so
otherwise libasan finds no ``__cxa_throw`` to wrap when it starts, and the
first C++ exception an extension throws (jaxlib while it loads, PyTorch for
any error it raises) aborts the process on ASan's CHECK instead.
"""

from __future__ import annotations

import ctypes
import os
import subprocess

from aotc.errors import ConfigurationError, echo

__all__ = [
    "ASAN_PRELOAD",
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
# What to start Python with for the memory check, as a shell line (asan_environment's variables).
ASAN_PRELOAD = 'LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so.6)" ASAN_OPTIONS=detect_leaks=0 PYTHONMALLOC=malloc'
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
    """The variables that start a process with ``compiler``'s libasan first, then its libstdc++.

    ``PYTHONMALLOC=malloc`` gives every Python allocation its own malloc
    block, so small buffers get exact bounds too; leak reports are off
    because Python keeps memory until exit on purpose.
    """
    libraries = []
    for name in ("libasan.so", "libstdc++.so.6"):  # libasan first; libstdc++ for its __cxa_throw (module doc)
        result = subprocess.run([compiler, f"-print-file-name={name}"], capture_output=True, text=True, check=False)
        libraries.append(result.stdout.strip() or name)
    return {"LD_PRELOAD": " ".join(libraries), "ASAN_OPTIONS": "detect_leaks=0", "PYTHONMALLOC": "malloc"}


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
