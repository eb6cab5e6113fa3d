"""The start-up a user waits for, beside the peer's, and its cost against the library's size (issue 21).

Each sample is a fresh interpreter, timed from inside (``time.perf_counter``),
so the interpreter's own start is left out of both sides, and nothing else is
imported before the clock starts (``time`` and ``sys`` are built in): what
aotc imports, ``json`` and ``re`` among them where it does, is counted.

- **aotc**: ``import aotc.tropical``, ``aotc.load("tropical", backend="noop")``
  (by name, as a user writes it; ``--library`` names a folder instead) and
  the first use of five kernels (the kernels of a training step:
  ``lib.kernel(name)``: index entry checked, fatbin read and verified, module
  loaded by the backend). The noop backend stands where the driver would.
- **the peer**: what a tropical GEMM library that compiles at start does
  before its first launch: NVRTC compiles its kernel source (``--peer-source``,
  a ``.cu`` holding all its kernels, fetched by the person running this; not
  part of this repository) to a cubin for ``--arch``, with the peer's one
  option, ``--gpu-architecture=sm_XY``.
- **size**: ``aotc.load`` plus the same five first uses (imports done before
  the clock starts) on the library, and on a library of ``--kernels`` kernels
  generated from it: its entries repeated under new names and variants,
  resealed, written in the build's layout, pointing at the same files.

Rounds are interleaved (aotc, peer, size 86, size N), so drift in the load of
a shared machine hits every case alike; medians are reported, with ``uptime``.
``--instructions`` also counts the aotc start-up's instructions under
callgrind (a process that runs it, less one that runs ``pass``; one hash
seed), which a machine's load does not move.

    python benchmarks/startup.py [--python VENV/bin/python] [--library DIR] [--peer-source tropical_gemm.cu]
                                 [--arch 8.0] [--rounds 7] [--peer-rounds N] [--kernels 1032]
                                 [--baseline-python OLD_VENV/bin/python] [--instructions]

``--python`` runs the aotc children (an installed wheel's venv); the peer's
and the generator run in this interpreter, which needs cuda-bindings' NVRTC.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

KERNELS = (
    "gemm_maxplus_f32_forward",
    "gemm_maxplus_f32_argmax",
    "gemm_maxplus_f32_backward_a",
    "gemm_maxplus_f32_backward_b",
    "gemm_minplus_f32_forward",
)

# Nothing but the built-in time and sys before the clock: json is imported to print, after it stops.
_AOTC_START = """
import sys, time
start, cpu = time.perf_counter(), time.process_time()
import aotc, aotc.tropical
imported = time.perf_counter()
lib = aotc.load(sys.argv[1], backend="noop")
loaded = time.perf_counter()
for name in sys.argv[2].split(","):
    lib.kernel(name)
used = time.perf_counter()
cpu = time.process_time() - cpu
import json
print(json.dumps({"import": imported - start, "load": loaded - imported, "uses": used - loaded, "total": used - start,
                  "total, CPU time": cpu}))
"""

# The same start-up, bare, for callgrind: its count less that of `pass`.
_AOTC_START_BARE = """
import sys
import aotc, aotc.tropical
lib = aotc.load(sys.argv[1], backend="noop")
for name in sys.argv[2].split(","):
    lib.kernel(name)
"""

_AOTC_SIZE = """
import json, sys, time
import aotc, aotc.tropical, aotc.runtime.library, aotc.runtime.backends.noop, aotc.index.library_index
start, cpu = time.perf_counter(), time.process_time()
lib = aotc.load(sys.argv[1], backend="noop")
for name in sys.argv[2].split(","):
    lib.kernel(name)
