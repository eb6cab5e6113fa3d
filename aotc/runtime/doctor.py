"""``aotc doctor``: what the runtime would do here, and why.

Reports the backend, the device (or plainly that there is none), its driver,
NVRTC, the JIT policy, the disk cache, and for every library whether the
driver is new enough for it and, for every kernel, the image
``select_image`` picks. Each part is gathered on its own, so a missing GPU or
NVRTC costs only its own line. ``--arch`` answers for a device that is not
here.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aotc._locations import shadowed_declaration
from aotc._units import byte_size
from aotc._version import __version__
from aotc.errors import AotcError, DriverTooOldError, NoDeviceError
from aotc.index import INDEX_NAME, IndexKernel, LibraryIndex
from aotc.runtime.backends import backend_name_from_env, get_backend
from aotc.runtime.backends.base import DeviceInfo
from aotc.runtime.backends.protocol import Backend
from aotc.runtime.cache import DiskCache, default_cache
from aotc.runtime.driver import Toolkit, check_driver, cuda_text, toolkit_of
from aotc.runtime.library import installed_libraries, kernel_images, resolve_library
from aotc.runtime.select import ImageChoice, ImageKind, JitPolicy, Platform, explain_selection, jit_policy_from_env

__all__ = ["Diagnosis", "diagnose"]

# cuDriverGetVersion's answer and where it came from (the backend's name, or "--driver")
DriverVersion = tuple[int, str]


@dataclass
class Diagnosis:
    """Lines to print, and whether a problem (bad configuration, damaged index,
    a driver too old for a library) was found."""

    lines: list[str] = field(default_factory=list)
    problems: int = 0
    no_device: str = ""  # the NoDeviceError's line, where the backend finds no GPU

    def add(self, line: str = "") -> None:
        self.lines.append(line)

    def problem(self, line: str) -> None:
        self.problems += 1
        self.lines.append(line)


def diagnose(
    *,
    arch: tuple[int, int] | None = None,
    driver: tuple[int, int] | None = None,
    libraries: Sequence[str] = (),
    cache: DiskCache | None = None,
) -> Diagnosis:
    report = Diagnosis()
    report.add(f"aotc {__version__} at {Path(__file__).resolve().parents[1]} (Python {sys.version.split()[0]})")
    device, source_backend, driver_version = _backend_and_device(report)
    if driver is not None:  # --driver: check the libraries against that one instead
        driver_version = (driver[0] * 1000 + driver[1] * 10, "--driver")
    nvrtc_archs = _nvrtc(report)
    policy = _policy(report)
    cache = _cache(report, cache)
    _jax(report)

    platform, what = None, ""
    if source_backend and arch is None:
        what = f"the {source_backend} backend, which compiles each kernel's source itself"
    elif arch is not None:
        platform = (arch, driver or (device.driver_version if device else None))
        what = f"a hypothetical sm_{arch[0]}{arch[1]} device (--arch)"
    elif device is not None:
        platform = (device.capability, driver or device.driver_version)
        what = f"this device, {device.arch}"
    names = list(libraries) or installed_libraries()
    if not names:
        report.add("libraries: none installed with aotc (pass --library NAME_OR_FOLDER)")
    for name in names:
        report.add()
        _library(report, name, platform, what, nvrtc_archs, policy, cache, driver_version)
    return report


def _jax(report: Diagnosis) -> None:
    """Which route JAX arrays take on a GPU (aotc.runtime.jax_route), read from
    the installed distributions' metadata: the doctor imports no jax."""
    from importlib import metadata

    from aotc.runtime.jax_route import BUILTIN, builtin_launcher

    try:
        version = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        report.add("jax: not installed (JAX arrays need jax and jaxlib)")
        return
    try:
        builtin, why = builtin_launcher()
    except AotcError as exc:
        report.problem(f"jax: {exc}")
        return
    callback = "jax.experimental.buffer_callback, on XLA's stream (Python each call)"
    if builtin:
        report.add(
            f"jax: jaxlib {version}; on a GPU, declared families' kernels whose blocks are whole warps in x launch through "
            f"jaxlib's built-in launcher ({BUILTIN}, the library's fatbin as its module image; {why}); the rest through {callback}"
        )
    else:
        report.add(f"jax: jaxlib {version}; JAX arrays run through {callback}; not jaxlib's built-in launcher: {why}")


