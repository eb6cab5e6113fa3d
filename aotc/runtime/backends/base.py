"""The backend protocol, and ``BackendBase``, what every backend shares.

A backend is one object per process. Its methods take and return plain values
(ints for device pointers and streams, bytes for images and parameter blocks)
plus opaque module and function handles that only the backend itself reads.

Two kinds of backend exist, told apart by ``image_format``:

- ``"fatbin"``: ``load_module`` gets a fatbin or a cubin (cuda-python, pycuda,
  noop). The loader runs ``select_image`` against ``device()`` to choose.
- ``"source"``: ``load_module`` gets the kernel's shipped ``.cu`` bytes and
  compiles them itself (the CPU emulator). The loader skips ``select_image``.

Streams and events are int handles (the driver's ``CUstream``/``CUevent``; 0
is the legacy default stream of the backend's device). Launches, memsets and
``*_async`` copies are queued on a stream and return at once; ``copy_to_device``
and ``copy_to_host`` are ``cuMemcpyHtoD``/``DtoH``, on the legacy stream. A
call that must order its work after another stream's records an event there
and waits for it (``order_after``).

``launch`` receives the launch shape, ``(grid, block, shared_bytes)``, and one
packed parameter block: the kernel's parameters laid out with native
alignment, exactly as a C compiler lays them out for a kernel
(``aotc.runtime.backends.params``). GPU backends hand it to ``cuLaunchKernel``
through ``CU_LAUNCH_PARAM_BUFFER_POINTER``; a source backend slices it by the
same layout's offsets.

A new backend subclasses ``BackendBase`` (and ``HostMemory`` where its
pointers are host memory) and writes only what differs: ``_open_device``,
``load_module``, ``get_function``, ``launch``, and for a GPU API the context
hooks ``_enter``/``_leave``, ``driver_version`` and the memory helpers.
"""

from __future__ import annotations

from _thread import allocate_lock  # threading.Lock itself, without importing threading

from aotc._record import Record
from aotc.errors import BackendError, CaptureError, NoDeviceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "CAPTURE_ERRORS", "BackendBase", "DeviceInfo", "Dim3", "LaunchShape", "byte_view", "capture_error", "launch_error",
]  # fmt: skip

# The driver's answers that mean "not while a CUDA graph is being captured".
CAPTURE_ERRORS = frozenset({
    "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
    "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "CUDA_ERROR_STREAM_CAPTURE_MERGE",
})  # fmt: skip

Dim3 = tuple[int, int, int]
# (grid, block, dynamic shared bytes): what one launch needs besides the kernel and its arguments.
LaunchShape = tuple[Dim3, Dim3, int]


class DeviceInfo(Record):
    """The GPU a backend launches on, as ``aotc doctor`` prints it; ``driver_version``
    is the CUDA version the driver supports."""

    _fields = ("name", "capability", "driver_version", "sm_count", "clock_khz", "ordinal")
    __slots__ = _fields
    _defaults: ClassVar[dict[str, Any]] = {"ordinal": 0}
    name: str
    capability: tuple[int, int]
    driver_version: tuple[int, int]
    sm_count: int
    clock_khz: int
    ordinal: int

    @property
    def arch(self) -> str:
        return f"sm_{self.capability[0]}{self.capability[1]}"

    def describe(self) -> str:
        major, minor = self.capability
        driver = ".".join(map(str, self.driver_version))
        return (
            f"device {self.ordinal}: {self.name}, compute capability {major}.{minor} ({self.arch}), "
            f"{self.sm_count} SMs at {self.clock_khz / 1000:.0f} MHz; driver supports CUDA {driver}"
        )


