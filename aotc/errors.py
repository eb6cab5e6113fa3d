"""The exceptions aotc raises on purpose: the project's one hierarchy.

Every expected failure is one of these, and its message is a single line a
person can act on: the CLI prints it without a traceback. A refusal of a
call's argument names the public function called, then the argument
(``tropical.matmul: a: dtype i16, but ...``). ``str()`` escapes
control characters, so a value echoed from a hostile file cannot forge a
second line. Anything else that escapes is a bug and keeps its traceback.

Errors about a caller's argument also derive from the built-in a Python user
would catch (``ValueError``, ``TypeError``, ``KeyError``), so code written
against NumPy-style APIs keeps working. ``tests/test_errors.py`` walks the
package and fails on any raise of a class not defined here.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "ECHO_LIMIT",
    "AotcError",
    "ArchError",
    "ArgumentError",
    "ArgumentTypeError",
    "BackendError",
    "BuildError",
    "CacheError",
    "CacheWarning",
    "CaptureError",
    "ConfigurationError",
    "DamagedLibraryError",
    "DeviceFaultError",
    "DriverTooOldError",
    "IndexFormatError",
    "KernelFaultError",
    "LibraryNotFoundError",
    "ManifestError",
    "NoDeviceError",
    "NoKernelImageError",
    "ToolchainError",
    "UnknownKernelError",
    "UnreadableFileError",
    "YamlError",
    "called",
    "echo",
    "listing",
    "one_line",
]

# Longest echo of a user's value inside a message; longer values are cut.
ECHO_LIMIT = 80


def one_line(text: str) -> str:
    """``text`` with every control character escaped (``\\n`` -> ``\\\\n``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def echo(value: object, limit: int = ECHO_LIMIT) -> str:
    """``repr(value)`` fit for an error line: control characters escaped, cut to ``limit``."""
    text = one_line(repr(value))
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-2:]}"


def listing(names: Iterable[str], sep: str = ", ", limit: int = 100) -> str:
    """``names`` for an error line's "(known: ...)", cut to stay one short line ("none" for none)."""
    names = list(names)
    text = sep.join(names) or "none"
    return text if len(text) <= limit else f"{text[:limit].rpartition(sep)[0] or text[:limit]}{sep}... ({len(names)} in all)"


def called(error: AotcError, function: str) -> AotcError:
    """``error``, as a refusal of a call of the public ``function``, unless a
    call of a function over it named its own already; returns it, to raise."""
    if error.function is None:
        error.function = function
    return error


class AotcError(Exception):
    """Root of every error aotc raises deliberately.

    ``function``, where set, names the public function whose call this refuses
    (``tropical.matmul_backward``), and opens the message: the binder names
    the entry the caller called, and an API written over it renames the
    refusals of its own functions' calls (``aotc.tropical``)."""

    function: str | None = None  # set on the instance (``called``); no __init__ of its own, which torch.compile would trace

    def __str__(self) -> str:
        text = one_line(str(self.args[0])) if len(self.args) == 1 else one_line(super().__str__())
        return f"{self.function}: {text}" if self.function else text

    def __repr__(self) -> str:
        # The whole line, function included: what a tracer quotes (torch.compile's "got ArgumentError(...)").
        return f"{type(self).__name__}({str(self)!r})"


# --- build time -------------------------------------------------------------


class ManifestError(AotcError):
    """The manifest is malformed: the message names the file, line and key."""


class YamlError(ManifestError):
    """A YAML problem at a line (1-based); the manifest loader adds the file name."""

    def __init__(self, line: int, message: str, key: str = "(yaml)") -> None:
        super().__init__(message)
        self.line = line
        self.message = message
        self.key = key


class ArchError(AotcError, ValueError):
    """An architecture value is malformed or unknown; the caller adds where."""


class BuildError(AotcError):
    """Generating, compiling or indexing kernels failed."""


class ToolchainError(BuildError):
    """No usable compiler for the requested lane; the message says what to install."""


# --- an installed library ---------------------------------------------------


class LibraryNotFoundError(AotcError):
    """No kernel library where one was named: no index.json, no such wheel or name."""


class IndexFormatError(AotcError):
    """index.json is unreadable, of another schema, malformed, or edited after the
    build (a checksum mismatch); the message names the field."""


class DamagedLibraryError(AotcError):
    """A file of an installed library is missing or does not match its checksum."""


class UnknownKernelError(AotcError, KeyError):
    """The library has no kernel of that name or kind."""


class NoKernelImageError(AotcError):
    """No image in the library can run on the device in hand."""


# --- the caller's arguments and environment ---------------------------------


class ArgumentError(AotcError, ValueError):
    """An argument has a value aotc cannot use; the message names the argument."""


class ArgumentTypeError(AotcError, TypeError):
    """An argument is of a type aotc does not accept; the message names it and what is."""


class ConfigurationError(AotcError):
    """An environment variable or option has a value aotc cannot use; the message names it."""


class UnreadableFileError(AotcError):
    """A file aotc must read is missing, not a regular file (a FIFO, a link, a
    directory) or over its size cap; the message names the path."""


class CacheError(AotcError):
    """The disk cache cannot be used as configured."""


class CacheWarning(UserWarning):
    """The disk cache was refused and aotc runs uncached."""


# --- the GPU ----------------------------------------------------------------


class BackendError(AotcError):
    """A backend is not installed, or the driver refused an operation.

    ``cuda_error`` is the driver's name for the refusal
    (``CUDA_ERROR_INVALID_HANDLE``) where the backend has one, so a caller
    deciding what the refusal means reads that, not the message's words."""

    def __init__(self, message: str, *, cuda_error: str | None = None) -> None:
        super().__init__(message)
        self.cuda_error = cuda_error


class NoDeviceError(BackendError):
    """No usable GPU here: no driver, no device, or the device is unavailable.

    The message ends with the way out a user without a GPU needs (a laptop, a
    CI runner): the emulator runs the same kernels on the CPU. The emulator's
    own errors (a device past its last) pass ``hint=False``."""

    HINT = "to run the kernels on the CPU instead, set AOTC_BACKEND=emulator"

    def __init__(self, message: str, *, hint: bool = True) -> None:
        super().__init__(f"{message}; {self.HINT}" if hint and "AOTC_BACKEND" not in message else message)


class DriverTooOldError(BackendError):
    """The GPU driver is older than the CUDA toolkit a library was built with
    needs; the message names both versions and what to install instead."""


class CaptureError(BackendError):
    """A call would load a module, allocate or copy host memory while its stream
    is being captured into a CUDA graph; the message says to preload first."""


class DeviceFaultError(BackendError):
    """A kernel faulted on the GPU (an illegal address, a trap, a timeout). The
    fault surfaces later, from whichever call next touches the context; the
    message names that call and the launch that most likely caused it. The
    context is unusable from then on: the process must restart."""


class KernelFaultError(BackendError):
    """A kernel launch broke CUDA's rules: the emulator's checks
    (``AOTC_EMULATOR_CHECK``) saw a race, an out-of-bounds or misaligned
    access, an uninitialized shared read or a divergent barrier; the message
    names the kernel, the check, the block and thread, and the array and offset."""
