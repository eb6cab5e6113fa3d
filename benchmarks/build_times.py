"""Full-matrix build times through pip, and what the wheel weighs (issue 11).

    python benchmarks/build_times.py [--archs "75;80;..."] [--skip-sccache]

Everything goes through ``pip install -v .`` with pip's default build
isolation, in a venv that has nothing but pip, from clones of HEAD:

1. cold: a fresh clone, empty build directory;
2. no-op: the same command again;
3. one edit: one line appended to ``gemm/backward.cuh.j2``;
4. compiler cache: two more fresh clones (new build directories, new pip
   environments) built with ``AOTC_COMPILER_LAUNCHER=sccache`` and one
   ``SCCACHE_DIR``: the first fills the cache, the second hits it.

Also the installed size of the library folder and the wheel's size, with the
default compression (``size``) and with nvcc's old default mode, rebuilt in the
same clone (``AOTC_FATBIN_COMPRESSION=default``). Prints Markdown tables;
needs nvcc on PATH and the network for pip.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_COMPILING = re.compile(r"aotc: tropical: compiling (\w+)")


def _run(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[float, int]:
    """Wall seconds, and how many kernels the build compiled."""
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        sys.exit(f"{tail}\nbuild_times: {' '.join(command)} failed in {cwd}")
    return seconds, len(_COMPILING.findall(result.stdout + result.stderr))


def _clone(work: Path, name: str) -> Path:
    target = work / name
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(target)], check=True)
    return target


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default="", help="AOTC_ARCHS for every build (default: the manifest's full matrix)")
    parser.add_argument("--skip-sccache", action="store_true", help="leave out the compiler-cache builds")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="aotc-build-times-") as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
        python = str(work / "venv" / "bin" / "python")
        env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
        if args.archs:
            env["AOTC_ARCHS"] = args.archs
        install = [python, "-m", "pip", "install", "-v", "."]
        rows = []

        clone = _clone(work, "clone")
        rows.append(("cold build", *_run(install, clone, env, work / "cold.log")))
        rows.append(("no-op rebuild", *_run(install, clone, env, work / "noop.log")))
        template = clone / "aotc" / "build" / "templates" / "tropical" / "gemm" / "backward.cuh.j2"
        template.write_text(template.read_text() + "// edited\n")
        rows.append(("one template edit (backward.cuh.j2)", *_run(install, clone, env, work / "edit.log")))
        subprocess.run(["git", "checkout", "--quiet", "--", "."], cwd=clone, check=True)
        rows.append(("edit reverted", *_run(install, clone, env, work / "revert.log")))

        sizes = {}
        for mode in ("size", "default"):
            mode_env = dict(env, AOTC_FATBIN_COMPRESSION=mode)
            if mode != "size":
                rows.append((f"rebuild with AOTC_FATBIN_COMPRESSION={mode}", *_run(install, clone, mode_env, work / f"{mode}.log")))
            # From the work folder: run in the checkout, -c would import its aotc, not the installed one.
            site = subprocess.run(
                [python, "-c", "import aotc; print(aotc.library_dir('tropical'))"], cwd=work, capture_output=True, text=True, check=True
            )
            wheels = work / f"wheel-{mode}"
            subprocess.run([python, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), "."], cwd=clone, env=mode_env, check=True)
            sizes[mode] = (_size(Path(site.stdout.strip())), next(wheels.glob("*.whl")).stat().st_size)

        if not args.skip_sccache:
            subprocess.run([python, "-m", "pip", "install", "-q", "sccache"], check=True, env=env)
            sccache = str(work / "venv" / "bin" / "sccache")
            cache_env = dict(env, AOTC_COMPILER_LAUNCHER=sccache, SCCACHE_DIR=str(work / "sccache"))
            subprocess.run([sccache, "--stop-server"], env=cache_env, capture_output=True, check=False)
            # Started here, not by the first compile, so no compile waits on its start-up.
            subprocess.run([sccache, "--start-server"], env=cache_env, capture_output=True, check=True)
            rows.append(("sccache, cold cache, new clone", *_run(install, _clone(work, "cold-cache"), cache_env, work / "sccache-cold.log")))
            subprocess.run([sccache, "--zero-stats"], env=cache_env, capture_output=True, check=True)
            rows.append(("sccache, warm cache, new clone", *_run(install, _clone(work, "warm-cache"), cache_env, work / "sccache-warm.log")))
            stats = subprocess.run([sccache, "--show-stats"], env=cache_env, capture_output=True, text=True, check=True).stdout
            hits = re.search(r"Cache hits\s+(\d+)", stats)
            misses = re.search(r"Cache misses\s+(\d+)", stats)
            subprocess.run([sccache, "--stop-server"], env=cache_env, capture_output=True, check=False)

    print(f"archs: {args.archs or 'the manifest (full matrix)'}; {os.cpu_count()} CPUs\n")
    print("| build, through `pip install -v .` | wall | kernels compiled |")
    print("| --- | --- | --- |")
    for name, seconds, compiled in rows:
        print(f"| {name} | {seconds:.1f} s | {compiled} |")
    print("\n| fatbin compression | installed library folder | wheel |")
    print("| --- | --- | --- |")
    for mode, (installed, wheel) in sizes.items():
        print(f"| {mode} | {installed / 1e6:.2f} MB | {wheel / 1e6:.2f} MB |")
    if not args.skip_sccache:
        print(f"sccache on the warm build: {hits[1] if hits else '?'} hits, {misses[1] if misses else '?'} misses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
