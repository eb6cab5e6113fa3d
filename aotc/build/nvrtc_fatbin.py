"""Compile one generated kernel to a fatbin with NVRTC and nvFatbin: no CUDA toolkit.

PyPI has no nvcc binary for CUDA 12 (``nvidia-cuda-nvcc-cu12`` ships only
ptxas and friends), but NVRTC and nvFatbin are on PyPI for 12 and 13. The
generated ``.cu`` files are self-contained, so NVRTC compiles each as is: a
CUBIN per SASS architecture, PTX per PTX architecture, bundled by nvFatbin
into the same kind of fatbin ``nvcc -fatbin`` writes.

The libraries are found and loaded by :mod:`aotc.build._nvrtc_libs`; this
module drives the compiles and the bundling. Linux only.

CLI (one kernel per call, for a build system)::

    python -m aotc.build.nvrtc_fatbin --cuda 12 --sass 70,80 --ptx 90 --out K.fatbin \\
        [--resources K.resources.txt] [--werror] [--option=-DX=1] [--compress=MODE] K.cu
    python -m aotc.build.nvrtc_fatbin --cuda 12 --version

Outputs are replaced atomically and only when their bytes change, so a ninja
``restat`` rule sees an unchanged fatbin as up to date.
"""

from __future__ import annotations

import argparse
import ctypes
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aotc._cuda_headers import include_options, missing_header_hint
from aotc.build._files import write_if_changed
from aotc.build.line_map import explain

# ENV_*, find_library and load_toolchain are re-exported: build scripts and
# tests name them here, beside the compile they configure.
from aotc.build._nvrtc_libs import ENV_NVFATBIN, ENV_NVRTC, Toolchain, c_strings, find_library, load_toolchain
from aotc.errors import BuildError

__all__ = [
    "ENV_NVFATBIN",
    "ENV_NVRTC",
    "Fatbin",
    "Toolchain",
    "compile_fatbin",
    "find_library",
    "load_toolchain",
    "main",
]

# nvFatbin's options for each of nvcc's --compress-mode values.
_COMPRESSION_OPTIONS = {
    "none": ("-compress=false",),
    "default": ("-compress=true",),
    "size": ("-compress-mode=size",),
    "balance": ("-compress-mode=balance",),
    "speed": ("-compress-mode=speed",),
}

# What nvcc uses for these sources where NVRTC has a matching option: the C++
# dialect nvcc 12 and 13 default to, and nvcc's floating-point defaults (the
# "-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1" it records in its fatbins). They are
# NVRTC's defaults too; spelled out so that a changed default cannot change code.
# No -default-device: the sources mark device functions as nvcc needs them to.
BASE_OPTIONS = ("-std=c++17", "--ftz=false", "--prec-div=true", "--prec-sqrt=true", "--fmad=true")
# nvcc --resource-usage is ptxas -v; NVRTC 12 and 13 both pass it on to ptxas
# and put the report in the program log.
_RESOURCE_OPTIONS = ("-Xptxas", "-v")
# ptxas' report lines in the log: "ptxas info    : ..." and the indented
# "ptxas         .     8 bytes stack frame, ..." continuation. They are not
# warnings. "Compile time = N ms" changes on every run, so it is dropped from
# the saved report, which then changes only when the code does.
_INFO_LINE = re.compile(r"^ptxas\s+(info\s*:|\.)")
_TIMING_LINE = re.compile(r"Compile time = ")
# NVRTC 12 warns that sm_5x-7x are deprecated and, unlike nvcc
# (-Wno-deprecated-gpu-targets), has no option to turn that off. The archs are
# chosen on purpose, so this notice is shown but does not count for --werror.
_DEPRECATED_ARCH = re.compile(r"Architectures prior to .* are deprecated")
_ARCH = re.compile(r"^[0-9]+[af]?$")


@dataclass(frozen=True)
class Fatbin:
    """A compiled kernel: the fatbin, ptxas' report and NVRTC's other diagnostics."""

    data: bytes
    resources: str  # nvcc --resource-usage format; empty unless asked for
    warnings: str  # NVRTC's logs less ptxas' report, each under a line naming the target


