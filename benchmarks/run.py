"""Runtime loader benchmarks (issue 5). Prints medians as a Markdown table.

    python benchmarks/run.py [--library tropical|PATH] [--arch 8.7] [--quick]

Measures, with time.perf_counter_ns and medians over many repetitions:

- ``import aotc`` (a fresh interpreter each time; the interpreter's own start
  is measured too and subtracted);
- ``aotc.load()``: reading and parsing index.json;
- NVRTC: one kernel, against every kernel of the library (one process, and
  the process pool ``aotc warm`` uses): the "compile only what is used" claim;
- a kernel's first use: from the fatbin (SASS), and from an NVRTC cache hit;
- per-call host overhead through the noop backend: lookup, grid, pack, launch.

Needs no GPU. Compiles go to a temporary cache directory, never the user's.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

__all__ = ["interleaved_medians", "main", "median_ns"]

KERNEL = "gemm_maxplus_f32_forward"
ARGS = (0x7F0000000000, 0x7F0000100000, 0x7F0000200000, 1000, 1000, 1000, 1000, 1000, 1000)


def median_ns(run: Callable[[], object], repeat: int, number: int = 1) -> float:
    """Median over ``repeat`` samples of the time per call, each sample ``number`` calls."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(number):
            run()
        samples.append((time.perf_counter_ns() - start) / number)
    return statistics.median(samples)


def interleaved_medians(cases: dict[str, Callable[[], object]], batches: int, calls: int) -> dict[str, float]:
    """Each case's median, over ``batches``, of its mean ns per call in a batch of
    ``calls``; the cases run interleaved batch by batch, so that drift in the
    machine's load hits all of them alike (the per-call benchmarks' method)."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(batches):
        for name, function in cases.items():
            start = time.perf_counter_ns()
            for _ in range(calls):
                function()
            samples[name].append((time.perf_counter_ns() - start) / calls)
    return {name: statistics.median(values) for name, values in samples.items()}


def _interpreter(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter_ns()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return time.perf_counter_ns() - start


def bench_import(repeat: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # Interleaved, so that drift in machine load hits both alike.
    pairs = [(_interpreter("pass", env), _interpreter("import aotc", env)) for _ in range(repeat)]
    bare = statistics.median(b for b, _ in pairs)
    full = statistics.median(f for _, f in pairs)
    selfs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import aotc"], env=env, capture_output=True, text=True, check=True
        ).stderr
        line = next(line for line in out.splitlines() if line.rstrip().endswith("| aotc"))
        selfs.append(int(line.split("|")[1]) * 1000)
    return {
        "python -c 'pass' (interpreter start, for scale)": bare,
        "python -c 'import aotc'": full,
        "import aotc, cumulative (-X importtime)": statistics.median(selfs),
    }


def bench_nvrtc(library: Path, capability: tuple[int, int], repeat: int, quick: bool) -> dict[str, float]:
    from aotc.index import LibraryIndex
    from aotc.runtime.jit import compile_cubin
    from aotc.runtime.warm import plan_warm, run_warm
    from aotc.runtime.cache import DiskCache

    index = LibraryIndex.open(library)
    sources = {name: index.read_verified(name, "source") for name in index.kernels}
    results = {
        f"NVRTC compile, one kernel ({KERNEL})": median_ns(
            lambda: compile_cubin(sources[KERNEL], KERNEL, capability), repeat
        )
    }
    if quick:
        return results
    start = time.perf_counter_ns()
    for name, source in sources.items():
        compile_cubin(source, name, capability)
    results[f"NVRTC compile, all {len(sources)} kernels, one process"] = time.perf_counter_ns() - start
    with tempfile.TemporaryDirectory() as cache_dir:
        plan = plan_warm(library, capability)
        start = time.perf_counter_ns()
        for _ in run_warm(plan, cache=DiskCache(cache_dir)):
            pass
        jobs = os.cpu_count()
        results[f"NVRTC compile, all {len(plan.to_compile)} kernels, aotc warm ({jobs} processes)"] = (
            time.perf_counter_ns() - start
        )
    return results


def bench_loading(library: Path, capability: tuple[int, int], repeat: int) -> dict[str, float]:
    from aotc.runtime.backends.noop import NoopBackend
    from aotc.runtime.cache import DiskCache
    from aotc.runtime.jit import jit_cubin
    from aotc.runtime.library import Library

    results = {"aotc.load(): read and parse index.json": median_ns(lambda: Library(library, backend=NoopBackend()), repeat)}
    # Every first use gets a fresh Library, so each sample is a real first use.
    fatbin_libs = [Library(library, backend=NoopBackend((8, 0))) for _ in range(repeat)]
    results["first use of a kernel from its fatbin (read, sha256, load)"] = median_ns(
        lambda: fatbin_libs.pop().kernel(KERNEL), repeat
    )
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = DiskCache(cache_dir)
        source = (library / "src" / f"{KERNEL}.cu").read_bytes()
        jit_cubin(source, KERNEL, capability, cache)  # fill
        results["NVRTC cache hit: key, read, verify (jit_cubin)"] = median_ns(
            lambda: jit_cubin(source, KERNEL, capability, cache), repeat * 10
        )
        # A pretend device of --arch: where the library has no SASS for it, the
        # first use goes through NVRTC and hits the cache filled above.
        jit_libs = [Library(library, backend=NoopBackend(capability), cache=cache) for _ in range(repeat)]
        probe = Library(library, backend=NoopBackend(capability), cache=cache).kernel(KERNEL)
        if probe.choice is not None and probe.choice.kind.value == "nvrtc_jit":
            results["first use of a kernel from an NVRTC cache hit"] = median_ns(
                lambda: jit_libs.pop().kernel(KERNEL), repeat
            )
    return results


def bench_calls(library: Path, repeat: int) -> dict[str, float]:
    from aotc.runtime.backends.noop import NoopBackend
    from aotc.runtime.library import Library

    lib = Library(library, backend=NoopBackend((8, 0)))
    launcher = lib.kernel(KERNEL)
    number = 20_000
    return {
        "call a held launcher: grid + pack + launch (noop)": median_ns(lambda: launcher(*ARGS), repeat, number),
        "lib.kernel(name)(*args) (noop)": median_ns(lambda: lib.kernel(KERNEL)(*ARGS), repeat, number),
    }


def _format(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default="tropical", help="installed library name or folder (default: tropical)")
    parser.add_argument("--arch", default="8.7", help="NVRTC target, X.Y (default 8.7)")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="skip compiling every kernel")
    args = parser.parse_args(argv)

    from aotc.runtime.library import resolve_library

    library = resolve_library(args.library)
    major, minor = (int(part) for part in args.arch.split("."))
    results: dict[str, float] = {}
    results.update(bench_import(args.repeat))
    results.update(bench_calls(library, args.repeat))
    results.update(bench_loading(library, (major, minor), args.repeat))
    results.update(bench_nvrtc(library, (major, minor), max(3, args.repeat // 6), args.quick))

    cpu = platform.processor() or platform.machine()
    gpu = shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip()
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs ({cpu}), GPU: {gpu or 'none'}; library {library}")
    print()
    print("| measurement | median |")
    print("| --- | --- |")
    for name, value in results.items():
        print(f"| {name} | {_format(value)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
