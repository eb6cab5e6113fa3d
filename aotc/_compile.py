"""One kernel's compile step: a generated ``.cu`` in, its fatbin and ptxas report out.

The build runs this once per kernel, through the wrapper script that the
configure step writes (``<build>/aotc-tools/aotc-compile``). The command line
names only build-relative files and the architecture lists, so it is the same
in every pip build environment; which compiler runs, and through which
launcher (ccache, sccache), comes from the wrapper's environment:

- ``AOTC_TOOLCHAIN_KIND``: ``nvcc`` or ``nvrtc``
- ``AOTC_TOOLCHAIN_NVCC``: nvcc's path (``nvcc`` only)
- ``AOTC_TOOLCHAIN_CUDA``: the CUDA major, for NVRTC's libraries
- ``AOTC_COMPILER_LAUNCHER``: a compiler launcher, ``;``-separated, or empty

Imports only the standard library on the nvcc path: it runs for every kernel
of every build, so its start-up is paid a thousand times.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["main", "nvcc_command"]

COMPRESS_MODES = ("size", "balance", "speed", "default", "none")


def _arch_list(text: str) -> list[str]:
    return [a for a in text.replace(";", ",").split(",") if a]


def nvcc_command(nvcc: str, source: str, out: str, sass: list[str], ptx: list[str], *, werror: bool, compress: str) -> list[str]:
    """nvcc's arguments for one fatbin: SASS per ``sass`` arch, PTX per ``ptx`` arch."""
    command = [nvcc, "-fatbin", "--resource-usage"]
    for arch in sass:
        code = f"[sm_{arch},compute_{arch}]" if arch in ptx else f"sm_{arch}"
        command.append(f"--generate-code=arch=compute_{arch},code={code}")
    for arch in ptx:
        if arch not in sass:
            command.append(f"--generate-code=arch=compute_{arch},code=compute_{arch}")
    if werror:
        command += ["-Werror", "all-warnings"]
    if compress == "none":
        command.append("--no-compress")
    elif compress != "default":
        command.append(f"--compress-mode={compress}")
    return [*command, "-o", out, source]


def _run_nvcc(args: argparse.Namespace, sass: list[str], ptx: list[str]) -> int:
    nvcc = os.environ.get("AOTC_TOOLCHAIN_NVCC") or "nvcc"
    launcher = [part for part in os.environ.get("AOTC_COMPILER_LAUNCHER", "").split(";") if part]
    command = launcher + nvcc_command(nvcc, args.source, args.out, sass, ptx, werror=args.werror, compress=args.compress)
    result = subprocess.run(command, stderr=subprocess.PIPE, check=False)
    # ptxas' report goes to stderr: keep it for the index, and show it in the log.
    if args.resources:
        Path(args.resources).write_bytes(result.stderr)
    sys.stderr.buffer.write(result.stderr)
    return result.returncode


def _run_nvrtc(args: argparse.Namespace, sass: list[str], ptx: list[str]) -> int:
    from aotc import _nvrtc_fatbin

    argv = ["--cuda", os.environ.get("AOTC_TOOLCHAIN_CUDA", "13"), "--sass", ",".join(sass), "--ptx", ",".join(ptx), "--out", args.out]
    if args.resources:
        argv += ["--resources", args.resources]
    if args.werror:
        argv.append("--werror")
    argv.append(f"--compress={args.compress}")
    return _nvrtc_fatbin.main([*argv, args.source])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aotc-compile")
    parser.add_argument("--out", required=True)
    parser.add_argument("--resources", default="")
    parser.add_argument("--sass", default="")
    parser.add_argument("--ptx", default="")
    parser.add_argument("--werror", action="store_true")
    parser.add_argument("--compress", choices=COMPRESS_MODES, default="size")
    parser.add_argument("source")
    args = parser.parse_args(argv)
    sass, ptx = _arch_list(args.sass), _arch_list(args.ptx)
    kind = os.environ.get("AOTC_TOOLCHAIN_KIND", "nvcc")
    return _run_nvrtc(args, sass, ptx) if kind == "nvrtc" else _run_nvcc(args, sass, ptx)


if __name__ == "__main__":
    sys.exit(main())