def _compile(
    tool: Toolchain, source: bytes, name: str, target: str, options: Sequence[str], want_cubin: bool
) -> tuple[bytes, str]:
    """One NVRTC compile: (CUBIN or PTX, log)."""
    program = ctypes.c_void_p()
    tool.call_nvrtc("nvrtcCreateProgram", ctypes.byref(program), source, name.encode(), 0, None, None)
    try:
        argv = [f"--gpu-architecture={target}", *options]
        result = tool.nvrtc.nvrtcCompileProgram(program, len(argv), c_strings(argv))
        size = ctypes.c_size_t()
        tool.call_nvrtc("nvrtcGetProgramLogSize", program, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        tool.call_nvrtc("nvrtcGetProgramLog", program, buffer)
        log = buffer.value.decode(errors="replace")
        if result != 0:
            lines = [line.strip() for line in log.splitlines() if line.strip()]
            first = next((line for line in lines if "error" in line), lines[-1] if lines else "no log")
            msg = f"NVRTC {tool.nvrtc_version} failed to compile {name} for {target}: {first}{missing_header_hint(first)}"
            error = BuildError(msg)
            error.log = log  # type: ignore[attr-defined] - the whole log, for main() to show at the template's lines
            raise error
        get, get_size = ("nvrtcGetCUBIN", "nvrtcGetCUBINSize") if want_cubin else ("nvrtcGetPTX", "nvrtcGetPTXSize")
        tool.call_nvrtc(get_size, program, ctypes.byref(size))
        code = ctypes.create_string_buffer(size.value)
        tool.call_nvrtc(get, program, code)
        return code.raw, log
    finally:
        tool.nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


def _check_archs(tool: Toolchain, archs: Sequence[str], what: str) -> None:
    for arch in archs:
        if not _ARCH.match(arch):
            msg = f"{what} architecture {arch!r} is not like 80, 90a or 100f"
            raise BuildError(msg)
        if int(arch.rstrip("af")) not in tool.archs:
            known = ", ".join(str(a) for a in sorted(tool.archs))
            msg = f"NVRTC {tool.nvrtc_version} cannot compile for {what} {arch} (it supports {known})"
            raise BuildError(msg)


def _bundle(tool: Toolchain, images: Sequence[tuple[str, bytes, bool]], identifier: bytes, compress: str) -> bytes:
    """nvFatbin's bundle of ``images``: (arch, code, is_cubin) triples."""
    # -64: 64-bit entries, as nvcc writes for x86_64 and aarch64 hosts.
    # "default" is nvFatbin's and nvcc's default mode: entries above a size
    # threshold (in practice the PTX) are compressed, which every driver of the
    # CUDA major reads. The named modes are nvcc's --compress-mode; "size"
    # (zstd) needs a newer driver than CUDA 12's minimum (docs/design.md).
    fat_options = ["-64", *_COMPRESSION_OPTIONS[compress]]
    handle = ctypes.c_void_p()
    tool.call_nvfatbin("nvFatbinCreate", ctypes.byref(handle), c_strings(fat_options), len(fat_options))
    try:
        for arch, code, is_cubin in images:
            if is_cubin:
                tool.call_nvfatbin("nvFatbinAddCubin", handle, code, len(code), arch.encode(), identifier)
            else:
                # PTX: size includes the NUL NVRTC returns; no extra ptxas options for the JIT.
                tool.call_nvfatbin("nvFatbinAddPTX", handle, code, len(code), arch.encode(), identifier, b"")
        size = ctypes.c_size_t()
        tool.call_nvfatbin("nvFatbinSize", handle, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        tool.call_nvfatbin("nvFatbinGet", handle, out)
    finally:
        tool.nvfatbin.nvFatbinDestroy(ctypes.byref(handle))
    return out.raw


def compile_fatbin(
    source: bytes,
    name: str,
    *,
    cuda: int,
    sass: Sequence[str],
    ptx: Sequence[str] = (),
    options: Sequence[str] = (),
    werror: bool = False,
    resources: bool = False,
    compress: str = "default",
) -> Fatbin:
    """Compile ``source`` (a kernel's self-contained ``.cu``) into one fatbin.

    ``name`` is the file name NVRTC reports and, without its suffix, the
    fatbin entries' identifier: it should not hold the build directory, so
    that the output does not depend on where the build runs.
    """
    if not sass and not ptx:
        raise BuildError(f"{name}: no SASS and no PTX architectures asked for")
    tool = load_toolchain(cuda)
    _check_archs(tool, sass, "SASS")
    _check_archs(tool, ptx, "PTX")
    base = [*BASE_OPTIONS, *include_options(source, name), *options]
    images: list[tuple[str, bytes, bool]] = []
    report: list[str] = []
    diagnostics: list[tuple[str, list[str]]] = []  # (target, log lines that are not ptxas' report)
    for arch in sass:
        extra = _RESOURCE_OPTIONS if resources else ()
        code, log = _compile(tool, source, name, f"sm_{arch}", [*base, *extra], want_cubin=True)
        images.append((arch, code, True))
        other = []
        for line in log.splitlines():
            if not _INFO_LINE.match(line):
                other.append(line)
            elif not _TIMING_LINE.search(line):
                report.append(line)
        diagnostics.append((f"sm_{arch}", other))
    for arch in ptx:
        code, log = _compile(tool, source, name, f"compute_{arch}", base, want_cubin=False)
        images.append((arch, code, False))
        diagnostics.append((f"compute_{arch}", log.splitlines()))
    diagnostics = [(target, lines) for target, lines in diagnostics if any(line.strip() for line in lines)]
    warnings = "".join(
        f"NVRTC log for {name} ({target}):\n" + "".join(line + "\n" for line in lines) for target, lines in diagnostics
    )
    counted = [
        line.strip() for _, lines in diagnostics for line in lines if line.strip() and not _DEPRECATED_ARCH.search(line)
    ]
    if counted and werror:
        sys.stderr.write(warnings)
        first = next((line for line in counted if "warning" in line), counted[0])
        targets = ", ".join(target for target, _ in diagnostics)
        msg = f"{name}: NVRTC warned ({targets}) and --werror is set: {first}"
        raise BuildError(msg)
    data = _bundle(tool, images, Path(name).stem.encode(), compress)
    return Fatbin(data, "".join(line + "\n" for line in report), warnings)


def _arch_list(text: str) -> list[str]:
    return [a.strip() for a in text.replace(";", ",").split(",") if a.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m aotc.build.nvrtc_fatbin",
        description="Compile one self-contained kernel .cu into a fatbin with NVRTC and nvFatbin.",
    )
    parser.add_argument("--cuda", type=int, required=True, choices=(12, 13), help="CUDA major of NVRTC/nvFatbin")
    parser.add_argument("--version", action="store_true", help="print the compilers in use and exit")
    parser.add_argument("--sass", type=_arch_list, default=[], help="SASS architectures: 75,80,90a")
    parser.add_argument("--ptx", type=_arch_list, default=[], help="PTX architectures: 90")
    parser.add_argument("--out", type=Path, help="the fatbin to write")
    parser.add_argument("--resources", type=Path, help="write ptxas' resource report (nvcc --resource-usage format)")
    parser.add_argument("--werror", action="store_true", help="fail on any NVRTC or ptxas warning")
    parser.add_argument(
        "--option", action="append", default=[], help="an extra NVRTC option, e.g. --option=-DX=1 (repeatable)"
    )
    parser.add_argument("--compress", choices=sorted(_COMPRESSION_OPTIONS), default="default", help="nvcc's --compress-mode")
    parser.add_argument("source", type=Path, nargs="?")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.version:
            print(load_toolchain(args.cuda).describe())
            return 0
        if args.source is None or args.out is None:
            _parser().error("a source and --out are required")
        try:
            source = args.source.read_bytes()
        except OSError as exc:
            raise BuildError(f"cannot read {args.source}: {exc.strerror}") from None
        result = compile_fatbin(
            source,
            args.source.name,
            cuda=args.cuda,
            sass=args.sass,
            ptx=args.ptx,
            options=args.option,
            werror=args.werror,
            resources=args.resources is not None,
            compress=args.compress,
        )
        # Warnings show in the build log, at their template's lines; ptxas' report
        # goes to the index only (--resources), as on the nvcc path.
        sys.stderr.write(explain(result.warnings, args.source)[0])
        write_if_changed(args.out, result.data)
        if args.resources is not None:
            write_if_changed(args.resources, result.resources.encode())
    except BuildError as exc:
        log = getattr(exc, "log", "")
        if log and args.source is not None:
            sys.stderr.write(explain(log, args.source)[0])
        print(f"aotc: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
