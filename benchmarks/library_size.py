"""Run time against a library's size: the index as loaded, ``aotc.load``, a family's first call, a load by name (issue 39).

The libraries are the synthetic family of ``benchmarks/kernel_library.py``
(one family, ``y = x * a + b``, its points over axes of at most 64 values)
at each of ``--counts``. One library of it is built for real (``--base``: a
64-kernel build, fatbins and all); each count's index is grown from that
build's entries: every kernel under the generator's name and axis values for
that count, its other fields (signature, launch, the fatbin and source it
points at, seals recomputed) as the build writes them, and written by each
checkout's own index writer. So what a load reads is what a build of that
count writes, and the fatbins a first call reads and verifies are real.

Each sample is a fresh interpreter (``-P``, the checkout on PYTHONPATH), the
noop backend, NumPy and aotc's modules imported before the clock starts:

- **index bytes**: the size of ``index.json``, and the bytes ``aotc.load``
  read of it (``os.read`` and ``os.pread`` counted during the load);
- **load**: ``aotc.load(folder)``;
- **first family call**: ``aotc.kernels.over(lib).axpb(x, 2.0, 1.0, p0=..)``
  on 1,000 floats, at the last kernel's axis values: the family bound, the
  kernel chosen, checked and loaded, the call made;
- **load by name** (``--by-name``): ``import aotc`` and ``aotc.load(name)``,
  whole, beside the same by folder, with the library installed as a package
  declaring it (``aotc.libraries``) among ``--distributions`` others, in a
  site folder put first on the path (the checkout's venv site-packages after
  it, as it is). Its folders are dated a minute back, as folders not changed
  in the last two seconds are, and one load by name runs before the rounds:
  the samples are every later start's.

Rounds are interleaved (each checkout, each count), so drift in a shared
machine's load hits every case alike; medians are printed, with each
sample's CPU time beside the wall time. ``--instructions`` also counts each
stage's instructions under callgrind, which a machine's load does not move:
a process that stops after the stage less one that stops before it (within a
couple of million instructions of the interpreter's own exit). ``--repeat K``
times K loads and first calls in one process, each on a fresh ``Library``
(its own index and bindings; the modules imported once), the libraries
interleaved, in CPU time::

    python benchmarks/library_size.py --base /tmp/lib64/build/aotc/scale64/lib \\
        --counts 64,512,2048,10000 --root . --root /tmp/parent-checkout --rounds 9 --by-name 64 [--instructions] [--repeat 200]
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_GROW = """
import json, os, sys
sys.path.insert(0, sys.argv[4])
from kernel_library import _point, axes_for
from aotc.build.index_writer import dumps, seal
base, target, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
index = json.load(open(os.path.join(base, "index.json")))
for key in ("kernel_index", "kernel_families", "kernel_lines"):
    index.pop(key, None)
entries, sizes, kernels = list(index["kernels"].values()), axes_for(count), {}
for i in range(count):
    point = _point(i, sizes)
    name = "axpb_" + "_".join(map(str, point))
    entry = json.loads(json.dumps(entries[i % len(entries)]))
    entry["symbol"], entry["axes"] = name, {f"p{j}": v for j, v in enumerate(point)}
    kernels[name] = entry
index["kernels"] = kernels
open(os.path.join(target, "index.json"), "wb").write(dumps(seal(index)))
print(json.dumps({f"p{j}": v for j, v in enumerate(point)}))
"""

_CALL = """
import json, os, sys, time
import numpy as np
import aotc, aotc.kernels, aotc.runtime.library, aotc.runtime.backends.noop, aotc.index.library_index
from aotc.errors import AotcError
folder, point, stage = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "call"
x = np.ones(1000, np.float32)
if stage == "import":
    sys.exit(0)
read = [0]
def counted(function):
    def call(*args):
        data = function(*args)
        read[0] += len(data)
        return data
    return call
plain = os.read, os.pread
os.read, os.pread = counted(os.read), counted(os.pread)
start, cpu = time.perf_counter(), time.process_time()
try:
    lib = aotc.load(folder, backend="noop")
except AotcError as exc:
    print(json.dumps({"refused": str(exc)}))
    sys.exit(0)
loaded, loaded_cpu = time.perf_counter(), time.process_time()
os.read, os.pread = plain
if stage == "load":
    sys.exit(0)
y = aotc.kernels.over(lib).axpb(x, 2.0, 1.0, **point)
called, called_cpu = time.perf_counter(), time.process_time()
assert y.shape == x.shape
print(json.dumps({"load": loaded - start, "load, CPU": loaded_cpu - cpu, "first call": called - loaded,
                  "first call, CPU": called_cpu - loaded_cpu, "read at load": read[0]}))
