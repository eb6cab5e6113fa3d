"""Find NVRTC and nvFatbin of one CUDA major and load them with ctypes.

ctypes, not cuda-bindings, so that a CUDA 12 build does not depend on which
CUDA major the installed bindings target. The libraries are found in the
nvidia wheels on the running interpreter's path, or at ``AOTC_NVRTC_LIBRARY``
/ ``AOTC_NVFATBIN_LIBRARY``. Linux only. The compile driver is
:mod:`aotc.build.nvrtc_fatbin`.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aotc.errors import BuildError

__all__ = ["ENV_NVFATBIN", "ENV_NVRTC", "Toolchain", "c_strings", "find_library", "load_toolchain"]

ENV_NVRTC = "AOTC_NVRTC_LIBRARY"
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


def c_strings(items: Sequence[str]) -> ctypes.Array:
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

    def call_nvrtc(self, name: str, *args: object) -> None:
        """``nvrtc.name(*args)``; a failure is a BuildError in NVRTC's own words."""
        _checked(self.nvrtc, "nvrtcGetErrorString", self.nvrtc_path, name, args)

    def call_nvfatbin(self, name: str, *args: object) -> None:
        """``nvfatbin.name(*args)``; a failure is a BuildError in nvFatbin's own words."""
        _checked(self.nvfatbin, "nvFatbinGetErrorString", self.nvfatbin_path, name, args)


def _checked(lib: ctypes.CDLL, error_string: str, path: Path, name: str, args: tuple) -> None:
    """Call ``lib.name(*args)``; a non-zero result is a BuildError with the library's own words."""
    result = getattr(lib, name)(*args)
    if result != 0:
        getattr(lib, error_string).restype = ctypes.c_char_p
        text = getattr(lib, error_string)(result) or b"?"
        msg = f"{name} failed: {text.decode()} ({path})"
        raise BuildError(msg)


def _major_minor(call: Callable[..., None], name: str, c_type: type, major: int, what: str, env: str) -> str:
    """``"major.minor"`` from a library's version function; another major is a BuildError."""
    got_major, got_minor = c_type(), c_type()
    call(name, ctypes.byref(got_major), ctypes.byref(got_minor))
    if got_major.value != major:
        msg = f"{what} {got_major.value}.{got_minor.value}, not CUDA {major}; fix {env} or --cuda"
        raise BuildError(msg)
    return f"{got_major.value}.{got_minor.value}"


def _load_builtins(folder: Path, found: list[Path], version: str) -> None:
    """Load NVRTC's builtins library from NVRTC's own folder before its first compile.

    NVRTC opens ``libnvrtc-builtins.so.<major>.<minor>`` by name, which the
    system loader resolves only on its own path, or to a library of that name
    already loaded. Some wheels' NVRTC finds it beside itself, others not
    (``nvidia-cuda-nvrtc`` 13.0.88: "failed to open libnvrtc-builtins.so.13.0"
    at every compile), so it is loaded here, globally, by its path.
    """
    builtins = folder / f"libnvrtc-builtins.so.{version}"
    if not builtins.is_file():
        names = ", ".join(path.name for path in found)
        msg = f"NVRTC {version} needs libnvrtc-builtins.so.{version}, and {folder} holds {names}; reinstall NVRTC"
        raise BuildError(msg)
    try:
        ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
    except OSError as exc:
        msg = f"cannot load {builtins} ({exc}); reinstall NVRTC or set {ENV_NVRTC}"
        raise BuildError(msg) from None


_toolchains: dict[int, Toolchain] = {}


def load_toolchain(major: int) -> Toolchain:
    """Find, load and check NVRTC and nvFatbin for CUDA ``major`` (cached per process)."""
    if major in _toolchains:
        return _toolchains[major]
    nvrtc_path, nvrtc_override = find_library("nvrtc", major)
    fatbin_path, fatbin_override = find_library("nvfatbin", major)
    # NVRTC dlopens libnvrtc-builtins.so.<major>.<minor> by that name at the
    # first compile; a copy without it fails there with a vague
    # BUILTIN_OPERATION_FAILURE, so say it up front.
    folder = nvrtc_path.resolve().parent
    builtins = sorted(folder.glob(f"libnvrtc-builtins.so.{major}.*"))
    if not builtins:
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
    rtc_version = _major_minor(tool.call_nvrtc, "nvrtcVersion", ctypes.c_int, major, f"{nvrtc_path} is NVRTC", ENV_NVRTC)
    fat_version = _major_minor(tool.call_nvfatbin, "nvFatbinVersion", ctypes.c_uint, major, f"{fatbin_path} is nvFatbin", ENV_NVFATBIN)
    # The wheel's version is the full one (12.9.86); trust it only when the
    # library came from that wheel and agrees on major.minor.
    full = None if nvrtc_override else _wheel_version("nvrtc", major)
    tool.nvrtc_version = full if full and full.startswith(rtc_version + ".") else rtc_version
    _load_builtins(folder, builtins, rtc_version)
    full = None if fatbin_override else _wheel_version("nvfatbin", major)
    tool.nvfatbin_version = full if full and full.startswith(fat_version + ".") else fat_version
    count = ctypes.c_int()
    tool.call_nvrtc("nvrtcGetNumSupportedArchs", ctypes.byref(count))
    archs = (ctypes.c_int * count.value)()
    tool.call_nvrtc("nvrtcGetSupportedArchs", archs)
    tool.archs = frozenset(archs)
    _toolchains[major] = tool
    return tool

