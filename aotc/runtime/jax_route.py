"""Which launcher JAX arrays' kernels take on a GPU, read from the installed
distributions' metadata: nothing here imports jax, so ``aotc doctor`` can say
it, and a call decides it once.

Two routes exist (docs/design.md, "JAX"):

- ``buffer_callback``: XLA calls back into Python on its own stream, and
  aotc's ordinary launch runs there. Every jax that has
  ``jax.experimental.buffer_callback`` takes it, every kernel fits it, and
  it runs Python on each execution.
- jaxlib's built-in GPU kernel launcher, the ``triton_kernel_call_ffi``
  custom call: XLA launches the wheel's own fatbin itself, so no Python runs
  per call and a CUDA graph can hold the launch. It lives in jax's CUDA
  plugin (``jax-cuda12-plugin``, ``jax-cuda13-plugin``), and only from
  0.11.1 does its protobuf carry a ready module image
  (``TritonKernel.module_image``): the schemas embedded in the plugins'
  ``_triton.so`` of 0.11.0 and earlier have no field 11.

``AOTC_JAX_LAUNCHER=callback`` keeps every kernel on ``buffer_callback``;
unset, empty or ``auto`` takes the built-in launcher where a plugin carries it.
"""

from __future__ import annotations

import os
from importlib import metadata

from aotc.errors import ConfigurationError

__all__ = ["BUILTIN", "CALLBACK", "MODULE_IMAGE_SINCE", "PLUGINS", "builtin_launcher", "plugin_version"]

BUILTIN = "triton_kernel_call_ffi"
CALLBACK = "buffer_callback"
MODULE_IMAGE_SINCE = (0, 11, 1)
PLUGINS = ("jax-cuda13-plugin", "jax-cuda12-plugin")
_CHOICES = ("auto", "callback")


def plugin_version() -> tuple[str, str] | None:
    """(distribution, version) of the installed jax CUDA plugin; None where none is."""
    for name in PLUGINS:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def builtin_launcher(environ: os._Environ[str] | dict[str, str] = os.environ) -> tuple[bool, str]:
    """(whether the built-in launcher is in use, one line saying why)."""
    asked = environ.get("AOTC_JAX_LAUNCHER", "").strip().lower() or "auto"
    if asked not in _CHOICES:
        msg = f"AOTC_JAX_LAUNCHER={environ['AOTC_JAX_LAUNCHER']!r} is not one of: {', '.join(_CHOICES)}"
        raise ConfigurationError(msg)
    if asked == "callback":
        return False, "AOTC_JAX_LAUNCHER=callback"
    found = plugin_version()
    if found is None:
        return False, "no jax CUDA plugin is installed"
    name, version = found
    since = ".".join(map(str, MODULE_IMAGE_SINCE))
    if _release(version) < MODULE_IMAGE_SINCE:
        return False, f"{name} {version} has no module_image in its launcher's protobuf (it came in {since})"
    return True, f"{name} {version} carries module_image (since {since})"


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string: "0.12.0.1" -> (0, 12, 0, 1), "0.11.1.dev2" -> (0, 11, 1)."""
    numbers = []
    for part in version.split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers)
