"""Choosing which image of a kernel to load on the GPU in hand.

A pure function of its inputs: no GPU, no I/O, standard library only, so every
rule in DESIGN.md ("Choosing an image") is tested on a machine without a GPU.
"""

from __future__ import annotations

from aotc._record import Record, StrChoices
from aotc.errors import ArgumentError, ConfigurationError, IndexFormatError, NoKernelImageError
from aotc.index.schema import ARCH_TEXT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, ClassVar

__all__ = [
    "INTEGRATED_ARCHS",
    "Arch",
    "ImageChoice",
    "ImageKind",
    "JitPolicy",
    "KernelImages",
    "Platform",
    "explain_selection",
    "jit_policy_from_env",
    "select_image",
]

# Among builds for the same (major, minor), the more specific one wins: an
# 'a' build may use features that the family and plain builds leave out.
_VARIANT_RANK = {"": 0, "f": 1, "a": 2}
# Jetson (integrated, "Tegra") architectures. NVIDIA supports running a cubin
# on a newer minor revision only on desktop GPUs: not on Tegra, and not
# between Tegra and desktop. So sm_86 SASS does not run on an 8.7 Orin, and
# sm_87 SASS does not run on an 8.9 desktop GPU. (11.0 is Thor, which CUDA 12
# called 10.1.) PTX is unaffected: the driver JITs it onto any of them.
INTEGRATED_ARCHS = frozenset({(7, 2), (8, 7), (10, 1), (11, 0)})


class JitPolicy(StrChoices):
    """The AOTC_JIT override."""

    AUTO = "auto"
    NVRTC = "nvrtc"
    DRIVER = "driver"
    OFF = "off"


class ImageKind(StrChoices):
    """How the chosen image reaches the GPU."""

    SASS_EXACT = "sass_exact"
    SASS_COMPATIBLE = "sass_compatible"
    NVRTC_JIT = "nvrtc_jit"
    DRIVER_JIT = "driver_jit"
    UNAVAILABLE = "unavailable"


_set = object.__setattr__


class Arch(Record):
    """One architecture from the index: ``"86"``, ``"90a"``, ``"100f"``; ``variant``
    is "" (plain, the default), "a" (arch-specific) or "f" (family-specific)."""

    _fields = ("major", "minor", "variant")
    __slots__ = _fields
    _defaults: ClassVar[dict[str, Any]] = {"variant": ""}
    major: int
    minor: int
    variant: str

    @classmethod
    def parse(cls, text: str, *, what: str = "arch") -> Arch:
        parts = ARCH_TEXT.parts(text) if isinstance(text, str) else None
        if parts is None:
            expected = "digits and an optional 'a' or 'f', e.g. '86', '90a', '100f'"
            msg = f"malformed {what} {text!r} in the index (expected {expected})"
            raise IndexFormatError(msg)
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.major}{self.minor}{self.variant}"


def _parse_archs(archs: Iterable[str], what: str, kernel: str) -> tuple[Arch, ...]:
    if isinstance(archs, str):
        msg = f"{kernel}{what} archs must be a list of strings, not the string {archs!r}"
        raise IndexFormatError(msg)
    try:
        return tuple(Arch.parse(text, what=f"{what} arch") for text in archs)
    except IndexFormatError as error:
        raise IndexFormatError(f"{kernel}{error}") from None


class KernelImages(Record):
    """What the index says one kernel ships: SASS and PTX architectures, the CUDA
    version of the toolkit that wrote the PTX, and the kernel's name (for messages)."""

    _fields = ("sass", "ptx", "ptx_toolkit", "name", "sass_archs", "ptx_archs")
    __slots__ = _fields
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    ptx_toolkit: tuple[int, int]
    name: str
    sass_archs: tuple[Arch, ...]  # parsed from sass: not an argument
    ptx_archs: tuple[Arch, ...]

    def __init__(self, sass: Iterable[str], ptx: Iterable[str], ptx_toolkit: Iterable[int], name: str = "") -> None:
        prefix = f"kernel {name!r}: " if name else ""
        sass_archs = _parse_archs(sass, "SASS", prefix)
        ptx_archs = _parse_archs(ptx, "PTX", prefix)
        _set(self, "sass", tuple(sass))
        _set(self, "ptx", tuple(ptx))
        _set(self, "ptx_toolkit", tuple(ptx_toolkit))
        _set(self, "name", name)
        _set(self, "sass_archs", sass_archs)
        _set(self, "ptx_archs", ptx_archs)

    def __repr__(self) -> str:
        return f"KernelImages(sass={self.sass!r}, ptx={self.ptx!r}, ptx_toolkit={self.ptx_toolkit!r}, name={self.name!r})"


