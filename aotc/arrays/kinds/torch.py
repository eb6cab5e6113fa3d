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
from aotc.dtypes import DTYPES, zero_bits
from aotc.errors import ArgumentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["TORCH", "TorchKind", "current_stream", "device_name", "dtype_name", "torch_dtype"]

_names: dict[Any, str] = {}  # torch devices -> names; formatting them costs microseconds
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # noqa: SLF001 - see the module docstring


# aotc's name of each torch dtype aotc has, made once: a table no call changes,
# so a call torch.compile traces reads it as a constant.
_DTYPE_NAMES = {getattr(torch, d.numpy): d.name for d in DTYPES.values() if isinstance(getattr(torch, d.numpy, None), torch.dtype)}


def dtype_name(dtype: Any) -> str:
    """aotc's name of a torch dtype ("f32"), or torch's own where aotc has none."""
    name = _DTYPE_NAMES.get(dtype)
    return name if name is not None else str(dtype).removeprefix("torch.")


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
        if obj.is_nested:  # strided, but with no one shape: PyTorch's own error would say "Internal error"
            msg = f"{name}: a nested tensor; the kernels read tensors of one shape, pass {name}.to_padded_tensor(0) or its tensors one by one"
            raise ArgumentError(msg)
        if obj.is_neg() or obj.is_conj() or obj._is_zerotensor():  # noqa: SLF001 - PyTorch names it so
            obj = _resolved(obj)  # memory that is not what the tensor shows: read a copy that is
        try:
            pointer = obj.data_ptr()
        except RuntimeError as exc:  # no storage: a functorch wrapper that left its transform, a subclass without one
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            msg = f"{name}: a tensor without storage, whose data the kernels cannot read ({reason})"
            raise ArgumentError(msg) from None
        return Operand(obj, self, dtype_name(obj.dtype), tuple(obj.shape), obj.stride(), pointer, device_name(obj.device))

    def contiguous(self, op: Operand, name: str) -> Operand:
        return self.read(op.obj.contiguous(), name)

    def unwritable(self, obj: Any, name: str) -> str | None:
        if obj.is_neg() or obj.is_conj():
            what, shown, fix = ("a negative view (is_neg())", "negated", "resolve_neg") if obj.is_neg() else ("a conjugate view (is_conj())", "conjugated", "resolve_conj")
            return f"{name}: {what}, whose memory holds what it shows {shown}; pass {name}.{fix}() or a plain tensor"
        if obj._is_zerotensor():  # noqa: SLF001
            return f"{name}: a zero tensor without memory of its own; pass a tensor to write into"
        if not _inference_writable(obj):
            return f"{name}: {_INFERENCE_RULE}"
        return None

    def allocate(self, like: Operand, shape: tuple[int, ...], dtype: str, stream: Any, name: str, fill: Any = None) -> Any:
        device = like.obj.device
        if device.type == "meta":
            msg = f"{name}: a result on the meta device has no memory to compute into; pass tensors on a real device"
            raise ArgumentError(msg)
        return _allocate(device, shape, torch_dtype(dtype), stream, fill)

    def current_stream(self, op: Operand) -> int:
        if op.on_host:
            return 0
        reader = current_stream(op.obj.device)
        return reader() if reader is not None else 0

    def hold(self, op: Operand, stream: int) -> None:
        if not op.on_host:
            _hold(op.obj, stream)

    def sum_to(self, op: Operand, shape: tuple[int, ...]) -> Any:
        return op.obj.sum_to_size(shape)

    def shape_of(self, obj: Any) -> tuple[int, ...]:
        return tuple(obj.shape)

    def dtype_of(self, obj: Any) -> str:
        return dtype_name(obj.dtype)

    def zeros(self, like: Any, shape: tuple[int, ...], dtype: str, stream: Any) -> Any:
        return _allocate(like.device, shape, torch_dtype(dtype), stream, 0)

    def summed(self, obj: Any, shape: tuple[int, ...]) -> Any:
        return obj.sum_to_size(shape)

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

    def wrote(self, op: Operand) -> None:
        _bump(op.obj)  # what PyTorch's own in-place ops do: autograd sees the tensor changed

    # Call plans: on the tensors themselves (see PlanTexts). The key holds
    # is_neg(): a negative view's memory is not what it shows (read resolves it).
    plan_operands = False

    def plan_key(self, var: str) -> tuple[str, ...]:
        return (f"{var}.shape", f"{var}.stride()", f"{var}.dtype", f"{var}.device", f"{var}.is_neg()")

    def plan_pointer(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        return f"{var}.data_ptr()"

    def plan_result(self, var: str) -> str:
        return var

    def plan_writable(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str | None:
        # ``_inference_writable``, inline: the key does not tell an inference tensor
        # from a normal one, nor a call inside inference mode (the .out kernel's) from one outside.
        names["_aotc_torch_inference"] = torch.is_inference_mode_enabled
        return f"(not {var}.is_inference() or _aotc_torch_inference())"

    def plan_copy(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        return f"{var}.contiguous()"

    def plan_allocate(self, op: Operand, like: str, stream: str, prefix: str, names: dict[str, Any], fill: Any, name: str) -> str:
        device, dtype, shape = op.obj.device, op.obj.dtype, op.shape
        if stream != "None" and not op.on_host:  # on the stream the call named (see _allocate)
            names[f"{prefix}allocate"] = lambda handle: _allocate(device, shape, dtype, handle, fill)
            return f"{prefix}allocate({stream})"
        names["_aotc_torch_empty"], names["_aotc_torch_zeros"], names["_aotc_torch_full"] = torch.empty, torch.zeros, torch.full
        names[f"{prefix}shape"], names[f"{prefix}dtype"], names[f"{prefix}device"] = shape, dtype, device
        if (fill is None or zero_bits(fill)) and shape:
            # The extents as ints, each a name: PyTorch parses them far faster
            # than a size tuple (callgrind, a 16x16 f32 tensor with dtype and
            # device: torch.empty 10,000 instructions against 13,500; a zeroed
            # one, torch.zeros 11,600 against torch.full's 14,300).
            names.update({f"{prefix}d{i}": extent for i, extent in enumerate(shape)})
            extents = "".join(f"{prefix}d{i}, " for i in range(len(shape)))
            allocate = "_aotc_torch_empty" if fill is None else "_aotc_torch_zeros"
            return f"{allocate}({extents}dtype={prefix}dtype, device={prefix}device)"
        if fill is None:  # a 0-d result: empty() takes no extents
            return f"_aotc_torch_empty({prefix}shape, dtype={prefix}dtype, device={prefix}device)"
        names[f"{prefix}fill"] = fill
        return f"_aotc_torch_full({prefix}shape, {prefix}fill, dtype={prefix}dtype, device={prefix}device)"

    def plan_fill(self, op: Operand, var: str, stream: str, prefix: str, names: dict[str, Any], value: Any, backend: Any) -> str:
        if op.on_host:
            names[f"{prefix}fill"] = value
            return f"{var}.fill_({prefix}fill)"
        names[f"{prefix}fill"] = lambda tensor, handle: self.fill(self.read(tensor, "fill"), value, handle, backend)
        return f"{prefix}fill({var}, {stream})"

    def plan_stream(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str:
        reader = current_stream(op.obj.device)
        if reader is None:
            return "0"
        names[f"{prefix}stream"] = reader
        return f"{prefix}stream()"

    def plan_hold(self, op: Operand, var: str, stream: str, prefix: str, names: dict[str, Any]) -> str | None:
        if op.on_host:
            return None
        names["_aotc_torch_hold"] = _hold
        return f"_aotc_torch_hold({var}, {stream})"

    def plan_wrote(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str | None:
        names["_aotc_torch_bump"] = _bump
        return f"_aotc_torch_bump({var})"


_bump = torch.autograd.graph.increment_version
# PyTorch's own out= and in-place ops refuse this ("Inplace update to inference
# tensor outside InferenceMode is not allowed"); a kernel writing the memory
# would go past the rule unseen.
_INFERENCE_RULE = "an inference tensor cannot be written outside torch.inference_mode() (PyTorch's rule)"


def _inference_writable(tensor: Any) -> bool:
    """Whether PyTorch lets ``tensor`` be written in place now: not an inference
    tensor, or inside ``torch.inference_mode()``."""
    return not tensor.is_inference() or torch.is_inference_mode_enabled()


def _resolved(tensor: Any) -> Any:
    """A negative or conjugate view, or a zero tensor, as memory that holds what it shows."""
    if tensor._is_zerotensor():  # noqa: SLF001
        return torch.zeros(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    return tensor.resolve_neg().resolve_conj()


def _allocate(device: Any, shape: tuple[int, ...], dtype: Any, stream: Any, fill: Any) -> Any:
    """A tensor on ``device``, filled where ``fill`` is not None, allocated on
    ``stream`` (None: PyTorch's current one): its caching allocator then ties the
    memory to the stream the kernel runs on, and does not hand it out while it runs."""
    with _on_stream(device, stream):
        if fill is None:
            return torch.empty(shape, dtype=dtype, device=device)
        return torch.zeros(shape, dtype=dtype, device=device) if zero_bits(fill) else torch.full(shape, fill, dtype=dtype, device=device)


def _on_stream(device: Any, stream: Any) -> Any:
    if stream is None or device.type != "cuda" or current_stream(device)() == stream:
        return nullcontext()
    return torch.cuda.stream(torch.cuda.ExternalStream(stream, device=device))


def _hold(tensor: Any, stream: int) -> None:
    """Keep a CUDA tensor's memory from PyTorch's caching allocator until ``stream`` is done with it."""
    if current_stream(tensor.device)() != stream:
        tensor.record_stream(torch.cuda.ExternalStream(stream, device=tensor.device))


TORCH = TorchKind()
