"""``cuLaunchKernel`` with one packed parameter block, through cuda-bindings.

Both GPU backends launch this way (the pycuda backend too: pycuda's own
launch takes no foreign stream handle). The block goes through ``extra``
(``CU_LAUNCH_PARAM_BUFFER_POINTER`` / ``_SIZE``): one buffer instead of one
boxed pointer per argument.

This is the per-call path, so the ``extra`` array and its size word are made
once per thread and only refilled (cuda-bindings releases the GIL during the
launch, so a shared array could be rewritten under it), and the block's
address is read from the bytes object itself: CPython keeps a ``bytes``
object's data at a fixed offset from its id. That offset is checked once,
against ctypes' own answer, and where it does not hold the address is asked
of ctypes every call (1.6 us more).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

from aotc.runtime.backends.base import LaunchShape

__all__ = ["launch_packed"]

# cuLaunchKernel's `extra` markers are small integers cast to void*.
_PARAM_END = 0
_PARAM_BUFFER_POINTER = 1
_PARAM_BUFFER_SIZE = 2
_Extra = ctypes.c_void_p * 5


def _address_by_ctypes(params: bytes) -> int:
    return ctypes.cast(ctypes.c_char_p(params), ctypes.c_void_p).value or 0


def _data_offset() -> int | None:
    """Where a bytes object's data starts, from its id; None where ids are no addresses."""
    offset = sys.getsizeof(b"") - 1
    probes = [bytes(range(n % 256, n % 256 + 8)) for n in (3, 77, 200)]
    if all(_address_by_ctypes(probe) == id(probe) + offset for probe in probes):
        return offset
    return None


_OFFSET = _data_offset()
_slots = threading.local()


def _slot() -> tuple[Any, Any, int]:
    size = ctypes.c_size_t(0)
    extra = _Extra(_PARAM_BUFFER_POINTER, 0, _PARAM_BUFFER_SIZE, ctypes.addressof(size), _PARAM_END)
    _slots.extra = (extra, size, ctypes.addressof(extra))
    return _slots.extra


def launch_packed(cu: Any, function: Any, shape: LaunchShape, stream: Any, params: bytes) -> Any:
    """``cuLaunchKernel`` of ``function`` with the packed block ``params`` on ``stream``
    (a ``CUstream`` or its int handle), in the current context; the ``CUresult``."""
    if type(params) is not bytes:
        params = bytes(params)
    try:
        extra, size, address = _slots.extra
    except AttributeError:
        extra, size, address = _slot()
    # The driver copies the block before cuLaunchKernel returns, and `params` outlives the call.
    extra[1] = id(params) + _OFFSET if _OFFSET is not None else _address_by_ctypes(params)
    size.value = len(params)
    grid, block, shared_bytes = shape
    (err,) = cu.cuLaunchKernel(function, *grid, *block, shared_bytes, stream, None, address)
    return err
