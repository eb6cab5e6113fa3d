"""Is the GPU driver new enough for a library? The index's ``toolkit`` entry against ``cuDriverGetVersion``.

Code built by nvcc 13 needs a driver for CUDA 13 (R580 or newer). On an older
driver it fails at ``cuModuleLoadData`` with ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``
or ``CUDA_ERROR_NO_BINARY_FOR_GPU``, which names neither the driver nor the
fix. The build writes the minimum into the index::

    "toolkit": {"compiler": "nvcc", "version": "13.0.88", "cuda_major": 13,
                "min_driver": 13000, "wheel": "aotc"}

so the runtime can say so before it tries, and name the wheel built for the
driver in hand (``aotc-cuda12x`` for CUDA 12, after CuPy's ``cupy-cuda12x``).
Indexes written before the entry existed have no ``toolkit``: nothing is
checked for them.

Pure: no backend, no I/O; ``aotc.index`` validates the entry. Driver versions
are ``cuDriverGetVersion`` units, 1000 * major + 10 * minor (12040 is CUDA 12.4).
"""

from __future__ import annotations

from aotc._record import Record
from aotc.errors import DriverTooOldError
from aotc.index import parse_toolkit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from aotc.index import LibraryIndex

__all__ = ["OLDEST_SUPPORTED", "Toolkit", "check_driver", "cuda_text", "toolkit_from_index", "toolkit_of"]

# The oldest driver any aotc wheel runs on: the CUDA 12 lane's minimum.
OLDEST_SUPPORTED = 12000
# The driver branch that first supports a CUDA major.0, for people who know drivers by branch.
_BRANCHES = {12000: "R525", 13000: "R580"}
_LANE_SUFFIX = r"-cuda\d+x$"  # a lane's wheel name ends so; compiled in the one message that needs it


class Toolkit(Record):
    """What the index says about the CUDA toolkit a library was built with."""

    _fields = ("version", "cuda_major", "min_driver", "wheel")
    __slots__ = _fields
    version: str  # nvcc's, e.g. "13.0.88"
    cuda_major: int
    min_driver: int  # cuDriverGetVersion units
    wheel: str  # the distribution name of this CUDA lane's wheel, e.g. "aotc" or "aotc-cuda12x"

    @property
    def cuda(self) -> str:
        """The toolkit's CUDA version as major.minor, e.g. "13.0"."""
        return ".".join(self.version.split(".")[:2])

    def requirement(self) -> str:
        """The minimum driver in words, e.g. "CUDA 13.0 (cuDriverGetVersion 13000, an R580 or newer driver)"."""
        branch = _BRANCHES.get(self.min_driver)
        what = f", an {branch} or newer driver" if branch else ""
        return f"{cuda_text(self.min_driver)} (cuDriverGetVersion {self.min_driver}{what})"


def cuda_text(driver: int) -> str:
    """A cuDriverGetVersion number as "CUDA major.minor"."""
    return f"CUDA {_major_minor(driver)}"


def _major_minor(driver: int) -> str:
    return f"{driver // 1000}.{driver % 1000 // 10}"


def toolkit_of(index: LibraryIndex) -> Toolkit | None:
    """The driver's view of an index's ``toolkit`` table (validated when the index was
    read), or None for an index from before the table existed."""
    entry = index.toolkit
    return None if entry is None else Toolkit(entry.version, entry.cuda_major, entry.min_driver, entry.wheel)


def toolkit_from_index(document: Mapping[str, Any], where: str) -> Toolkit | None:
    """The same for a bare document: its ``toolkit`` table, checked by the index's validator."""
    if "toolkit" not in document:
        return None
    entry = parse_toolkit(where, document["toolkit"])
    return Toolkit(entry.version, entry.cuda_major, entry.min_driver, entry.wheel)


def check_driver(toolkit: Toolkit | None, driver: int | None, *, library: str = "") -> None:
    """None if a driver of version ``driver`` runs the library; else raise DriverTooOldError.

    ``toolkit`` None (an older index) or ``driver`` None (a backend with no
    NVIDIA driver, such as the emulator) check nothing. ``library`` names the
    library in the message.
    """
    if toolkit is None or driver is None or driver >= toolkit.min_driver:
        return
    which = f" (library {library!r})" if library else ""
    branch = _BRANCHES.get(toolkit.min_driver)
    needs = _major_minor(toolkit.min_driver) + (f" (an {branch} or newer driver)" if branch else "")
    head = (
        f"this GPU driver supports {cuda_text(driver)} (cuDriverGetVersion {driver}), but this {toolkit.wheel} wheel"
        f"{which} was built with CUDA {toolkit.cuda} and needs {needs}"
    )
    major = driver // 1000
    if driver < OLDEST_SUPPORTED:
        oldest = f"{cuda_text(OLDEST_SUPPORTED)} ({_BRANCHES[OLDEST_SUPPORTED]})"
        msg = f"{head}; no aotc wheel supports a driver older than {oldest}: upgrade the driver"
    elif major < toolkit.cuda_major:
        # The lane built for this driver's CUDA major; CuPy names its wheels the same way.
        import re  # not at import: a start-up must not pay for re

        other = f"{re.sub(_LANE_SUFFIX, '', toolkit.wheel)}-cuda{major}x"
        msg = f"{head}: upgrade the driver, or pip install {other}"
    else:
        msg = f"{head}: upgrade the driver"
    raise DriverTooOldError(msg)
