"""Compile one generated kernel to a fatbin with NVRTC and nvFatbin: no CUDA toolkit.

PyPI has no nvcc binary for CUDA 12 (``nvidia-cuda-nvcc-cu12`` ships only
ptxas and friends), but NVRTC and nvFatbin are on PyPI for 12 and 13. The
generated ``.cu`` files are self-contained, so NVRTC compiles each as is: a
CUBIN per SASS architecture, PTX per PTX architecture, bundled by nvFatbin
into the same kind of fatbin ``nvcc -fatbin`` writes.

The libraries are loaded with ctypes, not cuda-bindings, so that a CUDA 12
build does not depend on which CUDA major the installed bindings target. They
are found in the nvidia wheels on the running interpreter's path, or at
``AOTC_NVRTC_LIBRARY`` / ``AOTC_NVFATBIN_LIBRARY``. Linux only.

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
import importlib.metadata
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aotc.build._files import write_if_changed
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

ENV_NVRTC = "AOTC_NVRTC_LIBRARY"
# nvFatbin's options for each of nvcc's --compress-mode values.
_COMPRESSION_OPTIONS = {
    "none": ("-compress=false",),
    "default": ("-compress=true",),
    "size": ("-compress-mode=size",),
    "balance": ("-compress-mode=balance",),
    "speed": ("-compress-mode=speed",),
}
ENV_NVFATBIN = "AOTC_NVFATBIN_LIBRARY"

# Where the wheels put the libraries, under site-packages/nvidia/: the cu12
# wheels use one folder per component, the CUDA 13 wheels share nvidia/cu13/.
# The file name carries the major, so every folder is searched for every major.
_WHEEL_LIB_DIRS = ("cu{major}/lib", "cuda_nvrtc/lib", "nvfatbin/lib")
# The wheel that holds each library, for the full version (the C APIs report
# only major.minor). CUDA 13 dropped the -cuXX suffix.
_DISTRIBUTIONS = {
    ("nvrtc", 12): "nvidia-cuda-nvrtc-cu12",
    ("nvfatbin", 12): "nvidia-nvfatbin-cu12",
    ("nvrtc", 13): "nvidia-cuda-nvrtc",
    ("nvfatbin", 13): "nvidia-nvfatbin",
}
_PIP_HINT = {12: "nvidia-cuda-nvrtc-cu12 nvidia-nvfatbin-cu12", 13: "nvidia-cuda-nvrtc nvidia-nvfatbin"}

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


def _nvidia_dirs() -> list[Path]:
    """The folders of the ``nvidia`` namespace package on this interpreter's path."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def find_library(kind: str, major: int, search: Sequence[Path] | None = None) -> tuple[Path, bool]:
    """The path of ``lib<kind>.so.<major>`` and whether it came from the env override."""
    env = ENV_NVRTC if kind == "nvrtc" else ENV_NVFATBIN
    name = f"lib{kind}.so.{major}"
    if override := os.environ.get(env):
        if not Path(override).is_file():
            msg = f"{env}={override} is not a file; point it at {name}"
            raise BuildError(msg)
        return Path(override), True
    roots = _nvidia_dirs() if search is None else list(search)
    for root in roots:
        for sub in _WHEEL_LIB_DIRS:
            candidate = root / sub.format(major=major) / name
            if candidate.is_file():
                return candidate, False
    where = ", ".join(str(r) for r in roots) or "no nvidia package on sys.path"
    msg = f"{name} not found (searched {where}): pip install {_PIP_HINT.get(major, '')}, or set {env} to its path"
    raise BuildError(msg)


def _wheel_version(kind: str, major: int) -> str | None:
    try:
        return importlib.metadata.version(_DISTRIBUTIONS[(kind, major)])
    except (KeyError, importlib.metadata.PackageNotFoundError):
        return None


def _load(path: Path, env: str) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(str(path))
    except OSError as exc:
        msg = f"cannot load {path} ({exc}); set {env} to a working copy"
        raise BuildError(msg) from None


def _bind(lib: ctypes.CDLL, signatures: dict[str, tuple]) -> None:
    for name, argtypes in signatures.items():
        func = getattr(lib, name)
        func.argtypes = list(argtypes)
        func.restype = ctypes.c_int


