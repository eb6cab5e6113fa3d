"""NVRTC: compile one kernel's shipped ``.cu`` for exactly one architecture.

Used only where ``select_image`` chose NVRTC_JIT (no usable SASS on the
device) and by ``aotc warm``. The product is a CUBIN for the exact device
arch, kept in the disk cache under a key over every input: the source bytes,
the options, the target, NVRTC's version and aotc's version. NVRTC needs no
GPU, so all of this runs (and is tested) on machines without one.

A cache hit loads no libnvrtc. NVRTC's answer (version, targets) is kept in
the disk cache too, keyed by the file identity (path, size, mtime) of the
libnvrtc that would be loaded, found on disk without loading it
(``locate_nvrtc``); a later process finds the same file, reads the answer,
and builds its key and its image choice from it. Only a miss compiles, and
only a compile loads libnvrtc. A libnvrtc found only by the system loader's
search has no identity to key on, and is loaded to be asked, as before.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from aotc._cuda_headers import include_options
from aotc.errors import BuildError, CacheError
from aotc.runtime.cache import CacheKey, DiskCache, answers_cache, default_cache

__all__ = [
    "JitResult",
    "NvrtcInfo",
    "NvrtcProbe",
    "compile_cubin",
    "jit_cubin",
    "jit_key",
    "locate_nvrtc",
    "nvrtc_info",
    "nvrtc_options",
    "nvrtc_problem",
    "probe",
]

# Generated kernels are self-contained: no include paths, no host headers.
# -default-device lets their helper functions omit __device__.
_BASE_OPTIONS = ("-default-device",)
# Where cuda-bindings looks first for libnvrtc, and the names it looks for
# (its loader's wheel and conda steps, which find a file before loading it).
_WHEEL_DIRS = (("nvidia", "cu13", "lib"), ("nvidia", "cuda_nvrtc", "lib"))
_SONAMES = ("libnvrtc.so.13", "libnvrtc.so.12")


@dataclass(frozen=True)
class NvrtcInfo:
    """The NVRTC this process can use."""

    version: tuple[int, int]
    archs: frozenset[tuple[int, int]]  # compute capabilities it compiles SASS for

    @property
    def compiler(self) -> str:
        """The compiler identity that goes into cache keys."""
        return f"nvrtc {self.version[0]}.{self.version[1]}"

    def describe(self) -> str:
        archs = ", ".join(f"{major}{minor}" for major, minor in sorted(self.archs))
        return f"NVRTC {self.version[0]}.{self.version[1]} (targets {archs})"


class NvrtcProbe:
    """NVRTC asked once: ``(info, "")`` or ``(None, why not)``, kept, since loading
    libnvrtc is slow and its answer does not change within a process. The
    answer is also kept in the disk cache under the libnvrtc file's identity,
    so a later process with the same file reads it instead of loading the
    library (see the module docstring). The process has one, ``probe``; a test
    states an answer, or its own ``ask``, ``locate`` and ``cache``, by building its own.
    ``asked`` counts the times libnvrtc was loaded and asked."""

    def __init__(
        self,
        answer: tuple[NvrtcInfo | None, str] | None = None,
        *,
        ask: Callable[[], tuple[NvrtcInfo | None, str]] | None = None,
        locate: Callable[[], tuple[str, int, int] | None] | None = None,
        cache: DiskCache | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._answer = answer
        self._ask = ask or _ask_nvrtc
        self._locate = locate or locate_nvrtc
        self._cache = cache  # None: the default cache, asked for when needed
        self.asked = 0

    def __call__(self) -> tuple[NvrtcInfo | None, str]:
        with self._lock:
            if self._answer is None:
                self._answer = self._recalled_or_asked()
            return self._answer

    def _recalled_or_asked(self) -> tuple[NvrtcInfo | None, str]:
        identity = self._locate()
        cache = key = None
        if identity is not None:
            try:
                cache = self._cache if self._cache is not None else answers_cache()
            except CacheError:
                cache = None  # no usable cache directory: ask, and keep nothing
            key = _probe_key(identity)
            info = _parse_record(cache.load(key)) if cache is not None else None
            if info is not None:
                return info, ""
        self.asked += 1
        answer = self._ask()
        if answer[0] is not None and cache is not None and key is not None:
            cache.save(key, _record(answer[0]))
        return answer


def locate_nvrtc() -> tuple[str, int, int] | None:
    """(path, size, mtime in ns) of the libnvrtc a pip wheel or conda provides,
    found the way cuda-bindings' loader finds it first, without loading it;
    None where there is none (the loader would search the system's paths)."""
    if not sys.platform.startswith("linux"):
        return None
    import site

    parents = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        # As the loader orders them: a venv's own site-packages before the user's.
        parents.insert(1 if sys.prefix != sys.base_prefix else 0, site.getusersitepackages())
    folders = [os.path.join(parent, *parts) for parts in _WHEEL_DIRS for parent in parents]
    conda = os.environ.get("CONDA_PREFIX")
    if conda:
        folders.append(os.path.join(conda, "lib"))
    for folder in folders:
        for soname in _SONAMES:
            path = os.path.join(folder, soname)
            try:
                st = os.stat(path)
            except OSError:
                continue
            return os.path.realpath(path), st.st_size, st.st_mtime_ns
    return None


def _probe_key(identity: tuple[str, int, int]) -> CacheKey:
    path, size, mtime_ns = identity
    line = f"{path}\0{size}\0{mtime_ns}".encode()
    return CacheKey.for_source(line, target="nvrtc answer", compiler="libnvrtc file identity")


def _record(info: NvrtcInfo) -> bytes:
    archs = " ".join(f"{major}.{minor}" for major, minor in sorted(info.archs))
    return f"{info.version[0]}.{info.version[1]}\n{archs}\n".encode()


def _parse_record(data: bytes | None) -> NvrtcInfo | None:
    """The NvrtcInfo a record holds; None for anything else (a miss, never a crash)."""
    if data is None:
        return None
    try:
        version, archs = data.decode("ascii").split("\n")[:2]
        major, minor = (int(part) for part in version.split("."))
        targets = frozenset(tuple(int(part) for part in arch.split(".")) for arch in archs.split())
    except ValueError:
        return None
    if not targets or any(len(arch) != 2 for arch in targets):
        return None
    return NvrtcInfo((major, minor), targets)  # type: ignore[arg-type]


def _ask_nvrtc() -> tuple[NvrtcInfo | None, str]:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        return None, "cuda-bindings is not installed (pip install 'aotc[jit]')"
    try:
        err, major, minor = nvrtc.nvrtcVersion()
        _check(nvrtc, err, "nvrtcVersion")
        err, archs = nvrtc.nvrtcGetSupportedArchs()
        _check(nvrtc, err, "nvrtcGetSupportedArchs")
    except Exception as exc:  # noqa: BLE001 - a missing libnvrtc surfaces as various loader errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, f"libnvrtc cannot be loaded ({first}); pip install 'aotc[jit]'"
    return NvrtcInfo((major, minor), frozenset(divmod(int(arch), 10) for arch in archs)), ""


probe = NvrtcProbe()


def nvrtc_info() -> NvrtcInfo | None:
    """NVRTC's version and targets, or None where it is unavailable (probed once)."""
    return probe()[0]


def nvrtc_problem() -> str:
    """Why NVRTC is unavailable; empty when it is available."""
    return probe()[1]


def _require_nvrtc() -> NvrtcInfo:
    info, problem = probe()
    if info is None:
        msg = f"NVRTC is not available: {problem}"
        raise BuildError(msg)
    return info


def nvrtc_options(capability: tuple[int, int]) -> tuple[str, ...]:
    major, minor = capability
    # sm_XY (not compute_XY) makes NVRTC emit SASS, so the driver JITs nothing.
    return (f"--gpu-architecture=sm_{major}{minor}", *_BASE_OPTIONS)


def jit_key(source: bytes, capability: tuple[int, int], nvrtc: NvrtcInfo | None = None) -> CacheKey:
    """The cache key of ``source`` compiled for ``capability`` by this NVRTC."""
    nvrtc = nvrtc or _require_nvrtc()
    major, minor = capability
    return CacheKey.for_source(
        source, options=(*nvrtc_options(capability), *include_options(source, "source")), target=f"sm_{major}{minor}", compiler=nvrtc.compiler
    )


def compile_cubin(source: bytes, name: str, capability: tuple[int, int]) -> bytes:
    """Compile ``source`` (one self-contained kernel file) to a CUBIN; no cache."""
    info = _require_nvrtc()
    if tuple(capability) not in info.archs:
        msg = f"{info.describe()} cannot compile {name} for sm_{capability[0]}{capability[1]}"
        raise BuildError(msg)
    from cuda.bindings import nvrtc

    err, program = nvrtc.nvrtcCreateProgram(bytes(source), name.encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        options = [option.encode() for option in (*nvrtc_options(capability), *include_options(bytes(source), name))]
        (err,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            msg = f"NVRTC failed to compile {name} for sm_{capability[0]}{capability[1]}: {_first_error(nvrtc, program)}"
            raise BuildError(msg)
        err, size = nvrtc.nvrtcGetCUBINSize(program)
        _check(nvrtc, err, "nvrtcGetCUBINSize")
        cubin = bytearray(size)
        (err,) = nvrtc.nvrtcGetCUBIN(program, cubin)
        _check(nvrtc, err, "nvrtcGetCUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return bytes(cubin)


@dataclass(frozen=True)
class JitResult:
    """A CUBIN, and whether this call compiled it (False: a disk cache hit)."""

    cubin: bytes
    compiled: bool
    key: CacheKey


def jit_cubin(
    source: bytes, name: str, capability: tuple[int, int], cache: DiskCache | None = None
) -> JitResult:
    """The CUBIN for ``source`` on ``capability``, from the disk cache or compiled into it.

    Concurrent callers, threads or processes, compile a key once (the cache's
    per-key lock); the others get the entry.
    """
    key = jit_key(source, capability)
    cache = cache if cache is not None else default_cache()
    compiled = []

    def build() -> bytes:
        compiled.append(True)
        return compile_cubin(source, name, capability)

    cubin = cache.get_or_create(key, build)
    return JitResult(cubin, bool(compiled), key)


def _check(nvrtc: object, err: object, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:  # type: ignore[attr-defined]
        msg = f"{what} failed: {_error_name(nvrtc, err)}"
        raise BuildError(msg)


def _error_name(nvrtc: object, err: object) -> str:
    try:
        _, text = nvrtc.nvrtcGetErrorString(err)  # type: ignore[attr-defined]
        return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001 - only for a message
        return str(err)


def _first_error(nvrtc: object, program: object) -> str:
    """The first diagnostic line that says 'error', else the last line of the log."""
    err, size = nvrtc.nvrtcGetProgramLogSize(program)  # type: ignore[attr-defined]
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:  # type: ignore[attr-defined]
        return "no log"
    log = bytearray(size)
    nvrtc.nvrtcGetProgramLog(program, log)  # type: ignore[attr-defined]
    lines = [line.strip() for line in log.rstrip(b"\0").decode(errors="replace").splitlines() if line.strip()]
    return next((line for line in lines if "error" in line), lines[-1] if lines else "no log")
