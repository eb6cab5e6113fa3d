"""A batch of kernels' compile steps in one process: what a large library's build runs.

A build of thousands of small kernels spent most of its CPU starting
processes: per kernel, ninja's shell, the wrapper script and Python, before
the compiler's own. So the build gives ``aotc-compile`` several kernels at once
(``aotcConfig.cmake`` chooses how many), and this runs each one's step,
``aotc.build.compile.compile_kernel``, in turn: the fatbin cache first,
then nvcc, or NVRTC and nvFatbin loaded once for the whole batch. Each kernel
is still its own source and its own fatbin, compiled alone, so its bytes do
not depend on the batch it fell in.

Ninja reruns a batch when any of its sources changed, so each kernel's step
is skipped while its fatbin is up to date: a record beside the fatbin
(``<kernel>.fatbin.key``) holds the step's key (``compile.step_key``: the
source's bytes, the architectures and options, the compiler's fingerprint),
and a kernel is compiled only where the record is missing or differs. A
one-kernel edit then compiles one kernel, whichever batch holds it.

Each kernel compiled prints ``aotc: <library>: compiling <kernel>`` (and
``cached <kernel>`` after it for a fatbin cache hit), so the build log names
every kernel that was built, as ninja's one line per kernel did.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["KEY_SUFFIX", "run_batch"]

# Beside a kernel's fatbin: the key of the step that built it.
KEY_SUFFIX = ".key"


def _current(record: Path, digest: str, outputs: tuple[Path, ...]) -> bool:
    try:
        return record.read_text() == digest + "\n" and all(path.is_file() for path in outputs)
    except OSError:
        return False


def run_batch(
    args: argparse.Namespace, kind: str, sass: list[str], ptx: list[str], compile_kernel: Callable[..., int], step_key: Callable[..., Any]
) -> int:
    """Compile the out-of-date kernels among ``args.names`` with ``compile_kernel``
    (``aotc.build.compile``'s, passed in: that module runs as ``__main__``); stop at
    the first that fails."""
    fatbin_dir, gen_dir = Path(args.fatbin_dir), Path(args.gen_dir)
    library = args.library or gen_dir.parent.name
    for kernel in args.names:
        step = argparse.Namespace(**vars(args))
        step.source = str(gen_dir / f"{kernel}.cu")
        step.out = str(fatbin_dir / f"{kernel}.fatbin")
        step.resources = str(gen_dir / f"{kernel}.resources.txt")
        record = Path(step.out + KEY_SUFFIX)
        try:
            key = step_key(step, kind, sass, ptx, Path(step.source).read_bytes())
        except OSError:
            key = None  # the compiler reports a missing source
        if key is not None and _current(record, key.digest, (Path(step.out), Path(step.resources))):
            continue
        print(f"aotc: {library}: compiling {kernel}", flush=True)
        record.unlink(missing_ok=True)
        if rc := compile_kernel(step, kind, sass, ptx):
            return rc
        sys.stdout.flush()
        if key is not None:
            temp = record.with_name(f".{record.name}.{os.getpid()}")
            temp.write_text(key.digest + "\n")
            os.replace(temp, record)
    return 0