class Platform(Record):
    """The GPU in hand and the JIT tools beside it: its compute capability, the
    CUDA version its driver supports, and the archs NVRTC compiles for (None: no NVRTC)."""

    _fields = ("capability", "driver_version", "nvrtc_archs")
    __slots__ = _fields
    capability: tuple[int, int]
    driver_version: tuple[int, int]
    nvrtc_archs: frozenset[tuple[int, int]] | None

    def __init__(
        self, capability: tuple[int, int], driver_version: Iterable[int], nvrtc_archs: Iterable[Iterable[int]] | None = None
    ) -> None:
        major, minor = capability
        if major < 1 or not 0 <= minor <= 9:
            msg = f"impossible compute capability {capability!r}"
            raise ArgumentError(msg)
        _set(self, "capability", (major, minor))
        _set(self, "driver_version", tuple(driver_version))
        _set(self, "nvrtc_archs", None if nvrtc_archs is None else frozenset(tuple(arch) for arch in nvrtc_archs))


class ImageChoice(Record):
    """The decision: which image, and a short reason that ``aotc doctor`` prints.

    ``arch`` is the SASS or PTX arch loaded, or the arch NVRTC compiles for;
    it is empty when ``kind`` is UNAVAILABLE, and ``reason`` is then the error.
    """

    _fields = ("kind", "arch", "reason")
    __slots__ = _fields
    kind: ImageKind
    arch: str
    reason: str

    @property
    def available(self) -> bool:
        return self.kind is not ImageKind.UNAVAILABLE


def jit_policy_from_env(environ: Mapping[str, str]) -> JitPolicy:
    """Read AOTC_JIT from ``environ``; unset or empty means auto."""
    value = environ.get("AOTC_JIT", "").strip().lower()
    if not value:
        return JitPolicy.AUTO
    try:
        return JitPolicy(value)
    except ValueError:
        known = ", ".join(policy.value for policy in JitPolicy)
        msg = f"AOTC_JIT={environ['AOTC_JIT']!r} is not one of: {known}"
        raise ConfigurationError(msg) from None


def select_image(
    kernel: KernelImages, platform: Platform, policy: JitPolicy | str = JitPolicy.AUTO
) -> ImageChoice:
    """The image to load; raises NoKernelImageError (one line) when none fits."""
    choice = explain_selection(kernel, platform, policy)
    if not choice.available:
        raise NoKernelImageError(choice.reason)
    return choice