class BackendBase:
    """The part of a backend that is the same for all: the device asked once (a
    failure is kept, so asking again gives the same answer), calls run inside
    the backend's context, and launch failures reported in one form."""

    name: ClassVar[str]
    image_format: ClassVar[str]
    memory: ClassVar[str]

    def __init__(self, ordinal: int = 0) -> None:
        self.ordinal = ordinal  # the device this instance launches on: one instance per device
        self._device_lock = allocate_lock()
        self._device: DeviceInfo | None = None
        self._device_problem: NoDeviceError | None = None

    def device(self) -> DeviceInfo:
        with self._device_lock:
            if self._device is None and self._device_problem is None:
                try:
                    self._device = self._open_device()
                except NoDeviceError as exc:
                    self._device_problem = exc
            if self._device_problem is not None:
                raise NoDeviceError(str(self._device_problem))
            return self._device  # type: ignore[return-value]

    def _open_device(self) -> DeviceInfo:
        """Find the device; ``NoDeviceError`` where there is none. Called once."""
        raise NotImplementedError

    # Which device: a backend of one kind answers for the whole process.
    def device_count(self) -> int:
        """How many devices this kind of backend presents."""
        return 1

    def current_device(self) -> int:
        """The device the calling thread has made current (``cudaSetDevice``,
        ``torch.cuda.set_device``); 0 where none is."""
        return 0

    def pointer_device(self, pointer: int) -> int | None:
        """The device whose memory ``pointer`` is, or None where it is no device's
        (``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)``)."""
        return None

    def is_capturing(self, stream: Any) -> bool:
        """Whether ``stream`` is being captured into a CUDA graph (``cuStreamIsCapturing``)."""
        return False

    def driver_version(self) -> int | None:
        return None  # host backends: no NVIDIA driver behind them, so no library is too new

    # A GPU API's backend makes its context current around each call; these are no-ops otherwise.
    def _enter(self) -> bool:
        """Make the backend's context current; True if it was pushed and must be popped."""
        return False

    def _leave(self, pushed: bool) -> None:
        return None

    def order_after(self, stream: Any, producer: Any) -> None:
        """Order ``stream``'s later work after ``producer``'s work so far: an event
        recorded on ``producer`` that ``stream`` waits for (``cudaStreamWaitEvent``)."""
        if producer == stream:
            return
        event = self.event_create()  # type: ignore[attr-defined]
        try:
            self.event_record(event, producer)  # type: ignore[attr-defined]
            self.stream_wait_event(stream, event)  # type: ignore[attr-defined]
        finally:
            self.event_destroy(event)  # type: ignore[attr-defined] - released once it completes

    def _refused_launch(self, err: Any, function: Any, shape: LaunchShape, stream: Any) -> Exception:
        """The error for a ``cuLaunchKernel`` that returned ``err`` (a ``CUresult``):
        a sticky fault names the launch behind it (``faults.LaunchLog``, which
        both driver backends keep as ``_launches``); anything else names this
        launch's shape and the reason."""
        from aotc.runtime.backends.faults import is_sticky

        reason = self._error_name(err)  # type: ignore[attr-defined]
        if is_sticky(err.name):
            launches = self._launches  # type: ignore[attr-defined]
            return launches.fault(self.ordinal, "cuLaunchKernel", reason, this_launch=(function, shape, stream))
        return launch_error("cuLaunchKernel", shape, reason, getattr(err, "name", None))

    def _in_context(self, call: Callable[..., _T], *args: Any) -> _T:
        pushed = self._enter()
        try:
            return call(*args)
        finally:
            self._leave(pushed)


def launch_error(what: str, shape: LaunchShape, reason: str, cuda_error: str | None = None) -> BackendError:
    """The one-line error for a launch the backend refused: what, the shape, why."""
    grid, block, shared_bytes = shape
    msg = f"{what}(grid={grid}, block={block}, shared={shared_bytes}) failed: {reason}"
    return BackendError(msg, cuda_error=cuda_error)


def capture_error(what: str, error_name: str) -> CaptureError | None:
    """A one-line CaptureError for a driver error that a CUDA graph capture caused, else None."""
    if error_name.split(" ", 1)[0] not in CAPTURE_ERRORS:
        return None
    msg = f"{what} failed: {error_name}: not allowed while a CUDA graph is being captured; call preload() before capturing, and pass device arrays"
    return CaptureError(msg)


def byte_view(buffer: bytes | bytearray | memoryview) -> memoryview | None:
    """``buffer`` as flat bytes for a copy, or None when it is empty: then there is
    nothing to copy, and a zero-sized view could not be cast."""
    view = memoryview(buffer)
    return view.cast("B") if view.nbytes else None
