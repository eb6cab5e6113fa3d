"""``cuLaunchKernel`` with one packed parameter block, through cuda-bindings.

Both GPU backends launch this way (the pycuda backend too: pycuda's own
launch takes no foreign stream handle). The block goes through ``extra``
(``CU_LAUNCH_PARAM_BUFFER_POINTER`` / ``_SIZE``): one buffer instead of one
boxed pointer per argument.
"""

from __future__ import annotations

import ctypes
from typing import Any

from aotc.runtime.backends.base import LaunchShape

__all__ = ["launch_packed"]

# cuLaunchKernel's `extra` markers are small integers cast to void*.
_PARAM_END = 0
_PARAM_BUFFER_POINTER = 1
_PARAM_BUFFER_SIZE = 2
_Extra = ctypes.c_void_p * 5


def launch_packed(cu: Any, function: Any, shape: LaunchShape, stream: Any, params: bytes) -> Any:
    """``cuLaunchKernel`` of ``function`` with the packed block ``params`` on ``stream``
    (a ``CUstream`` or its int handle), in the current context; the ``CUresult``."""
    # c_char_p points into the bytes object itself; the driver copies the
    # block before cuLaunchKernel returns, and `params` outlives the call.
    size = ctypes.c_size_t(len(params))
    pointer = ctypes.cast(ctypes.c_char_p(params), ctypes.c_void_p).value
    extra = _Extra(_PARAM_BUFFER_POINTER, pointer, _PARAM_BUFFER_SIZE, ctypes.addressof(size), _PARAM_END)
    grid, block, shared_bytes = shape
    (err,) = cu.cuLaunchKernel(function, *grid, *block, shared_bytes, stream, None, ctypes.addressof(extra))
    return err