def explain_selection(
    kernel: KernelImages, platform: Platform, policy: JitPolicy | str = JitPolicy.AUTO
) -> ImageChoice:
    """The same decision as select_image, but an UNAVAILABLE choice instead of raising."""
    policy = JitPolicy(policy)
    major, minor = platform.capability
    device = f"sm_{major}{minor}"

    sass = _best_sass(kernel.sass_archs, major, minor)
    if sass is not None:
        if sass.minor == minor:
            return ImageChoice(ImageKind.SASS_EXACT, str(sass), f"SASS sm_{sass} matches {device}")
        build = "family SASS" if sass.variant == "f" else "SASS"
        reason = f"{build} sm_{sass} runs on {device} (same major, older minor)"
        return ImageChoice(ImageKind.SASS_COMPATIBLE, str(sass), reason)

    failures: list[str] = []
    fixes: list[str] = []
    if _crosses_integrated(kernel.sass_archs, major, minor):
        failures.append(f"SASS of other minor revisions never runs across Jetson (integrated) GPUs such as {device}")
    if policy is JitPolicy.OFF:
        failures.append("JIT is disabled")
        fixes.append("set AOTC_JIT=auto")
    if policy in (JitPolicy.AUTO, JitPolicy.NVRTC):
        if platform.nvrtc_archs is None:
            failures.append("NVRTC is not installed")
            fixes.append("pip install 'aotc[jit]'")
        elif (major, minor) not in platform.nvrtc_archs:
            failures.append(f"this NVRTC cannot compile for {device}")
            fixes.append("pip install -U 'aotc[jit]' for a newer NVRTC")
        else:
            reason = f"no SASS for {device}; NVRTC compiles this kernel for {device}"
            return ImageChoice(ImageKind.NVRTC_JIT, f"{major}{minor}", reason)
    if policy in (JitPolicy.AUTO, JitPolicy.DRIVER):
        ptx = _best_ptx(kernel.ptx_archs, major, minor)
        toolkit = _version(kernel.ptx_toolkit)
        driver = _version(platform.driver_version)
        if ptx is None:
            failures.append(f"no PTX at or below {device}")
        elif platform.driver_version < kernel.ptx_toolkit:
            failures.append(f"driver CUDA {driver} is older than CUDA {toolkit} that wrote the PTX")
            fixes.append(f"update the NVIDIA driver to CUDA {toolkit}+")
        else:
            reason = f"no SASS for {device}; driver (CUDA {driver}) JITs PTX compute_{ptx} from CUDA {toolkit}"
            return ImageChoice(ImageKind.DRIVER_JIT, str(ptx), reason)
    fixes.append(f"rebuild with AOTC_ARCHS={major}{minor}")
    remedy = f"fix: {' or '.join(fixes)}"
    from aotc.archs import MIN_ARCH, MIN_ARCH_CUDA12  # here, where no image fits: a choice that finds one needs neither

    if (major, minor) < divmod(MIN_ARCH, 10) and kernel.ptx_toolkit >= (13, 0):
        # Neither nvcc 13 nor NVRTC 13 targets it: suggesting a rebuild or the
        # JIT extra would send people in circles. Volta has the CUDA 12 wheel.
        oldest = f"sm_{MIN_ARCH}"
        failures.append(f"{device} is older than {oldest}, the oldest architecture CUDA 13 compiles for")
        if (major, minor) >= divmod(MIN_ARCH_CUDA12, 10):
            remedy = "fix: pip install aotc-cuda12x, the CUDA 12 build with sm_70 SASS (or rebuild with AOTC_CUDA=12)"
        else:
            remedy = f"no fix in aotc: it builds for sm_{MIN_ARCH_CUDA12} and newer only; use a newer GPU"

    held = f"SASS [{', '.join(kernel.sass)}] and PTX [{', '.join(kernel.ptx)}]"
    subject = f"kernel {kernel.name!r}" if kernel.name else "this kernel"
    override = "" if policy is JitPolicy.AUTO else f"AOTC_JIT={policy.value}: "
    reason = f"{override}no image of {subject} runs on {device}: the library holds {held}; {'; '.join(failures)}; {remedy}"
    return ImageChoice(ImageKind.UNAVAILABLE, "", reason)


def _best_sass(archs: tuple[Arch, ...], major: int, minor: int) -> Arch | None:
    return max((arch for arch in archs if _sass_runs(arch, major, minor)), key=_rank, default=None)


def _sass_runs(arch: Arch, major: int, minor: int) -> bool:
    if arch.major != major:  # SASS never crosses a major
        return False
    if arch.minor == minor:
        return True
    # An older minor: never an 'a' build (its exact arch only), and never on or onto a Jetson.
    return arch.minor < minor and arch.variant != "a" and not _jetson_pair(arch, major, minor)


def _jetson_pair(arch: Arch, major: int, minor: int) -> bool:
    return (major, minor) in INTEGRATED_ARCHS or (arch.major, arch.minor) in INTEGRATED_ARCHS


def _crosses_integrated(archs: tuple[Arch, ...], major: int, minor: int) -> bool:
    """Whether older same-major SASS exists that only the Jetson rule refuses."""
    return _best_sass(archs, major, minor) is None and any(
        arch.major == major and arch.minor < minor and arch.variant != "a" and _jetson_pair(arch, major, minor)
        for arch in archs
    )


def _best_ptx(archs: tuple[Arch, ...], major: int, minor: int) -> Arch | None:
    # Plain PTX JITs forward onto any newer arch; 'f' PTX only within its own
    # family and 'a' PTX only on its exact arch.
    def usable(arch: Arch) -> bool:
        if arch.variant == "a":
            return (arch.major, arch.minor) == (major, minor)
        if arch.variant == "f":
            return arch.major == major and arch.minor <= minor
        return (arch.major, arch.minor) <= (major, minor)

    return max(filter(usable, archs), key=_rank, default=None)


def _rank(arch: Arch) -> tuple[int, int, int]:
    return (arch.major, arch.minor, _VARIANT_RANK[arch.variant])


def _version(version: tuple[int, int]) -> str:
    return ".".join(str(part) for part in version)
