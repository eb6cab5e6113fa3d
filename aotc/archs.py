"""SM architecture names: parsing, validation and the default matrix.

Architectures are written as in ``CUDA_ARCHITECTURES`` without the ``sm_``
prefix: ``80``, ``90a`` (arch-specific, runs only on exactly 9.0) or ``100f``
(family-specific). The same rules apply to the manifest and to the
``AOTC_ARCHS`` / ``AOTC_PTX_ARCHS`` overrides.
"""

from __future__ import annotations

from aotc.errors import ArchError, echo

__all__ = [
    "DEFAULT_SASS",
    "MIN_ARCH",
    "MIN_ARCH_CUDA12",
    "arch_sort_key",
    "parse_arch",
    "parse_arch_list",
]

DEFAULT_SASS = ("75", "80", "86", "89", "90", "100", "120")
MIN_ARCH = 75  # the oldest architecture CUDA 13 compiles for
MIN_ARCH_CUDA12 = 70  # the CUDA 12 lane (AOTC_CUDA=12) also builds Volta

# What nvcc 13.0 and 12.9 know; a newer nvcc on PATH is asked about anything else.
_KNOWN_BASE = frozenset({70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121})
_MAX_DIGITS = 4  # sm_1000 is far off; a longer number is a typo, and int() of 5000 digits raises
_DIGITS = "0123456789"


def _number_and_suffix(text: str) -> tuple[int, str] | None:
    """``text`` as 1 to _MAX_DIGITS ASCII digits and an optional 'a' or 'f'
    (``([0-9]{1,4})([af]?)``), or None. Not a regular expression: the runtime
    reads MIN_ARCH from this module, and a start-up must not import ``re``."""
    suffix = text[-1:] if text[-1:] in ("a", "f") else ""
    digits = text[: len(text) - len(suffix)]
    if not 0 < len(digits) <= _MAX_DIGITS or digits.strip(_DIGITS):
        return None
    return int(digits), suffix


def arch_sort_key(arch: str) -> tuple[int, str]:
    found = _number_and_suffix(arch) if isinstance(arch, str) else None
    return found if found is not None else (0, arch)


_nvcc_answer: list[frozenset[int]] = []  # nvcc asked once a process


def _nvcc_known() -> frozenset[int]:
    if _nvcc_answer:
        return _nvcc_answer[0]
    # Imported here: the runtime reads MIN_ARCH from this module, and must not pay for subprocess.
    import re
    import shutil
    import subprocess

    known: frozenset[int] = frozenset()
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        try:
            out = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, timeout=60, check=True)
            known = frozenset(int(m) for m in re.findall(r"sm_([0-9]+)", out.stdout))
        except (OSError, subprocess.SubprocessError):
            pass
    _nvcc_answer.append(known)
    return known


def parse_arch(value: object, min_arch: int = MIN_ARCH) -> str:
    """Normalise one architecture value (``80``, ``"90a"``) or raise :class:`ArchError`.

    ``min_arch`` is the oldest the build's CUDA lane compiles for.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str, float)):
        msg = f"architecture must be a number like 80 or a string like '90a', not {echo(value)}"
        raise ArchError(msg)
    if isinstance(value, float):
        # .inf, .nan and 1e300 are floats too, and int() of them raises.
        if not 0 < value < 100:
            msg = f"architecture {echo(value)} is not of the form 80, 90a or 100f"
            raise ArchError(msg)
        msg = f"architecture {value!r} looks like a compute capability; write {round(value * 10)}, not {value}"
        raise ArchError(msg)
    if isinstance(value, int) and value.bit_length() > 64:
        # str() of an integer over 4300 digits raises; no architecture is near this.
        msg = f"architecture of {value.bit_length()} bits is not of the form 80, 90a or 100f"
        raise ArchError(msg)
    text = str(value).strip()
    whole, dot, fraction = text.partition(".")
    if len(text) < 8 and dot and whole and fraction and not (whole + fraction).strip(_DIGITS):  # [0-9]+\.[0-9]+
        msg = f"architecture {text!r} looks like a compute capability; write {text.replace('.', '')}"
        raise ArchError(msg)
    found = _number_and_suffix(text)
    if found is None:
        msg = f"architecture {echo(text)} is not of the form 80, 90a or 100f"
        raise ArchError(msg)
    number, suffix = found
    if number < min_arch:
        msg = f"architecture {text} is below sm_{min_arch}, the oldest CUDA {'12' if min_arch < MIN_ARCH else '13'} supports"
        if min_arch == MIN_ARCH and number >= MIN_ARCH_CUDA12:
            msg += " (build it in the CUDA 12 lane: AOTC_CUDA=12)"
        raise ArchError(msg)
    if number not in _KNOWN_BASE and number not in _nvcc_known():
        known = ", ".join(str(a) for a in sorted(_KNOWN_BASE | _nvcc_known()))
        msg = f"architecture {text} is not known to nvcc (known: {known})"
        raise ArchError(msg)
    if suffix == "a" and number < 90:
        msg = f"architecture {text}: arch-specific 'a' builds exist from sm_90 on"
        raise ArchError(msg)
    if suffix == "f" and number < 100:
        msg = f"architecture {text}: family 'f' builds exist from sm_100 on"
        raise ArchError(msg)
    return f"{number}{suffix}"


def parse_arch_list(text: str, min_arch: int = MIN_ARCH) -> tuple[str, ...]:
    """Parse an override such as ``"80;90"``, ``"80,90a"`` or ``"80 90"``."""
    items = text.replace(";", " ").replace(",", " ").split()
    if not items:
        msg = "architecture list is empty"
        raise ArchError(msg)
    archs = tuple(parse_arch(item, min_arch) for item in items)
    duplicates = sorted({a for a in archs if archs.count(a) > 1}, key=arch_sort_key)
    if duplicates:
        msg = f"architecture list repeats {', '.join(duplicates)}"
        raise ArchError(msg)
    return tuple(sorted(archs, key=arch_sort_key))
