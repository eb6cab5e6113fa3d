"""The emulator's device memory as arrays, and its streams as objects, so code
written for CuPy, Numba or PyTorch's CUDA tensors runs on the emulator.

- ``Stream(device, non_blocking=False)``: an emulated stream
  (``aotc.runtime.emulator.streams``); its handle is ``.handle``, and also
  ``.ptr`` and ``.cuda_stream``, the names CuPy and PyTorch give it.
- ``DeviceArray``: memory of one emulated device, read by consumers through
  ``__cuda_array_interface__`` version 3 (with the ``stream`` its pending
  writes are on) or ``__dlpack__(stream=...)`` / ``__dlpack_device__()``
  (kDLCUDA). ``empty``, ``zeros`` and ``to_device`` make one; ``get()`` copies
  it back after its stream's work. Every fill and copy is queued on a stream,
  as on a GPU, so reading one before waiting shows what a GPU would show.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from aotc.errors import AotcError, ArgumentError
from aotc.runtime.backends.host_memory import HostMemory
from aotc.runtime.emulator import devices, streams

__all__ = ["DeviceArray", "Stream", "backend_for", "empty", "to_device", "zeros"]

_backends: dict[int, Any] = {}
_LEGACY = 1  # how CUDA array interface v3 and DLPack name the legacy default stream
_KDL_CUDA = 2


def backend_for(device: int) -> Any:
    """The emulator backend that owns device ``device``'s memory here."""
    backend = _backends.get(device)
    if backend is None:
        from aotc.runtime.emulator.backend import EmulatorBackend

        backend = _backends[device] = EmulatorBackend(ordinal=device)
        backend.device()  # NoDeviceError past the last emulated device
    return backend


class Stream:
    """An emulated stream of ``device``: blocking (ordered with the legacy stream) or not."""

    def __init__(self, device: int = 0, non_blocking: bool = False) -> None:
        self.device = device
        self.non_blocking = non_blocking
        self.handle = backend_for(device).stream_create(non_blocking)
        weakref.finalize(self, backend_for(device).stream_destroy, self.handle)

    @property
    def ptr(self) -> int:
        return self.handle

    @property
    def cuda_stream(self) -> int:
        return self.handle

    def synchronize(self) -> None:
        backend_for(self.device).stream_synchronize(self.handle)

    def wait_for(self, other: Stream | int) -> None:
        """Order this stream's later work after ``other``'s work so far (an event)."""
        backend_for(self.device).order_after(self.handle, getattr(other, "handle", other))

    def __repr__(self) -> str:
        kind = "non-blocking" if self.non_blocking else "blocking"
        return f"<emulated {kind} stream {self.handle:#x} of device {self.device}>"


class _Device:
    __slots__ = ("id",)

    def __init__(self, ordinal: int) -> None:
        self.id = ordinal

    def __repr__(self) -> str:
        return f"<emulated CUDA device {self.id}>"


class DeviceArray:
    """A C-contiguous array in an emulated device's memory; see the module docstring.
    ``stream`` (a handle, 0 for the legacy stream) is where its latest writes were
    queued (by ``set``, or the stream it was made on): what a consumer waits for."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, device: int = 0, stream: Stream | int = 0) -> None:
        import numpy as np

        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.device = _Device(device)
        self.stream = getattr(stream, "handle", stream)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        backend = backend_for(device)
        self.pointer = backend.alloc(max(self.nbytes, 1))
        weakref.finalize(self, _release, backend, self.pointer)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape, "typestr": self.dtype.str, "data": (self.pointer, False), "strides": None,
            "version": 3, "stream": self.stream or _LEGACY,
        }  # fmt: skip

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CUDA, self.device.id)

    def __dlpack__(self, stream: int | None = None) -> Any:
        """A DLPack capsule; the consumer's ``stream`` (None or 1: the legacy stream,
        -1: no ordering) waits for this array's pending writes first."""
        if stream is not None and stream != -1 and (type(stream) is not int or stream == 0):
            msg = f"__dlpack__: stream must be None, -1 or a stream handle other than 0, got {stream!r}"
            raise ArgumentError(msg)
        if stream != -1:
            consumer = 0 if stream in (None, _LEGACY) else stream
            backend_for(self.device.id).order_after(consumer, self.stream)
        from aotc.runtime.emulator._dlpack_export import capsule

        return capsule(self, self.pointer, self.shape, self.dtype, _KDL_CUDA, self.device.id)

    def _queue(self, stream: Stream | int | None, what: str, work: Any) -> None:
        """Queue ``work(view)`` (a NumPy view of the memory) on ``stream`` (None: the array's)."""
        handle = self.stream if stream is None else getattr(stream, "handle", stream)
        view = self.host_view()
        streams.enqueue(streams.stream(handle, self.device.id), lambda: work(view), what)
        self.stream = handle  # its latest writes are queued there now: what consumers must wait for

    def host_view(self) -> Any:
        """The memory as a NumPy array, with no wait: what a kernel sees, not what is done.
        The view holds the memory, so queued work on it stays safe if the array dies first."""
        import numpy as np

        buffer = backend_for(self.device.id).buffer(self.pointer)
        return np.frombuffer(buffer, self.dtype, math.prod(self.shape)).reshape(self.shape)

    def set(self, key: Any, value: Any, stream: Stream | int | None = None) -> None:
        """``array[key] = value``, queued on ``stream`` (None: the array's) as a fill kernel."""

        def work(view: Any) -> None:
            view[key] = value

        self._queue(stream, "fill", work)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.set(key, value)

    def get(self, stream: Stream | int | None = None) -> Any:
        """A NumPy copy, read on ``stream`` (None: the array's) once its earlier work has run."""
        import numpy as np

        handle = self.stream if stream is None else getattr(stream, "handle", stream)
        host = np.empty(self.shape, self.dtype)
        backend = backend_for(self.device.id)
        if self.nbytes:
            backend.copy_to_host_async(memoryview(host.reshape(-1).view("uint8")), self.pointer, handle)
        backend.stream_synchronize(handle)
        return host

    def __repr__(self) -> str:
        return f"<emulated device array {self.shape} {self.dtype} on device {self.device.id}, stream {self.stream:#x}>"


def _release(backend: Any, pointer: int) -> None:
    """Free an array's memory when it dies: a finalizer must not raise, so a
    setting that stops its queued work from running (a bad schedule) frees it unrun."""
    try:
        backend.free(pointer)
    except AotcError:
        HostMemory.free(backend, pointer)
        devices.untag(pointer)


def empty(shape: tuple[int, ...], dtype: Any, device: int = 0, stream: Stream | int = 0) -> DeviceArray:
    return DeviceArray(shape, dtype, device, stream)


def zeros(shape: tuple[int, ...], dtype: Any, device: int = 0, stream: Stream | int = 0) -> DeviceArray:
    """A new array zeroed by a memset queued on ``stream``."""
    array = DeviceArray(shape, dtype, device, stream)
    backend_for(device).memset_async(array.pointer, 0, array.nbytes, array.stream)
    return array


def to_device(host: Any, device: int = 0, stream: Stream | int = 0) -> DeviceArray:
    """A copy of the NumPy array ``host``, queued on ``stream`` (``cuMemcpyHtoDAsync``)."""
    import numpy as np

    host = np.ascontiguousarray(host)
    array = DeviceArray(host.shape, host.dtype, device, stream)
    backend_for(device).copy_to_device_async(array.pointer, host, array.stream)
    return array
