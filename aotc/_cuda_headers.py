"""Where NVRTC finds the CUDA headers a generated source includes.

A rendered source includes nothing of its own, except the headers that
declare its parameters' C types (``__half``: cuda_fp16.h, ``__nv_bfloat16``:
cuda_bf16.h; ``aotc.dtypes``). nvcc finds them in its toolkit and the emulator
provides its own, but NVRTC has them not built in (NVRTC 13.5: "could not open
source file "cuda_bf16.h" (no directories in search list)"): it is given the
include folder of a CUDA toolkit, or of the CUDA runtime's wheel, that holds
them. Both NVRTC compiles ask here, the build's (``aotc.build.nvrtc_fatbin``)
and the runtime's JIT (``aotc.runtime.jit``).
"""

from __future__ import annotations

import os
import sys

from aotc.dtypes import DTYPES
from aotc.errors import BuildError

__all__ = ["include_options"]

# The headers of the dtype table's C types, each as a source includes it.
_INCLUDES = {header: f"#include <{header}>".encode() for header in sorted({d.header for d in DTYPES.values()} - {""})}


def _candidates() -> list[str]:
    """Include folders, most specific first: the toolkit named by the environment,
    nvcc's, the CUDA runtime wheels' (CUDA 13's, then 12's), the default toolkit."""
    found = [os.path.join(os.environ[var], "include") for var in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(var)]
    import shutil  # here: the runtime's JIT imports this module

    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        found.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include"))
    for root in sys.path:
        found += [os.path.join(root, "nvidia", "cu13", "include"), os.path.join(root, "nvidia", "cuda_runtime", "include")]
    found.append("/usr/local/cuda/include")
    return found


def include_options(source: bytes, name: str) -> tuple[str, ...]:
    """The NVRTC options that let ``source`` (the file ``name``) find the CUDA
    headers it includes: none where it includes none of them; else ``-I`` of
    the first folder holding them all, or a one-line ``BuildError``."""
    wanted = [header for header, line in _INCLUDES.items() if line in source]
    if not wanted:
        return ()
    for folder in _candidates():
        if all(os.path.isfile(os.path.join(folder, header)) for header in wanted):
            return (f"-I{folder}",)
    msg = (
        f"{name}: includes {', '.join(wanted)}, which NVRTC does not have built in, and no CUDA include folder"
        " holds it (set CUDA_HOME to a CUDA toolkit, or install the CUDA runtime's headers)"
    )
    raise BuildError(msg)