print(json.dumps({"load_and_uses": time.perf_counter() - start, "cpu": time.process_time() - cpu, "kernels": len(lib)}))
"""

_PEER_START = """
import json, sys, time
start = time.perf_counter()
from cuda.bindings import nvrtc
source = open(sys.argv[1], "rb").read()
err, program = nvrtc.nvrtcCreateProgram(source, b"tropical_gemm.cu", 0, [], [])
options = [f"--gpu-architecture=sm_{sys.argv[2]}".encode()]
(err,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
err, size = nvrtc.nvrtcGetCUBINSize(program)
cubin = b" " * size
(err,) = nvrtc.nvrtcGetCUBIN(program, cubin)
print(json.dumps({"total": time.perf_counter() - start, "cubin_bytes": size}))
"""


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}


def _child(python: str, code: str, *args: str) -> dict[str, float]:
    # From a folder with no aotc in it: `python -c` puts the working folder first on sys.path.
    done = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, env=_environment(), check=False, cwd="/")
    if done.returncode != 0:
        raise SystemExit(f"{python}: child failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _instructions(python: str, code: str, *args: str) -> int:
    """What callgrind counts for ``python -c code args``."""
    env = {**_environment(), "PYTHONHASHSEED": "0"}  # one hash seed: the same process runs the same instructions
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, "-c", code, *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, cwd="/")
    found = [line for line in done.stderr.splitlines() if "Collected :" in line]
    if done.returncode != 0 or not found:
        raise SystemExit(f"{python}: callgrind run failed:\n{done.stderr[-2000:]}")
    return int(found[-1].split()[-1])


def start_instructions(python: str, library: str, names: str) -> int:
    """The start-up's instructions beyond an interpreter that runs ``pass``."""
    _child(python, _AOTC_START, library, names)  # any bytecode written before counting
    return _instructions(python, _AOTC_START_BARE, library, names) - _instructions(python, "pass")


def _library_dir(python: str, library: str | None) -> str:
    if library is not None:
        return os.path.abspath(library)
    code = "import aotc; print(aotc.library_dir('tropical'))"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout.strip()


def _loaded_as(library: str | None) -> str:
    """What the start-up passes to ``aotc.load``: the name a user writes, or ``--library``'s folder."""
    return "tropical" if library is None else os.path.abspath(library)


def generate_library(source: str, target: str, kernels: int, python: str) -> str:
    """A copy of library ``source`` whose index holds ``kernels`` kernels (see the
    module docstring), written by the aotc that ``python`` runs; returns its folder."""
    shutil.copytree(source, target)
    code = """
import json, sys
from aotc.build.index_writer import dumps, seal
path, wanted = sys.argv[1], int(sys.argv[2])
index = json.load(open(path))
base = dict(index["kernels"])
kernels, copy = dict(base), 0
while len(kernels) < wanted:
    copy += 1
    for name, entry in base.items():
        if len(kernels) >= wanted:
            break
        entry = json.loads(json.dumps(entry))
        entry["axes"]["variant"] = f"{entry['axes']['variant']}_copy{copy}"
        kernels[f"{name}_copy{copy}"] = entry
index["kernels"] = kernels
open(path, "wb").write(dumps(seal(index)))
"""
    subprocess.run([python, "-c", code, os.path.join(target, "index.json"), str(kernels)], check=True, cwd="/")
    return target


def _uptime() -> str:
    with open("/proc/loadavg") as loadavg:
        return "load average " + ", ".join(loadavg.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter with aotc installed")
    parser.add_argument("--library", help="a library folder (default: the installed tropical library)")
    parser.add_argument("--peer-source", help="the peer's kernel source (.cu); omit to skip the peer")
    parser.add_argument("--arch", default="8.0", help="the device the peer compiles for, X.Y")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--peer-rounds", type=int, help="rounds that also time the peer (default: all)")
    parser.add_argument("--baseline-python", help="another aotc (an older wheel's venv) timed the same way, beside")
    parser.add_argument("--kernels", type=int, default=1032, help="kernels in the generated library")
    parser.add_argument("--instructions", action="store_true", help="also count the start-up's instructions (needs valgrind)")
    args = parser.parse_args()
    library = _library_dir(args.python, args.library)
    arch = args.arch.replace(".", "")
    names = ",".join(KERNELS)
    print(f"{_uptime()} at the start; library {library}")
    samples: dict[str, list[float]] = {}

    def add(case: str, value: float) -> None:
        samples.setdefault(case, []).append(value)

    with tempfile.TemporaryDirectory() as scratch:
        big = generate_library(library, os.path.join(scratch, "big"), args.kernels, args.python)
        for round_ in range(args.rounds):
            for key, value in _child(args.python, _AOTC_START, _loaded_as(args.library), names).items():
                add(f"aotc start-up: {key}", value)
            if args.baseline_python:
                baseline = _child(args.baseline_python, _AOTC_START, _loaded_as(None), names)
                add("baseline aotc start-up: total", baseline["total"])
                add("baseline aotc start-up: total, CPU time", baseline["total, CPU time"])
            if args.peer_source and round_ < (args.peer_rounds or args.rounds):
                add("peer start-up: NVRTC compile of its kernels", _child(sys.executable, _PEER_START, args.peer_source, arch)["total"])
            small = _child(args.python, _AOTC_SIZE, library, names)
            large = _child(args.python, _AOTC_SIZE, big, names)
            add(f"aotc.load + 5 first uses, {int(small['kernels'])} kernels", small["load_and_uses"])
            add(f"aotc.load + 5 first uses, {int(large['kernels'])} kernels", large["load_and_uses"])
            add("ratio: large library / small", large["load_and_uses"] / small["load_and_uses"])
            add(f"aotc.load + 5 first uses, {int(small['kernels'])} kernels, CPU time", small["cpu"])
            add(f"aotc.load + 5 first uses, {int(large['kernels'])} kernels, CPU time", large["cpu"])
            add("ratio: large library / small, CPU time", large["cpu"] / small["cpu"])
    print(f"{_uptime()} at the end; medians of {args.rounds} interleaved rounds")
    if args.instructions:
        for who, python in (("aotc", args.python), ("baseline aotc", args.baseline_python)):
            if python:
                count = start_instructions(python, _loaded_as(args.library if who == "aotc" else None), names)
                print(f"  {who} start-up, instructions beyond `python -c pass`: {count / 1e6:.1f} M")
    for case, values in samples.items():
        median = statistics.median(values)
        shown = f"{median:.2f}x" if case.startswith("ratio") else f"{median * 1e3:9.2f} ms"
        print(f"  {case:55} {shown}   (min {min(values) * (1 if case.startswith('ratio') else 1e3):.2f})")
    small_case, large_case = (c for c in samples if c.startswith("aotc.load + 5") and not c.endswith("CPU time"))
    ratio_of_medians = statistics.median(samples[large_case]) / statistics.median(samples[small_case])
    print(f"  ratio of the medians, large library / small: {ratio_of_medians:.2f}x (target <= 1.5x)")
    if args.peer_source:
        ratio = statistics.median(samples["peer start-up: NVRTC compile of its kernels"]) / statistics.median(
            samples["aotc start-up: total"]
        )
        print(f"  peer start-up / aotc start-up: {ratio:.0f}x")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