_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_SZ = ctypes.POINTER(ctypes.c_size_t)
_INT = ctypes.POINTER(ctypes.c_int)
_UINT = ctypes.POINTER(ctypes.c_uint)
_STRS = ctypes.POINTER(ctypes.c_char_p)
_NVRTC_API = {
    "nvrtcVersion": (_INT, _INT),
    "nvrtcGetNumSupportedArchs": (_INT,),
    "nvrtcGetSupportedArchs": (_INT,),
    "nvrtcCreateProgram": (_PP, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, _STRS, _STRS),
    "nvrtcCompileProgram": (_P, ctypes.c_int, _STRS),
    "nvrtcGetProgramLogSize": (_P, _SZ),
    "nvrtcGetProgramLog": (_P, ctypes.c_char_p),
    "nvrtcGetCUBINSize": (_P, _SZ),
    "nvrtcGetCUBIN": (_P, ctypes.c_char_p),
    "nvrtcGetPTXSize": (_P, _SZ),
    "nvrtcGetPTX": (_P, ctypes.c_char_p),
    "nvrtcDestroyProgram": (_PP,),
}
_NVFATBIN_API = {
    "nvFatbinVersion": (_UINT, _UINT),
    "nvFatbinCreate": (_PP, _STRS, ctypes.c_size_t),
    "nvFatbinAddCubin": (_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p),
    "nvFatbinAddPTX": (_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p),
    "nvFatbinSize": (_P, _SZ),
    "nvFatbinGet": (_P, ctypes.c_char_p),
    "nvFatbinDestroy": (_PP,),
}


def _strings(items: Sequence[str]) -> ctypes.Array:
    return (ctypes.c_char_p * len(items))(*(s.encode() for s in items))


@dataclass
class Toolchain:
    """NVRTC and nvFatbin of one CUDA major, loaded into this process."""

    major: int
    nvrtc_path: Path
    nvfatbin_path: Path
    nvrtc_version: str
    nvfatbin_version: str
    archs: frozenset[int]  # the sm_XX numbers this NVRTC compiles for
    nvrtc: ctypes.CDLL
    nvfatbin: ctypes.CDLL

    def describe(self) -> str:
        return (
            f"nvrtc {self.nvrtc_version} ({self.nvrtc_path}), nvfatbin {self.nvfatbin_version} ({self.nvfatbin_path})"
        )

    def _rtc(self, name: str, *args: object) -> None:
        _checked(self.nvrtc, "nvrtcGetErrorString", self.nvrtc_path, name, args)

    def _fat(self, name: str, *args: object) -> None:
        _checked(self.nvfatbin, "nvFatbinGetErrorString", self.nvfatbin_path, name, args)


def _checked(lib: ctypes.CDLL, error_string: str, path: Path, name: str, args: tuple) -> None:
    """Call ``lib.name(*args)``; a non-zero result is a BuildError with the library's own words."""
    result = getattr(lib, name)(*args)
    if result != 0:
        getattr(lib, error_string).restype = ctypes.c_char_p
        text = getattr(lib, error_string)(result) or b"?"
        msg = f"{name} failed: {text.decode()} ({path})"
        raise BuildError(msg)


_toolchains: dict[int, Toolchain] = {}


