"""A framework's own idea of the current CUDA stream: read, and set for one allocation.

Results and fills that PyTorch or CuPy allocate for a call must be tied to the
call's stream, so their caching allocators don't hand the memory out while
the kernel runs (``on_stream``). CuPy is asked for a device's current stream
without making that device current (``cupy_current_stream``): its
``cudaSetDevice`` would replace a context other code made current. Both
were found on a GPU (RESULTS.md, "GPU suite").
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

    from aotc.arrays.operands import Operand

__all__ = ["cupy_current_stream", "on_stream"]


class _Unchanged:
    """The framework's current stream, left as it is: a no-op context."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_UNCHANGED = _Unchanged()


def on_stream(op: Operand, stream: Any) -> Any:
    """A context in which ``op``'s framework allocates and fills on the CUDA
    stream ``stream`` (an int handle; None: its current stream), on ``op``'s
    device: PyTorch's and CuPy's allocators then tie the memory to that stream."""
    if stream is None or op.on_host:
        return _UNCHANGED
    if op.kind == "torch":
        torch = sys.modules["torch"]
        device = op.obj.device
        if torch.cuda.current_stream(device).cuda_stream == stream:
            return _UNCHANGED
        return torch.cuda.stream(torch.cuda.ExternalStream(stream, device=device))
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(op.obj, cupy.ndarray):
        return _CupyStream(cupy, op.obj.device.id, stream)
    return _UNCHANGED


def cupy_current_stream(cupy: Any, device: int) -> int:
    """CuPy's current stream on ``device``, as an int handle, asked without making
    ``device`` current: ``cupy.cuda.Device`` calls ``cudaSetDevice``, which puts
    the device's primary context in place of whatever context the thread had
    current (``cuCtxCreate``'s, pycuda's), and does not put that one back."""
    try:
        return int(cupy.cuda.get_current_stream(device).ptr)  # CuPy keeps one per device
    except TypeError:  # a CuPy whose get_current_stream takes no device
        if cupy.cuda.runtime.getDevice() == device:
            return int(cupy.cuda.get_current_stream().ptr)
        with cupy.cuda.Device(device):
            return int(cupy.cuda.get_current_stream().ptr)


class _CupyStream:
    """CuPy's device ``device`` and, on it, the stream ``handle`` made current."""

    def __init__(self, cupy: Any, device: int, handle: int) -> None:
        self.cupy = cupy
        self.device = cupy.cuda.Device(device)
        self.handle = handle
        self.stream: Any = None

    def __enter__(self) -> None:
        self.device.__enter__()
        try:
            # CuPy 14 deprecates ExternalStream for Stream.from_external, which
            # takes any object under the CUDA stream protocol, on the current device.
            from_external = getattr(self.cupy.cuda.Stream, "from_external", None)
            if from_external is not None:
                self.stream = from_external(_StreamHandle(self.handle))
            else:
                self.stream = self.cupy.cuda.ExternalStream(self.handle, self.device.id)
            self.stream.__enter__()
        except BaseException:
            self.device.__exit__(*sys.exc_info())
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.stream.__exit__(*exc)
        finally:
            self.device.__exit__(*exc)


class _StreamHandle:
    """A raw stream handle under the CUDA stream protocol (``__cuda_stream__``)."""

    __slots__ = ("handle",)

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)
