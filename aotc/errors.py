"""The exceptions aotc raises on purpose.

Every expected failure is one of these, and its message is a single line a
person can act on: the CLI prints it without a traceback. Anything else that
escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = [
    "AotcError",
    "BuildError",
    "CacheError",
    "ManifestError",
    "NoKernelImageError",
]


class AotcError(Exception):
    """Root of every error aotc raises deliberately."""


class ManifestError(AotcError):
    """The manifest is malformed: the message names the file, line and key."""


class BuildError(AotcError):
    """Generating, compiling or indexing kernels failed."""


class NoKernelImageError(AotcError):
    """No image in the library can run on the device in hand."""


class CacheError(AotcError):
    """The disk cache cannot be used as configured."""