"""

# Many loads and first calls in one process, each on a fresh Library (its own index
# object and bindings), the libraries interleaved: a figure descheduling does not move.
_REPEAT = """
import json, statistics, sys, time
import numpy as np
import aotc, aotc.kernels, aotc.runtime.library, aotc.runtime.backends.noop, aotc.index.library_index
cases, repeat = json.loads(sys.argv[1]), int(sys.argv[2])
x = np.ones(1000, np.float32)
found = {}
for _ in range(repeat):
    for folder, point in cases:
        start = time.process_time()
        lib = aotc.load(folder, backend="noop")
        loaded = time.process_time()
        aotc.kernels.over(lib).axpb(x, 2.0, 1.0, **point)
        found.setdefault(folder, []).append((loaded - start, time.process_time() - loaded))
print(json.dumps({folder: [statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)] for folder, samples in found.items()}))
"""

_BY = """
import json, sys, time
start, cpu = time.perf_counter(), time.process_time()
import aotc
lib = aotc.load(sys.argv[1], backend="noop")
print(json.dumps({"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu, "metadata": "importlib.metadata" in sys.modules}))
"""


def _child(root: str, code: str, *args: str, path: str = "", cache: str = "", counted: bool = False) -> dict[str, object]:
    """What the child printed; ``counted``: the instructions it ran, as callgrind counts them."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE",)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, root]))
    if cache:
        env["AOTC_CACHE_DIR"] = cache
    command = [sys.executable, "-P", "-c", code, *args]
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        if counted:  # one hash seed: the same process runs the same instructions
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command]
            env["PYTHONHASHSEED"] = "0"
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd="/", check=False)
        if done.returncode:
            raise SystemExit(f"{root}: child failed:\n{done.stderr[-3000:]}")
        if counted:
            with open(out) as file:
                return {"instructions": next(int(line.split()[1]) for line in file if line.startswith(("summary:", "totals:")))}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _instructions(roots: list[str], counts: list[int], libraries: dict[Any, Any], sites: dict[str, str], by_name: int, scratch: str, notes: dict[Any, str]) -> None:
    """Each stage's instructions (callgrind): a process that stops after it, less one that stops before it."""
    for root in roots:
        print(f"instructions, checkout {root}")
        for count in counts:
            if "refused" in notes[root, count]:
                continue
            folder, point = libraries[root, count]
            total = {stage: _child(root, _CALL, folder, point, stage, counted=True)["instructions"] for stage in ("import", "load", "call")}
            load, call = total["load"] - total["import"], total["call"] - total["load"]  # type: ignore[operator]
            print(f"  {count:6} kernels: load {load / 1e6:.2f} M  first call {call / 1e6:.2f} M")
        site = sites.get(root)
        if site:
            cache = os.path.join(scratch, f"cache{roots.index(root)}")
            folder = os.path.join(site, f"scale{by_name}pkg", "_kernels")
            found = {how: _child(root, _BY, target, path=site, cache=cache, counted=True)["instructions"] for how, target in (("folder", folder), ("name", f"scale{by_name}"))}
            print(f"  import + load by folder {found['folder'] / 1e6:.2f} M, by name {found['name'] / 1e6:.2f} M: {(found['name'] - found['folder']) / 1e6:+.2f} M")  # type: ignore[operator]


def _grow(root: str, base: str, target: str, count: int) -> str:
    """The library of ``count`` kernels at ``target``, written by ``root``'s aotc; returns its last point (JSON)."""
    shutil.copytree(base, target)
    here = os.path.dirname(os.path.abspath(__file__))
    return json.dumps(_child(root, _GROW, base, target, str(count), here))


