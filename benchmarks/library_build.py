"""Build cost against library size: N tiny kernels built, rebuilt, edited and packed, per aotc checkout.

    python benchmarks/library_build.py --sizes 64,512,2048 --compilers nvcc,nvrtc \\
        --checkout this=. --checkout parent=/tmp/base [--listed 10000] [--built 10000] [--tropical]

For each size N, each compiler and each checkout, in turn (so the checkouts
share the machine's load), the project ``benchmarks/kernel_library.py`` writes
(N kernels ``y = x * a + b``, sm_80 SASS + PTX) is built through CMake and
Ninja against that checkout's aotc (``find_package(aotc)``):

- cold: configure and build in a new build folder with an empty fatbin cache:
  wall, and CPU (user + sys of every process the build ran), per kernel too;
- nvcc alone: ``nvcc -fatbin`` with the build's flags on one generated
  source, five times, in the same run: what one kernel costs the compiler;
- no-op: the build again (median of 3);
- one-kernel edit: kernel K's constant changed in the manifest, then back,
  for three K (median of the six builds), and how many kernels each compiled;
- index bytes; and the wheel (``pip wheel --no-build-isolation``, its
  kernels from the fatbin cache the cold build filled): bytes and files.

``--listed N`` times ``aotc list`` and ``aotc generate`` of an N-kernel
manifest; ``--built N`` builds N with the last compiler and this checkout
only; ``--tropical`` builds aotc's own library (the full architecture
matrix, nvcc, an empty fatbin cache) from each checkout. A checkout whose
manifest caps refuse N says so in its row. Prints Markdown; each row names
the one-minute load when it started (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_library

_COMPILED = re.compile(r"aotc: \w+: compiling (\w+)")
NVCC_FLAGS = ["-fatbin", "--resource-usage", "--generate-code=arch=compute_80,code=[sm_80,compute_80]", "--compress-mode=size"]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str, int]:
    """(wall, CPU of the command and everything it ran, its output, its exit status).
    Run from the filesystem root: ``python -m aotc`` would import an aotc in the
    working directory before the checkout's."""
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, cwd="/", capture_output=True, text=True, check=False)
    return time.perf_counter() - start, _cpu() - cpu, done.stdout + done.stderr, done.returncode


def _load() -> float:
    return os.getloadavg()[0]


def _env(checkout: Path, compiler: str, cache: Path) -> dict[str, str]:
    env = {**os.environ, "AOTC_BUILD_CACHE_DIR": str(cache), "AOTC_COMPILER": compiler, "SOURCE_DATE_EPOCH": "1700000000"}
    env.pop("AOTC_BUILD_CACHE", None)
    # Python caches bytecode by default (and pip compiles an installed aotc's):
    # without this, a shell that sets it recompiles aotc's modules in every step.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(checkout)  # aotc list / generate, and pip's view of aotc
    return env


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def nvcc_alone(source: Path, work: Path, runs: int = 5) -> tuple[float, float]:
    """Median (CPU, wall) of ``nvcc -fatbin`` with the build's flags on ``source``."""
    cpus, walls = [], []
    for _ in range(runs):
        wall, cpu, out, rc = _timed(["nvcc", *NVCC_FLAGS, "-o", str(work / "alone.fatbin"), str(source)], dict(os.environ))
        if rc:
            sys.exit(f"nvcc alone failed: {out[-2000:]}")
        cpus.append(cpu)
        walls.append(wall)
    return _median(cpus), _median(walls)