def _backend_and_device(report: Diagnosis) -> tuple[DeviceInfo | None, str, DriverVersion | None]:
    """The device, the backend's name where it compiles sources itself (else ""), and the driver's version."""
    try:
        chosen = backend_name_from_env()
    except AotcError as exc:
        report.problem(f"backend: {exc}")
        return None, "", None
    how = f"AOTC_BACKEND={chosen}" if chosen else "chosen automatically (AOTC_BACKEND unset)"
    try:
        backend = get_backend(chosen)
    except AotcError as exc:
        report.add(f"backend: none ({exc})")
        report.add("device: unknown without a backend")
        return None, "", None
    report.add(f"backend: {backend.name}, {how}")
    driver = _driver(report, backend)
    try:
        device = backend.device()
    except NoDeviceError as exc:
        report.add(f"device: {exc}")
        report.no_device = str(exc)
        return None, "", driver
    except AotcError as exc:
        report.add(f"device: none ({exc})")
        return None, "", driver
    if backend.image_format == "source":
        report.add(f"device: {device.name}")
        return None, backend.name, driver
    report.add(device.describe())
    return device, "", driver


def _driver(report: Diagnosis, backend: Backend) -> DriverVersion | None:
    """The backend's driver version, asked apart from the device: a driver too old
    for the rest of the API still answers it, and that is what the report is for."""
    try:
        version = backend.driver_version()
    except AotcError:
        return None  # no driver: the device line says so
    if version is None:
        report.add(f"driver: none to check (the {backend.name} backend runs without an NVIDIA driver)")
        return None
    report.add(f"driver: {cuda_text(version)} (cuDriverGetVersion {version})")
    return version, backend.name


def _nvrtc(report: Diagnosis) -> frozenset[tuple[int, int]] | None:
    from aotc.runtime.jit import nvrtc_info, nvrtc_problem

    info = nvrtc_info()
    if info is None:
        report.add(f"NVRTC: not available ({nvrtc_problem()})")
        return None
    report.add(f"NVRTC: {info.describe()}")
    return info.archs


def _policy(report: Diagnosis) -> JitPolicy:
    try:
        policy = jit_policy_from_env(os.environ)
    except AotcError as exc:
        report.problem(f"JIT policy: {exc}")
        return JitPolicy.AUTO
    source = "AOTC_JIT" if os.environ.get("AOTC_JIT", "").strip() else "AOTC_JIT unset"
    report.add(f"JIT policy: {policy.value} ({source})")
    return policy


def _cache(report: Diagnosis, cache: DiskCache | None) -> DiskCache | None:
    try:
        cache = cache if cache is not None else default_cache()
        info = cache.info()
    except AotcError as exc:
        report.problem(f"cache: {exc}")
        return None
    state = info.state + (f" ({info.reason})" if info.reason else "")
    report.add(
        f"cache: {info.directory}: {state}; {info.entries} entries, "
        f"{byte_size(info.total_bytes)} of {byte_size(info.max_bytes)}"
    )
    return cache


