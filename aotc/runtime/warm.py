"""``aotc warm``: fill the disk cache ahead of time for a GPU that is not here.

Warm compiles exactly what the runtime would compile with NVRTC on a device
of the given compute capability, and nothing else: for every kernel it asks
``select_image`` (with this machine's NVRTC and the ``AOTC_JIT`` policy)
what a device of that arch would load. Kernels that the wheel's SASS serves
need nothing, and are reported as such; kernels that would be NVRTC-compiled
are compiled into the cache, or reported as hits when they already are.

Misses compile in a pool of processes (``-j``, default one per CPU). NVRTC
does release the GIL, but whether two threads then compile concurrently is up
to NVRTC's internals; processes run in parallel regardless, for about 0.3 s of
start-up each. Everything else (hashing, cache hits) stays in this process,
so a fully cached run starts no workers.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from aotc.errors import AotcError, BuildError, CacheError, CacheWarning, LibraryNotFoundError, UnknownKernelError
from aotc.index import INDEX_NAME, LibraryIndex
from aotc.runtime.cache import DiskCache, default_cache
from aotc.runtime.jit import NvrtcInfo, jit_cubin, jit_key, nvrtc_info, nvrtc_problem
from aotc.runtime.library import kernel_images, resolve_library
from aotc.runtime.select import ImageKind, JitPolicy, Platform, explain_selection

__all__ = ["WarmPlan", "WarmResult", "plan_warm", "run_warm"]

COMPILED = "compiled"
HIT = "hit"
NOT_NEEDED = "not needed"
FAILED = "failed"


@dataclass(frozen=True)
class WarmResult:
    """What warm did for one kernel; ``detail`` is one line for people."""

    kernel: str
    outcome: str  # compiled, hit, not needed, failed
    detail: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class WarmPlan:
    """The kernels of one library and what a device of ``capability`` would do with each."""

    index: LibraryIndex  # validated once, here; run_warm reads the sources through it
    capability: tuple[int, int]
    nvrtc: NvrtcInfo
    policy: JitPolicy
    to_compile: tuple[str, ...]  # in index order
    not_needed: tuple[tuple[str, str], ...]  # (kernel, why)
    order: tuple[str, ...]

    @property
    def library(self) -> str:
        return self.index.name

    @property
    def directory(self) -> Path:
        return self.index.directory  # type: ignore[return-value]  # opened from a folder


def plan_warm(
    library: str | os.PathLike[str],
    capability: tuple[int, int],
    *,
    kernels: Sequence[str] = (),
    policy: JitPolicy = JitPolicy.AUTO,
) -> WarmPlan:
    """Decide, without compiling, which kernels a device of ``capability`` would NVRTC-compile."""
    nvrtc = nvrtc_info()
    if nvrtc is None:
        msg = f"cannot warm: NVRTC is not available: {nvrtc_problem()}"
        raise BuildError(msg)
    arch = f"sm_{capability[0]}{capability[1]}"
    if capability not in nvrtc.archs:
        msg = f"cannot warm for {arch}: {nvrtc.describe()} cannot compile for it"
        raise BuildError(msg)
    directory = resolve_library(library)
    index_path = directory / INDEX_NAME
    if not index_path.is_file():
        msg = f"no kernel library at {directory} ({INDEX_NAME} not found)"
        raise LibraryNotFoundError(msg)
    index = LibraryIndex.open(directory)
    names = list(index.kernels)
    unknown = [k for k in kernels if k not in index.kernels]
    if unknown:
        msg = f"library {index.name!r} has no kernel {', '.join(map(repr, unknown))}"
        raise UnknownKernelError(msg)
    order = tuple(k for k in names if not kernels or k in kernels)
    # The driver version only matters where NVRTC is not used; assume one new
    # enough for the library's PTX so that the answer is about the images.
    platform = Platform(capability, index.ptx_toolkit, nvrtc.archs)
    to_compile, not_needed = [], []
    for name in order:
        choice = explain_selection(kernel_images(index, name), platform, policy)
        if choice.kind is ImageKind.NVRTC_JIT:
            to_compile.append(name)
        else:
            not_needed.append((name, choice.reason))
    return WarmPlan(
        index, capability, nvrtc, policy,
        tuple(to_compile), tuple(not_needed), order,
    )  # fmt: skip


def run_warm(plan: WarmPlan, *, cache: DiskCache | None = None, jobs: int | None = None) -> Iterator[WarmResult]:
    """Compile the plan's kernels into the cache; yields one result per kernel, in index order."""
    cache = cache if cache is not None else default_cache()
    if cache.state != "ok":
        msg = f"cannot warm: the cache at {cache.directory} is {cache.state}: {cache.info().reason}"
        raise CacheError(msg)
    index = plan.index
    results: dict[str, WarmResult] = {name: WarmResult(name, NOT_NEEDED, why) for name, why in plan.not_needed}
    misses: list[tuple[str, bytes, str]] = []
    for name in plan.to_compile:
        try:
            source = index.read_verified(name, "source")
        except AotcError as exc:  # a missing or damaged source fails this kernel, not the run
            results[name] = WarmResult(name, FAILED, str(exc))
            continue
        if cache.load(jit_key(source, plan.capability, plan.nvrtc)) is not None:
            results[name] = WarmResult(name, HIT, "already in the cache")
        else:
            misses.append((name, source, index.kernel(name).source.file))

    jobs = max(1, min(jobs or os.cpu_count() or 1, len(misses)))
    pending = _compile(misses, plan.capability, cache, jobs)
    for name in plan.order:
        while name not in results:
            done = next(pending)
            results[done.kernel] = done
        yield results[name]


def _compile(
    misses: list[tuple[str, bytes, str]], capability: tuple[int, int], cache: DiskCache, jobs: int
) -> Iterator[WarmResult]:
    if jobs <= 1:
        for miss in misses:
            yield _compile_one(*miss, capability, str(cache.directory), cache.max_bytes)
        return
    # spawn, not fork: a forked child of a process that touched CUDA is undefined.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        futures = [
            pool.submit(_compile_one, *miss, capability, str(cache.directory), cache.max_bytes) for miss in misses
        ]
        for future in futures:
            yield future.result()


def _compile_one(
    name: str, source: bytes, file: str, capability: tuple[int, int], cache_dir: str, max_bytes: int
) -> WarmResult:
    """Runs in a worker process: one kernel through the cache (its flock makes racing fills safe)."""
    start = time.perf_counter()
    try:
        # The verified bytes travel to the worker: it reads nothing the index did not check.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheWarning)  # an entry over the cap: its result says so
            result = jit_cubin(source, file, capability, DiskCache(cache_dir, max_bytes=max_bytes))
    except (AotcError, OSError) as exc:
        return WarmResult(name, FAILED, str(exc), time.perf_counter() - start)
    refusal = DiskCache(cache_dir, max_bytes=max_bytes).over_cap(len(result.cubin))
    if refusal:  # compiled, but the cache cannot keep it: warming it failed
        return WarmResult(name, FAILED, refusal, time.perf_counter() - start)
    outcome = COMPILED if result.compiled else HIT
    return WarmResult(name, outcome, "" if result.compiled else "filled by another process", time.perf_counter() - start)
