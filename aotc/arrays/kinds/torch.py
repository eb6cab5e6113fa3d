"""PyTorch tensors: read in place, allocated by PyTorch on the call's stream.

This module holds the one reader of PyTorch's current CUDA stream
(``current_stream``), which every tensor path uses: the array layer, the
call plans and the ops. ``torch._C._cuda_getCurrentRawStream`` is what
torch.compile's generated code calls for the same: about 0.1 us, against
several for ``torch.cuda.current_stream(device).cuda_stream``.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from aotc.arrays.kinds._base import ArrayKind
from aotc.arrays.operands import Operand
from aotc.dtypes import DTYPES, by_numpy
from aotc.errors import ArgumentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["TORCH", "TorchKind", "current_stream", "device_name", "dtype_name", "torch_dtype"]

_names: dict[Any, str] = {}  # torch dtypes and devices -> names; formatting them costs microseconds
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # noqa: SLF001 - see the module docstring


def dtype_name(dtype: Any) -> str:
    """aotc's name of a torch dtype ("f32"), or torch's own where aotc has none."""
    name = _names.get(dtype)
    if name is None:
        text = str(dtype).removeprefix("torch.")
        found = by_numpy(text)
        name = _names[dtype] = found.name if found is not None else text
    return name


def device_name(device: Any) -> str:
    """"cpu" or "cuda:N" for a torch device."""
    name = _names.get(device)
    if name is None:
        name = _names[device] = "cpu" if device.type == "cpu" else f"{device.type}:{device.index or 0}"
    return name


def torch_dtype(dtype: str) -> Any:
    """The torch dtype of aotc's dtype name."""
    return getattr(torch, DTYPES[dtype].numpy)


def current_stream(device: Any) -> Callable[[], int] | None:
    """A reader of ``device``'s current CUDA stream handle, or None for a CPU
    device (whose kernels, on the emulator, run on stream 0)."""
    if device.type != "cuda":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    if _raw_stream is not None:
        return lambda: _raw_stream(index)
    return lambda: torch.cuda.current_stream(index).cuda_stream


class TorchKind(ArrayKind):
    name = "torch"
    route = "torch"

    def read(self, obj: Any, name: str) -> Operand:
        if obj.layout is not torch.strided:
            msg = f"{name}: a {str(obj.layout).removeprefix('torch.')} tensor; the kernels read dense (strided) tensors, pass {name}.to_dense()"
            raise ArgumentError(msg)
        try:
            pointer = obj.data_ptr()
        except RuntimeError as exc:  # no storage: a functorch wrapper that left its transform, a subclass without one
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            msg = f"{name}: a tensor without storage, whose data the kernels cannot read ({reason})"
            raise ArgumentError(msg) from None
        return Operand(obj, self, dtype_name(obj.dtype), tuple(obj.shape), obj.stride(), pointer, device_name(obj.device))

    def contiguous(self, op: Operand, name: str) -> Operand:
        return self.read(op.obj.contiguous(), name)

    def allocate(self, like: Operand, shape: tuple[int, ...], dtype: str, stream: Any, name: str, fill: Any = None) -> Any:
        device = like.obj.device
        if device.type == "meta":
            msg = f"{name}: a result on the meta device has no memory to compute into; pass tensors on a real device"
            raise ArgumentError(msg)
        kind = torch_dtype(dtype)
        with self._on_stream(like, stream):
            if fill is None:
                return torch.empty(shape, dtype=kind, device=device)
            return torch.zeros(shape, dtype=kind, device=device) if fill == 0 else torch.full(shape, fill, dtype=kind, device=device)

    def _on_stream(self, like: Operand, stream: Any) -> Any:
        """A context in which PyTorch allocates on ``stream`` (None: its current
        one) on ``like``'s device: its caching allocator then ties the memory to
        the stream the kernel runs on, and does not hand it out while it runs."""
        if stream is None or like.on_host or self.current_stream(like) == stream:
            return nullcontext()
        return torch.cuda.stream(torch.cuda.ExternalStream(stream, device=like.obj.device))

    def current_stream(self, op: Operand) -> int:
        if op.on_host:
            return 0
        reader = current_stream(op.obj.device)
        return reader() if reader is not None else 0

    def hold(self, op: Operand, stream: int) -> None:
        if op.on_host:
            return
        if self.current_stream(op) != stream:
            op.obj.record_stream(torch.cuda.ExternalStream(stream, device=op.obj.device))

    def sum_to(self, op: Operand, shape: tuple[int, ...]) -> Any:
        return op.obj.sum_to_size(shape)

    def fill(self, op: Operand, value: Any, stream: int, backend: Any) -> None:
        if op.on_host:
            op.obj.fill_(value)  # PyTorch's own: NumPy cannot view a bfloat16 tensor
            return
        super().fill(op, value, stream, backend)

    def host_array(self, op: Operand) -> Any:
        obj = op.obj
        if obj.dtype is torch.bfloat16:
            obj = obj.view(torch.uint16)  # its bytes, for staging: NumPy has no bfloat16 of its own
        return obj.numpy()


TORCH = TorchKind()
