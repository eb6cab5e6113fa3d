"""The exceptions aotc raises on purpose.

Every expected failure is one of these, and its message is a single line a
person can act on: the CLI prints it without a traceback. Anything else that
escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = [
    "AotcError",
    "BackendError",
    "BuildError",
    "CacheError",
    "ConfigurationError",
    "DriverTooOldError",
    "ManifestError",
    "NoDeviceError",
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


class ConfigurationError(AotcError):
    """An environment variable or option has a value aotc cannot use; the message names it."""


class BackendError(AotcError):
    """A backend is not installed, or the driver refused an operation."""


class NoDeviceError(BackendError):
    """No usable GPU here: no driver, no device, or the device is unavailable."""


class DriverTooOldError(BackendError):
    """The GPU driver is older than the CUDA toolkit a library was built with
    needs; the message names both versions and what to install instead."""