def _site(site: str, library: str, name: str, others: int) -> str:
    """A site folder holding ``library`` as a package declaring ``name``, and ``others`` distributions."""
    os.makedirs(site)
    for i in range(others):
        info = os.path.join(site, f"other{i}-1.0.dist-info")
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as file:
            file.write(f"Metadata-Version: 2.1\nName: other{i}\nVersion: 1.0\n")
        if i % 2:
            with open(os.path.join(info, "entry_points.txt"), "w") as file:
                file.write(f"[console_scripts]\nother{i} = other{i}:main\n")
    info = os.path.join(site, f"{name}_kernels-0.1.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as file:
        file.write(f"Metadata-Version: 2.1\nName: {name}-kernels\nVersion: 0.1.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as file:
        file.write(f"[aotc.libraries]\n{name} = {name}pkg._kernels\n")
    os.makedirs(os.path.join(site, f"{name}pkg"))
    open(os.path.join(site, f"{name}pkg", "__init__.py"), "w").close()
    shutil.copytree(library, os.path.join(site, f"{name}pkg", "_kernels"))
    past = time.time() - 60
    for folder, _, files in os.walk(site):
        for entry in [folder, *(os.path.join(folder, f) for f in files)]:
            os.utime(entry, (past, past))
    return site


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="a built library of benchmarks/kernel_library.py (64 kernels)")
    parser.add_argument("--counts", default="64,512,2048,10000")
    parser.add_argument("--root", action="append", help="a checkout to run (repeatable; default: this one)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--by-name", type=int, metavar="N", help="also time a load by name of the N-kernel library")
    parser.add_argument("--distributions", type=int, default=300, help="other distributions installed beside it")
    parser.add_argument("--instructions", action="store_true", help="also count each stage's instructions under callgrind (needs valgrind)")
    parser.add_argument("--repeat", type=int, default=0, metavar="K", help="also time K loads and first calls in one process, each on a fresh Library")
    args = parser.parse_args()
    roots = [os.path.abspath(r) for r in args.root or [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]]
    counts = [int(c) for c in args.counts.split(",")]
    samples: dict[tuple[str, int, str], list[float]] = {}
    notes: dict[tuple[str, int], str] = {}
    with open("/proc/loadavg") as loadavg:
        print(f"load average {' '.join(loadavg.read().split()[:3])} at the start")
    with tempfile.TemporaryDirectory() as scratch:
        libraries = {}
        for i, root in enumerate(roots):
            for count in counts:
                folder = os.path.join(scratch, f"tree{i}", f"n{count}")
                libraries[root, count] = (folder, _grow(root, args.base, folder, count))
                notes[root, count] = f"index.json {os.path.getsize(os.path.join(folder, 'index.json')):,} bytes"
        sites = {
            root: _site(os.path.join(scratch, f"site{i}"), libraries[root, args.by_name][0], f"scale{args.by_name}", args.distributions)
            for i, root in enumerate(roots) if args.by_name
        }  # fmt: skip
        for root, site in sites.items():  # a first load by name, which keeps what it read where the checkout does
            _child(root, _BY, f"scale{args.by_name}", path=site, cache=os.path.join(scratch, f"cache{roots.index(root)}"))
        for _ in range(args.rounds):
            for root in roots:
                for count in counts:
                    folder, point = libraries[root, count]
                    result = _child(root, _CALL, folder, point)
                    if "refused" in result:
                        notes[root, count] = notes[root, count].split("; refused")[0] + f"; refused: {result['refused']}"
                        continue
                    for key, value in result.items():
                        samples.setdefault((root, count, key), []).append(float(value))  # type: ignore[arg-type]
                site = sites.get(root, "")
                if site:
                    cache = os.path.join(scratch, f"cache{roots.index(root)}")
                    folder = os.path.join(site, f"scale{args.by_name}pkg", "_kernels")
                    for how, target in (("by folder", folder), ("by name", f"scale{args.by_name}")):
                        result = _child(root, _BY, target, path=site, cache=cache)
                        samples.setdefault((root, -1, f"{how}"), []).append(float(result["wall"]))  # type: ignore[arg-type]
                        samples.setdefault((root, -1, f"{how}, CPU"), []).append(float(result["cpu"]))  # type: ignore[arg-type]
        for root in roots if args.repeat else ():
            cases = [(libraries[root, count][0], json.loads(libraries[root, count][1])) for count in counts if "refused" not in notes[root, count]]
            found = _child(root, _REPEAT, json.dumps(cases), str(args.repeat))
            print(f"in one process, {args.repeat} each, CPU time, checkout {root}")
            for count in counts:
                if libraries[root, count][0] in found:
                    load, call = found[libraries[root, count][0]]  # type: ignore[misc]
                    print(f"  {count:6} kernels: load {load * 1e3:.3f} ms  first call on a fresh Library {call * 1e3:.3f} ms")
        if args.instructions:
            _instructions(roots, counts, libraries, sites, args.by_name, scratch, notes)
    with open("/proc/loadavg") as loadavg:
        print(f"load average {' '.join(loadavg.read().split()[:3])} at the end; medians of {args.rounds} interleaved rounds")
    for root in roots:
        print(f"checkout {root}")
        for count in counts:
            row = {key: statistics.median(values) for (r, c, key), values in samples.items() if r == root and c == count}
            shown = "  ".join(f"{key} {value / 1024:,.1f} KiB" if key == "read at load" else f"{key} {value * 1e3:.2f} ms" for key, value in row.items())
            print(f"  {count:6} kernels: {notes[root, count]}; {shown or 'no samples'}")
        if sites:
            row = {key: statistics.median(values) for (r, c, key), values in samples.items() if r == root and c == -1}
            print(f"  import + load, {args.by_name} kernels, {args.distributions} other distributions: " + "  ".join(f"{key} {value * 1e3:.2f} ms" for key, value in row.items()))


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
