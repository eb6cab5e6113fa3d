"""Start-up of a declared library, whole: import, load, first call; and its cost against the library's size.

Each sample is a fresh interpreter, timed from inside (``time.perf_counter``)
after NumPy is imported: ``import aotc.kernels``, ``aotc.load(library)`` on
the noop backend with ``aotc.kernels.over``, and the first
``softmax(x)`` of a 64x64 float32 array (the family bound, its kernels
checked, the kernel loaded, the call made). Cases, interleaved round by round:

- the rowops library as built (8 kernels);
- the same library grown to ``--kernels`` kernels: scan's entries repeated
  under new names and new values of its ``items`` axis, resealed and written
  by the checkout's own index writer, pointing at the same files;
- tropical's start beside them: ``import aotc.tropical``, load, the first
  ``matmul``.

``--root`` runs another checkout (a parent's worktree) the same way, so two
trees are compared in one run. Compile each checkout's bytecode first
(``python -m compileall -q aotc``), as ``pip install`` does: where
PYTHONDONTWRITEBYTECODE is set, a tree without it compiles every module in
every sample.

    python benchmarks/declared_startup.py --library ROWOPS_LIB --tropical TROPICAL_LIB [--root CHECKOUT] [--rounds 9] [--kernels 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

_DECLARED = """
import sys, time
import numpy as np
x = np.ones((64, 64), np.float32)
start = time.perf_counter()
import aotc, aotc.kernels
imported = time.perf_counter()
kernels = aotc.kernels.over(aotc.load(sys.argv[1], backend="noop"))
loaded = time.perf_counter()
kernels.softmax(x)
used = time.perf_counter()
print(imported - start, loaded - imported, used - loaded)
"""

_TROPICAL = """
import sys, time
import numpy as np
x = np.ones((64, 64), np.float32)
start = time.perf_counter()
import aotc, aotc.tropical
imported = time.perf_counter()
aotc.tropical.set_library(aotc.load(sys.argv[1], backend="noop"))
loaded = time.perf_counter()
aotc.tropical.matmul(x, x)
used = time.perf_counter()
print(imported - start, loaded - imported, used - loaded)
"""

_GROW = """
import json, shutil, sys
from pathlib import Path
from aotc.build.index_writer import dumps, seal
source, target, size = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
shutil.copytree(source, target)
index = json.loads((target / "index.json").read_text())
kernels, scans, i = index["kernels"], [n for n, e in index["kernels"].items() if e["family"] == "scan"], 0
while len(kernels) < size:
    entry = json.loads(json.dumps(kernels[scans[i % len(scans)]]))
    entry["axes"]["items"] = 1000 + i
    kernels[f"{scans[i % len(scans)]}_{i}"] = entry
    i += 1
(target / "index.json").write_bytes(dumps(seal(index)))
"""


def _run(root: str, code: str, *args: str) -> list[float]:
    env = {**os.environ, "PYTHONPATH": root, "AOTC_CACHE_DIR": os.path.join(tempfile.gettempdir(), "aotc-startup-bench")}
    # -P: the working directory is not put first on sys.path, so the child imports ``root``'s aotc.
    done = subprocess.run([sys.executable, "-P", "-c", code, *args], capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return [float(v) * 1000 for v in done.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="a built examples/rowops library folder")
    parser.add_argument("--tropical", required=True, help="a built tropical library folder")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), help="the checkout to run")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--kernels", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        grown = os.path.join(scratch, "grown")
        _run(args.root, _GROW, args.library, grown, str(args.kernels))
        cases = {
            "rowops, 8 kernels": (_DECLARED, args.library),
            f"rowops grown to {args.kernels} kernels": (_DECLARED, grown),
            "tropical": (_TROPICAL, args.tropical),
        }
        samples: dict[str, list[list[float]]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, (code, library) in cases.items():
                samples[name].append(_run(args.root, code, library))
    print(f"start-up, noop backend, median of {args.rounds} fresh interpreters each, checkout {args.root}")
    for name, rows in samples.items():
        imported, loaded, used = (statistics.median(column) for column in zip(*rows))
        total = statistics.median(sum(row) for row in rows)
        print(f"  {name:34} import {imported:6.2f} ms  load {loaded:6.2f} ms  first call {used:6.2f} ms  total {total:6.2f} ms")


if __name__ == "__main__":
    main()
