"""Start-up of a process whose GPU has no SASS in the library: NVRTC miss and hit.

Each sample is a fresh interpreter that opens the library on the noop
backend pretending to be ``--arch`` (one the library has no SASS for, so the
image is an NVRTC cubin), loads one kernel and exits; the wall time of the
whole process is measured, and the interpreter's bare start beside it.

- miss: an empty cache: libnvrtc is loaded and the kernel compiled;
- hit, NVRTC asked: the cubin is cached, NVRTC's answer is not (what every
  hit cost before the answer was kept): libnvrtc is loaded to build the key;
- hit: both cached: nothing of NVRTC is imported or loaded (the process says so).

    python benchmarks/jit_start.py [--library DIR] [--arch 9.0] [--repeat 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from run import KERNEL, REPO  # also puts this checkout's aotc first on sys.path

import aotc

_CHILD = """
import sys
from aotc.runtime.backends.noop import NoopBackend
from aotc.runtime.cache import DiskCache
from aotc.runtime.library import Library
major, minor = map(int, sys.argv[3].split("."))
launcher = Library(sys.argv[1], backend=NoopBackend((major, minor)), cache=DiskCache(sys.argv[2])).kernel(sys.argv[4])
loaded = "libnvrtc" in open("/proc/self/maps").read()
print(launcher.image, "| libnvrtc loaded" if loaded else "| libnvrtc not loaded")
"""


def _process(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter_ns()
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, check=True)
    return time.perf_counter_ns() - start, done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=str(aotc.library_dir("tropical")))
    parser.add_argument("--arch", default="9.0")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    samples: dict[str, list[float]] = {"interpreter start (python -c pass)": [], "miss": [], "hit, NVRTC asked": [], "hit": []}
    seen: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(args.repeat):  # interleaved, so that drift in machine load hits all alike
            env = {**os.environ, "PYTHONPATH": str(REPO), "AOTC_CACHE_DIR": os.path.join(scratch, f"answers{i}")}
            kernels = os.path.join(scratch, f"kernels{i}")
            child = ["-c", _CHILD, args.library, kernels, args.arch, KERNEL]
            samples["interpreter start (python -c pass)"].append(_process(["-c", "pass"], env)[0])
            for case in ("miss", "hit, NVRTC asked"):
                elapsed, seen[case] = _process(child, env)
                samples[case].append(elapsed)
                if case == "miss":
                    shutil.rmtree(env["AOTC_CACHE_DIR"])  # forget NVRTC's answer, keep the cubin
            elapsed, seen["hit"] = _process(child, env)  # the answer was kept by the run before
            samples["hit"].append(elapsed)
    print(f"process start to a loaded kernel on sm_{args.arch.replace('.', '')} (noop backend), median of {args.repeat}")
    for case, values in samples.items():
        print(f"  {case:40} {statistics.median(values) / 1e6:8.1f} ms  {seen.get(case, '')}")


if __name__ == "__main__":
    main()