def _library(
    report: Diagnosis,
    name: str,
    platform: tuple[tuple[int, int], tuple[int, int] | None] | None,
    what: str,
    nvrtc_archs: frozenset[tuple[int, int]] | None,
    policy: JitPolicy,
    cache: DiskCache | None,
    driver: DriverVersion | None,
) -> None:
    try:
        directory = resolve_library(name)
    except AotcError as exc:  # a package's broken aotc.libraries entry point, two packages declaring one name
        report.problem(f"library {name}: {exc}")
        return
    try:
        index = LibraryIndex.open(directory)
    except (AotcError, OSError) as exc:
        report.problem(f"library {name}: cannot read {directory / INDEX_NAME}: {exc}")
        return
    clash = shadowed_declaration(name) if "/" not in name else ""
    if clash:
        report.problem(f"library {name}: {clash}")
    toolkit = index.ptx_toolkit
    kernels = list(index.kernels)
    sass, ptx = index.archs("sass"), index.archs("ptx")
    report.add(
        f"library {index.name}: {directory}, {len(kernels)} kernels, "
        f"{index.toolkit_label()}; SASS {', '.join(sass) or '-'}; PTX {', '.join(ptx) or '-'}"
    )
    _driver_check(report, index.name, toolkit_of(index), driver)
    if platform is None:
        if what:
            report.add(f"  decisions: none to make on {what}; `aotc doctor --arch X.Y` shows them for a GPU")
        else:
            report.add("  decisions: no GPU to decide for; `aotc doctor --arch X.Y` shows them for a device of that arch")
        return
    capability, driver = platform
    assumed = "" if driver else f", driver assumed new enough (CUDA {toolkit[0]}.{toolkit[1]}; --driver X.Y to change)"
    platform_value = Platform(capability, driver or toolkit, nvrtc_archs)
    report.add(f"  decisions for {what}{assumed}:")
    choices = {k: explain_selection(kernel_images(index, k), platform_value, policy) for k in kernels}
    rows = [("kernel", "decision", "image", "cache")]
    for kernel, choice in choices.items():
        cached = ""
        if choice.kind is ImageKind.NVRTC_JIT:
            cached = _cached(index, index.kernels[kernel], capability, cache)
        rows.append((kernel, choice.kind.value, _image(choice), cached))
    report.lines.extend("  " + line for line in _table(rows))
    counts = Counter(c.kind.value for c in choices.values())
    order = [kind.value for kind in ImageKind if counts[kind.value]]
    report.add("  summary: " + ", ".join(f"{counts[kind]} {kind}" for kind in order))
    for reason, count in Counter(c.reason for c in choices.values()).most_common():
        report.add(f"  - {count} x {reason}")


def _driver_check(report: Diagnosis, library: str, needs: Toolkit | None, driver: DriverVersion | None) -> None:
    if needs is None:
        report.add(f"  driver: not checked ({INDEX_NAME} names no toolkit; it was built by an older aotc)")
        return
    head = f"  driver: needs {needs.requirement()}"
    if driver is None:
        report.add(f"{head}; no driver here to check (`aotc doctor --driver X.Y` checks one)")
        return
    version, source = driver
    have = f"{head}; {source}: {cuda_text(version)} ({version})"
    try:
        check_driver(needs, version, library=library)
    except DriverTooOldError as exc:
        report.problem(f"{have}: too old: {exc}")
        return
    report.add(f"{have}: OK")


def _cached(index: LibraryIndex, kernel: IndexKernel, capability: tuple[int, int], cache: DiskCache | None) -> str:
    """Whether the NVRTC cubin this kernel would need is in the cache already."""
    from aotc.runtime.jit import jit_key, nvrtc_info

    info = nvrtc_info()
    if cache is None or info is None:
        return "?"
    try:
        source = index.read_verified(kernel, "source")
    except AotcError:
        return "no source"
    return "cached" if cache.load(jit_key(source, capability, info)) is not None else "not cached"


def _image(choice: ImageChoice) -> str:
    if choice.kind in (ImageKind.SASS_EXACT, ImageKind.SASS_COMPATIBLE):
        return f"SASS sm_{choice.arch}"
    if choice.kind is ImageKind.NVRTC_JIT:
        return f"NVRTC -> sm_{choice.arch}"
    if choice.kind is ImageKind.DRIVER_JIT:
        return f"PTX compute_{choice.arch}"
    return "-"


def _table(rows: list[tuple[str, ...]]) -> Iterator[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()


