"""Where NVRTC finds the CUDA headers a generated source includes.

A rendered source includes nothing of its own, except the headers that
declare its parameters' C types (``__half``: cuda_fp16.h, ``__nv_bfloat16``:
cuda_bf16.h; ``aotc.dtypes``). nvcc finds them in its toolkit and the emulator
provides its own, but NVRTC has them not built in (NVRTC 13.5: "could not open
source file "cuda_bf16.h" (no directories in search list)"): it is given the
include folder of a CUDA toolkit, or of the CUDA runtime's wheel, that holds
them. Both NVRTC compiles ask here, the build's (``aotc.build.nvrtc_fatbin``)
and the runtime's JIT (``aotc.runtime.jit``).

A template may include more of the toolkit: ``<cuda/std/cstdint>``,
``<cooperative_groups.h>``, ``<cub/block/block_reduce.cuh>``, ``<cuda/atomic>``.
These compile under NVRTC (13.0, checked) given the toolkit's include folder
and its ``cccl`` folder, which a source with any other ``#include <...>`` is
given. No folder gives NVRTC a host header (``<cstdint>``, ``<cmath>``): its
failure says which ``cuda/std`` header stands in (``missing_header_hint``).
"""

from __future__ import annotations

import os
import re
import sys

from aotc.dtypes import DTYPES
from aotc.errors import BuildError

__all__ = ["include_options", "missing_header_hint"]

# The headers of the dtype table's C types, each as a source includes it.
_INCLUDES = {header: f"#include <{header}>".encode() for header in sorted({d.header for d in DTYPES.values()} - {""})}
# Any other angle-bracket include, which may name a toolkit header.
_OTHER_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*<(?!(?:%s)>)" % b"|".join(re.escape(h.encode()) for h in _INCLUDES), re.M)
# A toolkit's include folder holds this; a wheel's folder of half headers alone does not.
_TOOLKIT_MARK = "cuda_runtime_api.h"
# NVRTC's words for a header it could not find.
_NOT_OPENED = re.compile(r'(?:could not|cannot) open source file "([^"]+)"')
# C headers whose C++ name libcu++ provides as <cuda/std/c...>.
_C_HEADERS = {"stdint.h", "limits.h", "float.h", "math.h", "stddef.h", "stdlib.h", "string.h", "time.h", "assert.h"}


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
    toolkit = _OTHER_INCLUDE.search(source) is not None
    if not wanted and not toolkit:
        return ()
    candidates = _candidates()
    if toolkit:
        # A toolkit's folder, and its CCCL headers (libcu++, CUB), where one is found;
        # else NVRTC names the header it misses.
        wanted_and_mark = [*wanted, _TOOLKIT_MARK]
        for folder in candidates:
            if all(os.path.isfile(os.path.join(folder, header)) for header in wanted_and_mark):
                cccl = os.path.join(folder, "cccl")
                return (f"-I{folder}", f"-I{cccl}") if os.path.isdir(cccl) else (f"-I{folder}",)
        if not wanted:
            return ()
    for folder in candidates:
        if all(os.path.isfile(os.path.join(folder, header)) for header in wanted):
            return (f"-I{folder}",)
    msg = (
        f"{name}: includes {', '.join(wanted)}, which NVRTC does not have built in, and no CUDA include folder"
        " holds it (set CUDA_HOME to a CUDA toolkit, or install the CUDA runtime's headers)"
    )
    raise BuildError(msg)


def missing_header_hint(log_line: str) -> str:
    """What to do about a header NVRTC could not open, from its log line; empty if the line is not that."""
    found = _NOT_OPENED.search(log_line)
    if found is None:
        return ""
    header = found.group(1)
    if "/" in header or (header.endswith(".h") and header not in _C_HEADERS):
        return " (NVRTC is given a CUDA toolkit's include folders alone: set CUDA_HOME to one that holds it, or build with AOTC_COMPILER=nvcc)"
    stem = header[:-2] if header.endswith(".h") else header
    standard = stem if header.startswith("c") and not header.endswith(".h") else f"c{stem}"
    return f" (NVRTC has no host headers: include <cuda/std/{standard}> instead, or build with AOTC_COMPILER=nvcc)"
