"""Which compiler builds a kernel library's fatbins, and what it is.

The build asks this module once per configure (``python -m aotc.build.toolchain``)
and never puts the answer's paths in a compile command: the commands stay
byte-identical across pip's throwaway build environments, and only a change of
the compiler's *identity* (kind and version, written to a stamp file) makes
ninja recompile.

Two kinds of toolchain build the same fatbins:

- ``nvcc``: a CUDA toolkit. Searched in this order: ``AOTC_NVCC``, CMake's
  ``CMAKE_CUDA_COMPILER`` (passed in), ``CUDACXX``, ``nvcc`` on ``PATH``,
  ``CUDA_HOME`` / ``CUDA_PATH``, and an ``nvidia-cuda-nvcc`` wheel installed in
  this Python. Nothing is guessed beyond these (no ``/usr/local/cuda``): a
  toolkit that isn't named anywhere is not the one the user means. Only an nvcc of the requested CUDA major counts.
- ``nvrtc``: no toolkit at all. NVRTC compiles each kernel for every
  architecture and nvFatbin bundles the images (``aotc.build.nvrtc_fatbin``), both
  from PyPI wheels. This is how a machine without a toolkit builds, and how the
  CUDA 12 lane builds where no CUDA 12 toolkit is installed.

Imports only the standard library: it runs at configure time and inside the
build backend, before any build requirement may be importable.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from aotc.errors import BuildError, ToolchainError

__all__ = [
    "CUDA_LANES",
    "Toolchain",
    "find_nvcc",
    "find_toolchain",
    "lane_requirements",
    "main",
    "nvcc_version",
]

# The CUDA major versions aotc builds for: the oldest driver that loads a lane's
# images (cuDriverGetVersion units: R580 for 13, R525 for 12 through CUDA's
# minor-version compatibility), the wheel that carries them, and the PyPI
# compilers that build them without a toolkit (12.8 is the first CUDA 12 to
# know sm_100 and sm_120).
CUDA_LANES = {
    "13": {"min_driver": 13000, "wheel": "aotc", "nvrtc": ["nvidia-cuda-nvrtc>=13.0,<14", "nvidia-nvfatbin>=13.0,<14"]},
    "12": {"min_driver": 12000, "wheel": "aotc-cuda12x", "nvrtc": ["nvidia-cuda-nvrtc-cu12>=12.8,<13", "nvidia-nvfatbin-cu12>=12.8,<13"]},
}
_VERSION = re.compile(r"release (\d+)\.(\d+), V(\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class Toolchain:
    """The compiler that builds one configure's fatbins."""

    kind: str  # "nvcc" or "nvrtc"
    path: str  # nvcc's path; empty for nvrtc (its libraries are found at compile time)
    version: str  # full toolkit version, "13.0.88"
    cuda: str  # the lane, "12" or "13"
    origin: str  # where it was found, for the build log
    detail: str = ""  # more of what the output depends on (nvFatbin's version)

    @property
    def identity(self) -> str:
        """What the fatbins depend on: a change here recompiles every kernel."""
        return " ".join(filter(None, (self.kind, self.version, f"cuda{self.cuda}", self.detail)))


