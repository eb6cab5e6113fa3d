"""A strict stand-in for CuPy over the emulator's device memory and streams.

It keeps the rules of CuPy that aotc's CuPy path depends on, so that path runs
(and its stream bugs show) without a GPU:

- each device has its own current stream (``get_current_stream()`` answers
  for the *current* device), set by ``with stream:`` and by
  ``with Stream.from_external(obj):`` (CuPy 14's way; ``ExternalStream``
  warns that it is deprecated, as CuPy 14 does), the null stream (0) by default;
- ``cupy.cuda.Device(n)`` makes device ``n`` current (the emulator's
  ``cudaSetDevice``) while inside;
- allocations, fills and copies are queued on the current stream of the
  array's device, and ``__cuda_array_interface__`` exports that stream (1 for
  the null stream), as CuPy does, or None under ``CUPY_CUDA_ARRAY_INTERFACE_SYNC=0``;
- every array remembers the stream it was allocated on (``allocated_on``),
  the stream CuPy's memory pool ties it to.

``install(monkeypatch)`` puts it in ``sys.modules["cupy"]``. Not a conftest.py.
"""

from __future__ import annotations

import os
import sys
import threading
import types
import warnings
from typing import Any

import numpy as np

from aotc.runtime.emulator import arrays, devices

__all__ = ["install"]

_local = threading.local()


def _current_streams() -> dict[int, list[Any]]:
    if not hasattr(_local, "streams"):
        _local.streams = {}
    return _local.streams


class Device:
    def __init__(self, device: int | None = None) -> None:
        self.id = devices.current() if device is None else int(device)
        self._previous: list[int] = []

    def __enter__(self) -> Device:
        self._previous.append(devices.current())
        devices.set_device(self.id)
        return self

    def __exit__(self, *exc: object) -> None:
        devices.set_device(self._previous.pop())


class _StreamContext:
    """What CuPy's streams share: ``ptr``, ``device_id``, ``with stream:``."""

    ptr: int
    device_id: int

    def __enter__(self) -> Any:
        _current_streams().setdefault(self.device_id, []).append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _current_streams()[self.device_id].pop()

    def synchronize(self) -> None:
        arrays.backend_for(self.device_id).stream_synchronize(self.ptr)


class Stream(_StreamContext):
    def __init__(self, null: bool = False, non_blocking: bool = False) -> None:
        self.device_id = devices.current()
        self._stream = None if null else arrays.Stream(self.device_id, non_blocking)
        self.ptr = 0 if null else self._stream.handle

    @classmethod
    def from_external(cls, obj: Any) -> _StreamContext:
        """CuPy 14's wrapper of a foreign stream: any object under the CUDA
        stream protocol, taken to be on the current device."""
        version, handle = obj.__cuda_stream__()
        if version != 0:
            msg = f"__cuda_stream__: unsupported protocol version {version}"
            raise ValueError(msg)
        return _ExternalStream(handle, devices.current())


class _ExternalStream(_StreamContext):
    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr = int(ptr)
        self.device_id = device_id


class ExternalStream(_ExternalStream):
    def __init__(self, ptr: int, device_id: int = -1) -> None:
        # As CuPy 14 does; the suite's filterwarnings turns it into a failure.
        warnings.warn(
            "ExternalStream is deprecated. Use Stream.from_external() instead", DeprecationWarning, stacklevel=2
        )
        super().__init__(ptr, devices.current() if device_id < 0 else device_id)


def get_current_stream(device_id: int = -1) -> _StreamContext:
    """Device ``device_id``'s current stream; by default the current device's:
    CuPy's rule, the one aotc must not trust for another device."""
    device = devices.current() if device_id < 0 else device_id
    pushed = _current_streams().get(device)
    return pushed[-1] if pushed else Stream(null=True)


def _stream_of(device: int) -> int:
    return get_current_stream(device).ptr


class ndarray(arrays.DeviceArray):  # noqa: N801 - CuPy's name
    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        device = devices.current()
        self.allocated_on = _stream_of(device)
        super().__init__(shape, dtype, device, self.allocated_on)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        interface = dict(super().__cuda_array_interface__)
        exported = os.environ.get("CUPY_CUDA_ARRAY_INTERFACE_SYNC", "1") != "0"
        interface["stream"] = (_stream_of(self.device.id) or 1) if exported else None
        return interface

    def __setitem__(self, key: Any, value: Any) -> None:
        self.set(key, value, _stream_of(self.device.id))

    def get(self, stream: Any = None) -> Any:
        return super().get(_stream_of(self.device.id) if stream is None else getattr(stream, "ptr", stream))


def empty(shape: Any, dtype: Any = float) -> ndarray:
    return ndarray(tuple(shape) if not isinstance(shape, int) else (shape,), dtype)


def zeros(shape: Any, dtype: Any = float) -> ndarray:
    array = empty(shape, dtype)
    array.set(..., 0, array.allocated_on)
    return array


def asarray(host: Any) -> ndarray:
    host = np.ascontiguousarray(host)
    array = empty(host.shape, host.dtype)
    arrays.backend_for(array.device.id).copy_to_device_async(array.pointer, host, array.allocated_on)
    return array


def ascontiguousarray(array: ndarray) -> ndarray:
    return array  # every array here is C-contiguous


def install(monkeypatch: Any) -> types.ModuleType:
    """This module as ``cupy`` (with ``cupy.cuda``) for one test."""
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    cuda.Device, cuda.Stream, cuda.ExternalStream, cuda.get_current_stream = Device, Stream, ExternalStream, get_current_stream
    cupy.cuda = cuda
    cupy.ndarray, cupy.empty, cupy.zeros, cupy.asarray, cupy.ascontiguousarray = ndarray, empty, zeros, asarray, ascontiguousarray
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    return cupy