def load_toolchain(major: int) -> Toolchain:
    """Find, load and check NVRTC and nvFatbin for CUDA ``major`` (cached per process)."""
    if major in _toolchains:
        return _toolchains[major]
    nvrtc_path, nvrtc_override = find_library("nvrtc", major)
    fatbin_path, fatbin_override = find_library("nvfatbin", major)
    # NVRTC dlopens libnvrtc-builtins.so.<major>.<minor> from its own folder at
    # the first compile; a copy without it fails there with a vague
    # BUILTIN_OPERATION_FAILURE, so say it up front.
    folder = nvrtc_path.resolve().parent
    if not any(folder.glob(f"libnvrtc-builtins.so.{major}.*")):
        msg = f"no libnvrtc-builtins.so.{major}.* beside {nvrtc_path}; reinstall NVRTC or set {ENV_NVRTC}"
        raise BuildError(msg)
    nvrtc = _load(nvrtc_path, ENV_NVRTC)
    nvfatbin = _load(fatbin_path, ENV_NVFATBIN)
    try:
        _bind(nvrtc, _NVRTC_API)
        _bind(nvfatbin, _NVFATBIN_API)
    except AttributeError as exc:
        msg = f"{nvrtc_path} or {fatbin_path} lacks a needed function ({exc}); nvFatbin needs CUDA 12.4 or newer"
        raise BuildError(msg) from None
    tool = Toolchain(major, nvrtc_path, fatbin_path, "", "", frozenset(), nvrtc, nvfatbin)
    a, b = ctypes.c_int(), ctypes.c_int()
    tool._rtc("nvrtcVersion", ctypes.byref(a), ctypes.byref(b))
    if a.value != major:
        msg = f"{nvrtc_path} is NVRTC {a.value}.{b.value}, not CUDA {major}; fix {ENV_NVRTC} or --cuda"
        raise BuildError(msg)
    rtc_version = f"{a.value}.{b.value}"
    ua, ub = ctypes.c_uint(), ctypes.c_uint()
    tool._fat("nvFatbinVersion", ctypes.byref(ua), ctypes.byref(ub))
    if ua.value != major:
        msg = f"{fatbin_path} is nvFatbin {ua.value}.{ub.value}, not CUDA {major}; fix {ENV_NVFATBIN} or --cuda"
        raise BuildError(msg)
    fat_version = f"{ua.value}.{ub.value}"
    # The wheel's version is the full one (12.9.86); trust it only when the
    # library came from that wheel and agrees on major.minor.
    full = None if nvrtc_override else _wheel_version("nvrtc", major)
    tool.nvrtc_version = full if full and full.startswith(rtc_version + ".") else rtc_version
    full = None if fatbin_override else _wheel_version("nvfatbin", major)
    tool.nvfatbin_version = full if full and full.startswith(fat_version + ".") else fat_version
    count = ctypes.c_int()
    tool._rtc("nvrtcGetNumSupportedArchs", ctypes.byref(count))
    archs = (ctypes.c_int * count.value)()
    tool._rtc("nvrtcGetSupportedArchs", archs)
    tool.archs = frozenset(archs)
    _toolchains[major] = tool
    return tool


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
    tool._rtc("nvrtcCreateProgram", ctypes.byref(program), source, name.encode(), 0, None, None)
    try:
        argv = [f"--gpu-architecture={target}", *options]
        result = tool.nvrtc.nvrtcCompileProgram(program, len(argv), _strings(argv))
        size = ctypes.c_size_t()
        tool._rtc("nvrtcGetProgramLogSize", program, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        tool._rtc("nvrtcGetProgramLog", program, buffer)
        log = buffer.value.decode(errors="replace")
        if result != 0:
            lines = [line.strip() for line in log.splitlines() if line.strip()]
            first = next((line for line in lines if "error" in line), lines[-1] if lines else "no log")
            # The whole log goes to stderr for the person reading the build log.
            sys.stderr.write(log)
            msg = f"NVRTC {tool.nvrtc_version} failed to compile {name} for {target}: {first}"
            raise BuildError(msg)
        get, get_size = ("nvrtcGetCUBIN", "nvrtcGetCUBINSize") if want_cubin else ("nvrtcGetPTX", "nvrtcGetPTXSize")
        tool._rtc(get_size, program, ctypes.byref(size))
        code = ctypes.create_string_buffer(size.value)
        tool._rtc(get, program, code)
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
    base = [*BASE_OPTIONS, *options]
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
    identifier = Path(name).stem.encode()
    # -64: 64-bit entries, as nvcc writes for x86_64 and aarch64 hosts.
    # "default" is nvFatbin's and nvcc's default mode: entries above a size
    # threshold (in practice the PTX) are compressed, which every driver of the
    # CUDA major reads. The named modes are nvcc's --compress-mode; "size"
    # (zstd) needs a newer driver than CUDA 12's minimum (docs/design.md).
    fat_options = ["-64", *_COMPRESSION_OPTIONS[compress]]
    handle = ctypes.c_void_p()
    tool._fat("nvFatbinCreate", ctypes.byref(handle), _strings(fat_options), len(fat_options))
    try:
        for arch, code, is_cubin in images:
            if is_cubin:
                tool._fat("nvFatbinAddCubin", handle, code, len(code), arch.encode(), identifier)
            else:
                # PTX: size includes the NUL NVRTC returns; no extra ptxas options for the JIT.
                tool._fat("nvFatbinAddPTX", handle, code, len(code), arch.encode(), identifier, b"")
        size = ctypes.c_size_t()
        tool._fat("nvFatbinSize", handle, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        tool._fat("nvFatbinGet", handle, out)
    finally:
        tool.nvfatbin.nvFatbinDestroy(ctypes.byref(handle))
    return Fatbin(out.raw, "".join(line + "\n" for line in report), warnings)


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
        # Like nvcc --resource-usage through the build's launcher: the report
        # and any warnings show in the build log too.
        sys.stderr.write(result.resources + result.warnings)
        write_if_changed(args.out, result.data)
        if args.resources is not None:
            write_if_changed(args.resources, result.resources.encode())
    except BuildError as exc:
        print(f"aotc: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