def nvcc_version(nvcc: str) -> str | None:
    """``nvcc --version``'s full version ("13.0.88"), or None if it doesn't run."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except OSError:
        return None
    match = _VERSION.search(out)
    return match[3] if match else None


def _pypi_nvcc_candidates() -> list[Path]:
    """nvcc from an ``nvidia-cuda-nvcc`` wheel in this Python (cu13: nvidia/cu13/bin; cu12: nvidia/cuda_nvcc/bin)."""
    found = []
    for entry in sys.path:
        nvidia = Path(entry or ".") / "nvidia"
        for sub in ("cu13", "cu12", "cuda_nvcc"):
            candidate = nvidia / sub / "bin" / ("nvcc.exe" if os.name == "nt" else "nvcc")
            if candidate.is_file():
                found.append(candidate)
    return found


def _nvcc_candidates(cmake_cuda_compiler: str) -> list[tuple[str, str]]:
    env = os.environ
    candidates = [
        (env.get("AOTC_NVCC", ""), "AOTC_NVCC"),
        (cmake_cuda_compiler, "CMAKE_CUDA_COMPILER"),
        (env.get("CUDACXX", ""), "CUDACXX"),
        (shutil.which("nvcc") or "", "PATH"),
    ]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            candidates.append((str(Path(env[var]) / "bin" / "nvcc"), var))
    candidates += [(str(p), "the nvidia-cuda-nvcc wheel") for p in _pypi_nvcc_candidates()]
    return [(path, origin) for path, origin in candidates if path]


def find_nvcc(cuda: str, cmake_cuda_compiler: str = "") -> Toolchain | None:
    """The first nvcc of CUDA major ``cuda``, or None. An explicit AOTC_NVCC of another major is an error."""
    for path, origin in _nvcc_candidates(cmake_cuda_compiler):
        version = nvcc_version(path)
        if version is None:
            if origin == "AOTC_NVCC":
                msg = f"AOTC_NVCC={path!r} does not run as nvcc"
                raise ToolchainError(msg)
            continue
        if version.split(".")[0] == cuda:
            return Toolchain("nvcc", str(Path(path).resolve()), version, cuda, origin)
        if origin == "AOTC_NVCC":
            msg = f"AOTC_NVCC={path!r} is CUDA {version}, but this build is for CUDA {cuda} (AOTC_CUDA)"
            raise ToolchainError(msg)
    return None


def _nvrtc_toolchain(cuda: str) -> Toolchain | None:
    """NVRTC and nvFatbin of CUDA ``cuda`` from the wheels in this Python, or None."""
    from aotc.build.nvrtc_fatbin import load_toolchain

    try:
        tool = load_toolchain(int(cuda))
    except BuildError:
        return None
    # nvFatbin's version is part of what the fatbins depend on, so of the identity.
    return Toolchain("nvrtc", "", tool.nvrtc_version, cuda, tool.describe(), f"nvfatbin {tool.nvfatbin_version}")


def find_toolchain(cuda: str = "13", prefer: str = "auto", cmake_cuda_compiler: str = "") -> Toolchain:
    """The toolchain for lane ``cuda``: nvcc when one of that major is found (``prefer=auto``), else NVRTC."""
    if cuda not in CUDA_LANES:
        msg = f"AOTC_CUDA={cuda!r}: aotc builds for CUDA {' or '.join(sorted(CUDA_LANES))}"
        raise ToolchainError(msg)
    if prefer not in ("auto", "nvcc", "nvrtc"):
        msg = f"AOTC_COMPILER={prefer!r}: expected auto, nvcc or nvrtc"
        raise ToolchainError(msg)
    if prefer in ("auto", "nvcc") and (found := find_nvcc(cuda, cmake_cuda_compiler)):
        return found
    if prefer in ("auto", "nvrtc") and (found := _nvrtc_toolchain(cuda)):
        return found
    wheels = " ".join(CUDA_LANES[cuda]["nvrtc"])
    looked = "AOTC_NVCC, CMAKE_CUDA_COMPILER, CUDACXX, PATH, CUDA_HOME, CUDA_PATH"
    if prefer == "nvcc":
        msg = f"no CUDA {cuda} nvcc found (looked in {looked}): install a CUDA {cuda} toolkit or set AOTC_NVCC"
    else:
        msg = (
            f"no CUDA {cuda} compiler: no nvcc of that version (looked in {looked}) and no NVRTC + nvFatbin "
            f"wheels in this Python; install a CUDA {cuda} toolkit, or pip install {wheels}"
        )
    raise ToolchainError(msg)


def lane_requirements(cuda: str, prefer: str = "auto") -> list[str]:
    """What a build needs from PyPI for lane ``cuda``: the NVRTC wheels unless a matching nvcc is here."""
    if cuda not in CUDA_LANES or prefer == "nvcc":
        return []
    if prefer == "auto":
        try:
            if find_nvcc(cuda):
                return []
        except ToolchainError:
            return []  # the configure step reports it, with the same words
    return list(CUDA_LANES[cuda]["nvrtc"])


def _write_fingerprint(toolchain: Toolchain, out: str) -> str:
    """Write the compiler's fingerprint (``aotc.build.compiler_fingerprint``) to ``out``; return
    the toolkit's own bin folder, where the per-architecture path finds ptxas and fatbinary.

    That folder comes from nvcc's ``-dryrun``, not from nvcc's path: an nvcc on
    PATH may be a wrapper script beside wrapper scripts, and sccache-dist
    cannot package a script as a toolchain.
    """
    from aotc.build._files import write_if_changed
    from aotc.build.compiler_fingerprint import nvcc_fingerprint, nvrtc_fingerprint

    memo = Path(out).parent / "digests.json"
    if toolchain.kind == "nvcc":
        text, toolkit = nvcc_fingerprint(toolchain.path, memo)
        bin_dir = toolkit.bin_dir if toolkit else ""
    else:
        text, bin_dir = nvrtc_fingerprint(toolchain.cuda, memo), ""
    write_if_changed(Path(out), text.encode())
    return bin_dir


def _cmake_quote(value: str) -> str:
    return '"' + value.replace("\\", "/").replace('"', '\\"') + '"'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aotc.build.toolchain")
    parser.add_argument("--cuda", default="13")
    parser.add_argument("--prefer", default="auto")
    parser.add_argument("--cmake-cuda-compiler", default="")
    parser.add_argument("--out", required=True, help="a CMake file to write the answer into")
    parser.add_argument("--fingerprint-out", default="", help="where to write the compiler's fingerprint")
    args = parser.parse_args(argv)
    try:
        toolchain = find_toolchain(args.cuda, args.prefer, args.cmake_cuda_compiler)
        toolkit_bin = _write_fingerprint(toolchain, args.fingerprint_out) if args.fingerprint_out else ""
    except (ToolchainError, BuildError) as exc:
        print(f"aotc: error: {exc}", file=sys.stderr)
        return 1
    lane = CUDA_LANES[toolchain.cuda]
    values = {
        "_aotc_compiler_kind": toolchain.kind,
        "_aotc_compiler_path": toolchain.path,
        "_aotc_compiler_version": toolchain.version,
        "_aotc_compiler_origin": toolchain.origin,
        "_aotc_compiler_identity": toolchain.identity,
        "_aotc_min_driver": str(lane["min_driver"]),
        "_aotc_lane_wheel": lane["wheel"],
        "_aotc_toolkit_bin": toolkit_bin,
    }
    text = "".join(f"set({key} {_cmake_quote(value)})\n" for key, value in values.items())
    Path(args.out).write_text("# Written by aotc at configure time; do not edit.\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