def build_library(root: Path, count: int, label: str, checkout: Path, compiler: str, work: Path) -> dict[str, object]:
    """One checkout's figures for the N-kernel project at ``root``."""
    row: dict[str, object] = {"n": count, "checkout": label, "compiler": compiler, "load": round(_load(), 1)}
    cache = work / f"cache-{label}-{compiler}-{count}"
    shutil.rmtree(cache, ignore_errors=True)
    env = _env(checkout, compiler, cache)
    build = work / f"build-{label}-{compiler}-{count}"
    shutil.rmtree(build, ignore_errors=True)
    kernel_library.write_library(root, count)
    configure = ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja", f"-Daotc_DIR={checkout}/aotc/build/cmake", f"-DPython_EXECUTABLE={sys.executable}"]
    wall, cpu, out, rc = _timed(configure, env)
    if rc:
        reason = re.search(r"over the limit of .*? a library", " ".join(out.split()))
        row["refused"] = reason[0] if reason else out.strip().splitlines()[-1][:120]
        return row
    build_wall, build_cpu, out, rc = _timed(["cmake", "--build", str(build)], env)
    if rc:
        sys.exit(f"{label} {compiler} {count}: build failed:\n{out[-3000:]}")
    row.update(cold_wall=wall + build_wall, cold_cpu=cpu + build_cpu, compiled=len(_COMPILED.findall(out)))
    row["cpu_per_kernel"] = row["cold_cpu"] / count
    first = sorted((build / "aotc" / f"scale{count}" / "gen").glob("*.cu"))[0]
    row["nvcc_alone_cpu"], row["nvcc_alone_wall"] = nvcc_alone(first, work)
    row["ratio"] = row["cpu_per_kernel"] / row["nvcc_alone_cpu"]
    noops = [_timed(["cmake", "--build", str(build)], env)[:2] for _ in range(3)]
    row["noop_wall"], row["noop_cpu"] = _median([w for w, _ in noops]), _median([c for _, c in noops])
    edits, counts = [], []
    for k in (count // 3, count // 2, 2 * count // 3):
        for edit in (k, None):
            kernel_library.write_library(root, count, edit=edit)
            wall, cpu, out, rc = _timed(["cmake", "--build", str(build)], env)
            if rc:
                sys.exit(f"{label} {compiler} {count}: edit build failed:\n{out[-3000:]}")
            edits.append((wall, cpu))
            counts.append(len(_COMPILED.findall(out)))
    row["edit_wall"], row["edit_cpu"] = _median([w for w, _ in edits]), _median([c for _, c in edits])
    row["edit_compiled"] = sorted(set(counts))
    row["index_bytes"] = (build / "aotc" / f"scale{count}" / "lib" / "index.json").stat().st_size
    wheels = work / f"wheels-{label}-{compiler}-{count}"
    shutil.rmtree(wheels, ignore_errors=True)
    command = [
        sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--quiet", "-w", str(wheels),
        "-C", f"cmake.define.aotc_DIR={checkout}/aotc/build/cmake", "-C", f"build-dir={work}/wheel-build-{label}-{compiler}-{count}", str(root),
    ]  # fmt: skip
    row["wheel_wall"], _, out, rc = _timed(command, env)
    if rc:
        sys.exit(f"{label} {compiler} {count}: pip wheel failed:\n{out[-3000:]}")
    (wheel,) = wheels.glob("*.whl")
    row["wheel_bytes"] = wheel.stat().st_size
    row["wheel_files"] = len(zipfile.ZipFile(wheel).namelist())
    shutil.rmtree(build, ignore_errors=True)
    shutil.rmtree(work / f"wheel-build-{label}-{compiler}-{count}", ignore_errors=True)
    return row


def listed(root: Path, count: int, label: str, checkout: Path, work: Path) -> dict[str, object]:
    """``aotc list`` and ``aotc generate`` of an N-kernel manifest, through the checkout's aotc."""
    manifest = kernel_library.write_library(root, count)
    env = _env(checkout, "auto", work / "unused-cache")
    row: dict[str, object] = {"n": count, "checkout": label, "load": round(_load(), 1)}
    wall, cpu, out, rc = _timed([sys.executable, "-m", "aotc", "list", str(manifest)], env)
    if rc:
        row["refused"] = " ".join(out.split())[-140:]
        return row
    row["list_wall"], row["list_cpu"] = wall, cpu
    gen = work / f"gen-{label}-{count}"
    shutil.rmtree(gen, ignore_errors=True)
    row["generate_wall"], row["generate_cpu"], out, rc = _timed([sys.executable, "-m", "aotc", "generate", str(manifest), "-o", str(gen)], env)
    if rc:
        sys.exit(f"aotc generate failed: {out[-2000:]}")
    row["regenerate_wall"], row["regenerate_cpu"], _, _ = _timed([sys.executable, "-m", "aotc", "generate", str(manifest), "-o", str(gen)], env)
    shutil.rmtree(gen, ignore_errors=True)
    return row


def tropical(label: str, checkout: Path, work: Path) -> dict[str, object]:
    """A cold build of aotc's own library, full matrix, nvcc, empty fatbin cache."""
    build, cache = work / f"tropical-{label}", work / f"tropical-cache-{label}"
    for path in (build, cache):
        shutil.rmtree(path, ignore_errors=True)
    env = _env(checkout, "nvcc", cache)
    row: dict[str, object] = {"checkout": label, "load": round(_load(), 1)}
    wall, cpu, out, rc = _timed(["cmake", "-S", str(checkout), "-B", str(build), "-G", "Ninja", f"-DPython3_EXECUTABLE={sys.executable}"], env)
    if rc:
        sys.exit(f"tropical configure failed: {out[-2000:]}")
    build_wall, build_cpu, out, rc = _timed(["cmake", "--build", str(build)], env)
    if rc:
        sys.exit(f"tropical build failed: {out[-3000:]}")
    row.update(cold_wall=wall + build_wall, cold_cpu=cpu + build_cpu, compiled=len(_COMPILED.findall(out)))
    shutil.rmtree(build, ignore_errors=True)
    return row


def _fmt(row: dict[str, object], key: str, unit: str = "s", digits: int = 1) -> str:
    value = row.get(key)
    return "-" if value is None else f"{value:.{digits}f} {unit}".strip()


def table(rows: list[dict[str, object]]) -> str:
    head = "| N | checkout | compiler | cold wall | cold CPU | CPU a kernel | nvcc alone (CPU) | ratio | no-op | one-kernel edit | compiled | index | wheel | wheel files | load |"
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for row in rows:
        if "refused" in row:
            lines.append(f"| {row['n']} | {row['checkout']} | {row['compiler']} | refused: {row['refused']} |" + " |" * 11 + f" {row['load']} |")
            continue
        lines.append(
            f"| {row['n']} | {row['checkout']} | {row['compiler']} | {_fmt(row, 'cold_wall')} | {_fmt(row, 'cold_cpu')} "
            f"| {row['cpu_per_kernel'] * 1000:.0f} ms | {row['nvcc_alone_cpu'] * 1000:.0f} ms | {row['ratio']:.2f}x "
            f"| {_fmt(row, 'noop_wall', digits=2)} | {_fmt(row, 'edit_wall', digits=2)} ({_fmt(row, 'edit_cpu', digits=2)} CPU) "
            f"| {'/'.join(map(str, row['edit_compiled']))} | {row['index_bytes'] / 1e6:.2f} MB | {row['wheel_bytes'] / 1e6:.2f} MB | {row['wheel_files']} | {row['load']} |"
        )
    return "\n".join(lines)


def _checkouts(specs: list[str]) -> list[tuple[str, Path]]:
    found = []
    for spec in specs:
        label, _, path = spec.partition("=")
        found.append((label, Path(path).resolve()))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,512,2048", help="kernel counts to build, comma-separated")
    parser.add_argument("--compilers", default="nvcc,nvrtc", help="AOTC_COMPILER values, comma-separated")
    parser.add_argument("--checkout", action="append", default=[], metavar="LABEL=PATH", help="an aotc source tree (default: this=.)")
    parser.add_argument("--listed", type=int, action="append", default=[], help="also time aotc list and generate of N kernels")
    parser.add_argument("--built", type=int, action="append", default=[], help="also build N kernels: this checkout, the last compiler")
    parser.add_argument("--tropical", action="store_true", help="also a cold full-matrix build of aotc's own library")
    parser.add_argument("--work", type=Path, help="a scratch folder (default: a new temporary one)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    checkouts = _checkouts(args.checkout or ["this=."])
    work = args.work or Path(tempfile.mkdtemp(prefix="aotc-library-build-"))
    work.mkdir(parents=True, exist_ok=True)
    compilers = args.compilers.split(",")
    results: dict[str, list[dict[str, object]]] = {"built": [], "listed": [], "tropical": []}
    for count in [int(n) for n in args.sizes.split(",") if n]:
        for compiler in compilers:
            for label, checkout in checkouts:
                row = build_library(work / f"project-{count}", count, label, checkout, compiler, work)
                results["built"].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    for count in args.built:
        row = build_library(work / f"project-{count}", count, checkouts[0][0], checkouts[0][1], compilers[-1], work)
        results["built"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    for count in args.listed:
        for label, checkout in checkouts:
            row = listed(work / f"listed-{count}", count, label, checkout, work)
            results["listed"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    if args.tropical:
        for label, checkout in checkouts:
            row = tropical(label, checkout, work)
            results["tropical"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(table(results["built"]))
    for row in results["listed"]:
        print(json.dumps(row))
    for row in results["tropical"]:
        print(json.dumps(row))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
