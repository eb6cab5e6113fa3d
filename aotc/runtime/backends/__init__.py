"""Which backend runs kernels: ``AOTC_BACKEND``, or chosen automatically.

Backends are named here as ``module:class`` strings, so importing this
package imports none of them; one is imported when it is first asked for,
and then kept for the life of the process (it holds the device's context) by
``registry``, the process's ``BackendRegistry``: one instance per (backend,
device ordinal), each in that device's primary context.

Automatic choice, when ``AOTC_BACKEND`` is unset: the first of cuda-python
and pycuda that is installed and finds a GPU; else the first installed one,
whose ``device()`` then says plainly that there is no GPU. The emulator and
noop backends are never chosen automatically: their pointers are host
memory, so quietly falling back to them would turn device pointers into
crashes.
"""

from __future__ import annotations

import os
import sys
from _thread import allocate_lock  # threading.Lock itself, without importing threading

from aotc.errors import ArgumentError, BackendError, ConfigurationError, NoDeviceError, echo
from aotc.runtime.backends.base import DeviceInfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from aotc.runtime.backends.protocol import Backend

__all__ = ["BACKENDS", "Backend", "BackendRegistry", "DeviceInfo", "backend_name_from_env", "get_backend", "registry"]

BACKENDS = {
    "cuda-python": "aotc.runtime.backends.cuda_python:CudaPythonBackend",
    "pycuda": "aotc.runtime.backends.pycuda:PyCudaBackend",
    "emulator": "aotc.runtime.emulator.backend:EmulatorBackend",
    "noop": "aotc.runtime.backends.noop:NoopBackend",
}
# What must be importable for an automatic candidate to be worth trying.
AUTOMATIC = (("cuda-python", "cuda.bindings"), ("pycuda", "pycuda"))


def backend_name_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The backend ``AOTC_BACKEND`` names, or None for automatic."""
    environ = os.environ if environ is None else environ
    value = environ.get("AOTC_BACKEND", "").strip().lower()
    if not value or value == "auto":
        return None
    if value not in BACKENDS:
        msg = f"AOTC_BACKEND={echo(environ['AOTC_BACKEND'])} is not one of: auto, {', '.join(BACKENDS)}"
        raise ConfigurationError(msg)
    return value


class BackendRegistry:
    """Backends by name, each created on first request and then kept.

    ``specs`` maps names to ``module:class`` (or to a factory taking the ordinal); ``automatic`` lists the
    (name, module it needs) pairs the automatic choice tries in order;
    ``has_module`` says whether a module is importable. The process has one,
    ``registry``; a test builds its own with stand-ins.
    """

    def __init__(
        self,
        specs: Mapping[str, str | Callable[[int], Backend]] = BACKENDS,
        *,
        automatic: Sequence[tuple[str, str]] = AUTOMATIC,
        has_module: Callable[[str], bool] | None = None,
    ) -> None:
        self.specs = dict(specs)
        self.automatic = tuple(automatic)
        self._has_module = has_module or _has_module
        self._lock = allocate_lock()
        self._instances: dict[tuple[str, int], Backend] = {}

    def get(self, name: str | None = None, ordinal: int = 0) -> Backend:
        """The backend called ``name`` for device ``ordinal``; None: ``AOTC_BACKEND`` or the automatic choice."""
        if name is None:
            name = backend_name_from_env()
            if name is None:
                return self.choose(ordinal)
        if name not in self.specs:
            msg = f"unknown backend {echo(name)} (known: {', '.join(self.specs)})"
            raise ConfigurationError(msg)
        if type(ordinal) is not int or ordinal < 0:
            msg = f"device: expected a device ordinal (an int >= 0), got {echo(ordinal)}"
            raise ArgumentError(msg)
        with self._lock:
            backend = self._instances.get((name, ordinal))
            if backend is None:
                backend = self._instances[name, ordinal] = self._create(name, ordinal)
            return backend

    def choose(self, ordinal: int = 0) -> Backend:
        """The first automatic candidate that is installed and finds a GPU; else the
        first installed one, whose ``device()`` then says there is no GPU."""
        fallback: Backend | None = None
        for name, needs in self.automatic:
            if not self._has_module(needs):
                continue
            backend = self.get(name, ordinal)
            try:
                backend.device()
            except NoDeviceError:
                fallback = fallback or backend
                continue
            return backend
        if fallback is not None:
            return fallback
        msg = (
            "no CUDA backend is installed: pip install cuda-bindings (or 'aotc[pycuda]'); "
            "AOTC_BACKEND=emulator runs kernels on the CPU"
        )
        raise BackendError(msg)

    def _create(self, name: str, ordinal: int) -> Backend:
        spec = self.specs[name]
        if callable(spec):
            return spec(ordinal)
        module_name, _, class_name = spec.partition(":")
        try:
            __import__(module_name)  # importlib.import_module's work, without importing importlib (and warnings)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                msg = f"the {name} backend is not part of this aotc installation ({module_name} is missing)"
                raise BackendError(msg) from None
            raise
        cls = getattr(sys.modules[module_name], class_name)
        return cls(ordinal=ordinal) if ordinal else cls()


def _has_module(name: str) -> bool:
    try:
        import importlib.util  # only where a backend is chosen automatically

        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


registry = BackendRegistry()


def get_backend(name: str | None = None, ordinal: int = 0) -> Backend:
    """The process's backend called ``name`` for device ``ordinal``; None: ``AOTC_BACKEND`` or the automatic choice."""
    return registry.get(name, ordinal)


def __getattr__(name: str) -> Any:
    if name == "Backend":  # a typing.Protocol: loaded when asked for (see backends.protocol)
        from aotc.runtime.backends.protocol import Backend

        return Backend
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
