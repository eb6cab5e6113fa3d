"""Instructions per term of the backward kernels, now against a git revision's.

    python benchmarks/sass_backward.py [--arch 90] [--baseline a174b74]

The backward passes became deterministic (one thread owns a row of grad_A or a
column of grad_B and adds in a fixed order) where they were float-atomic
scatters. This renders the f32/f64 backward kernels of kernels/manifest.yaml
with the checkout's templates and with ``--baseline``'s, compiles each with nvcc
to sm_ARCH, and counts SASS instructions per global write (a write is a term:
STG in the deterministic loop, RED in the atomic kernel) with
``aotc.build.sass.per_write``. Needs nvcc and cuobjdump, no GPU. A static count:
it does not see memory coalescing or how many threads a launch has.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aotc.build import sass  # noqa: E402  (the checkout's, not an installed one)
from aotc.build.codegen import render_kernel  # noqa: E402
from aotc.build.manifest import load_manifest  # noqa: E402

__all__ = ["main"]

# The manifest's backward kernels, tiles included.
MANIFEST = """library: backward
archs: {sass: [ARCH], ptx: [ARCH]}
semirings:
  maxplus:  {add: max, mul: add, zero: -inf, one: 0}
  minplus:  {add: min, mul: add, zero: +inf, one: 0}
  maxmul:   {add: max, mul: mul, zero: -inf, one: 1}
dtypes: [f32, f64]
families:
  gemm:
    template: gemm.cu.j2
    matrix:
      - {semiring: [maxplus, minplus, maxmul], dtype: [f32, f64], pass: [backward_a, backward_b], variant: [single, batched]}
    tiles:
      f32: {block_m: 128, block_n: 128, block_k: 8, thread_m: 8, thread_n: 8}
      f64: {block_m: 64, block_n: 64, block_k: 8, thread_m: 4, thread_n: 4}
"""


def figures(templates: Path, work: Path, arch: str, tools: sass.Tools) -> dict[str, float]:
    """Instructions per term of each backward kernel rendered from ``templates``."""
    work.mkdir(parents=True)
    (work / "templates").symlink_to(templates)
    text = MANIFEST.replace("ARCH", arch).replace("library: backward", "library: backward\ntemplates: templates")
    (work / "manifest.yaml").write_text(text)
    manifest = load_manifest(work / "manifest.yaml")
    found = {}
    for kernel in manifest.kernels:
        source, cubin = work / f"{kernel.name}.cu", work / f"{kernel.name}.cubin"
        source.write_text(render_kernel(manifest, kernel))
        subprocess.run(["nvcc", "-cubin", f"-arch=sm_{arch}", "-o", str(cubin), str(source)], check=True, capture_output=True)
        found[kernel.name] = sass.per_write(tools.sass(cubin, arch))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="90", help="SASS architecture (default 90)")
    parser.add_argument("--baseline", default="a174b74", help="git revision with the atomic templates")
    args = parser.parse_args(argv)
    tools = sass.find_tools()
    if isinstance(tools, str):
        sys.exit(f"sass_backward: {tools}")
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "baseline"
        old.mkdir()
        command = ["git", "-C", str(REPO), "archive", args.baseline, "aotc/build/templates/tropical"]
        archive = subprocess.run(command, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        before = figures(old / "aotc/build/templates/tropical", Path(tmp) / "before", args.arch, tools)
        after = figures(REPO / "aotc/build/templates/tropical", Path(tmp) / "after", args.arch, tools)
    print(f"SASS sm_{args.arch}: instructions per term, {args.baseline} (atomic) against the checkout\n")
    print("| kernel | atomic | deterministic | ratio |")
    print("| --- | --- | --- | --- |")
    for name in before:
        print(f"| {name} | {before[name]:.2f} | {after[name]:.2f} | {after[name] / before[name]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
