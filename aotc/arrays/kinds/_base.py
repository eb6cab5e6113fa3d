"""``ArrayKind``: what a call asks of an array, answered once per kind of array."""

from __future__ import annotations

from aotc.arrays.kinds._plan_texts import PlanTexts
from aotc.dtypes import DTYPES, bf16_bits, numpy_dtype
from aotc.errors import ArgumentError, ArgumentTypeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.arrays.operands import Operand

__all__ = ["ArrayKind"]


class ArrayKind(PlanTexts):
    """The adapter of one kind of array. Subclasses answer what their library
    can; the defaults refuse in one line naming the argument (an array aotc
    cannot copy or make another of) or say "nothing to do". What a call plan
    does with such an array is written by its texts (``PlanTexts``)."""

    name = ""
    # How a call whose first array is of this kind runs: "direct" (read, launch),
    # "torch" (through the library's custom ops) or "jax" (through XLA).
    route = "direct"
    # Whether every object of the type is of this kind (a CUDA array's kind
    # may depend on its library): kind_of keeps it per type.
    per_type = True

    def __repr__(self) -> str:
        return f"<aotc array kind {self.name}>"

    def read(self, obj: Any, name: str) -> Operand:
        """``obj`` as an ``Operand``; one line naming ``name`` where it cannot be read."""
        raise NotImplementedError

    def contiguous(self, op: Operand, name: str) -> Operand:
        """A row-major contiguous copy, made by the array's own library."""
        msg = f"{name}: a strided {type(op.obj).__name__} cannot be copied here; pass a contiguous array"
        raise ArgumentError(msg)

    def allocate(self, like: Operand, shape: tuple[int, ...], dtype: str, stream: Any, name: str, fill: Any = None) -> Any:
        """A new array of ``like``'s library and device, of ``shape`` and ``dtype``,
        allocated (and, where ``fill`` is not None, filled) on the CUDA stream
        ``stream`` (None: the library's current one)."""
        msg = f"{name}: cannot allocate a result like {type(like.obj).__name__}; pass {name}="
        raise ArgumentTypeError(msg)

    def fill(self, op: Operand, value: Any, stream: int, backend: Any) -> None:
        """Set every element of the row-major ``op`` to ``value``: host memory at
        once; device memory on ``stream`` through the backend, the same way for
        every library (a memset for zero, else a host pattern copied over)."""
        if op.on_host:
            self.host_array(op)[...] = value
            return
        count = 1
        for extent in op.shape:
            count *= extent
        dtype = DTYPES[op.dtype]
        if value == 0:
            backend.memset_async(op.pointer, 0, count * dtype.itemsize, stream)
            return
        import numpy as np

        if dtype.name == "bf16":  # its bits, as a scalar's: NumPy has no bfloat16 of its own
            pattern = np.full(op.shape, bf16_bits(value), np.uint16)
        else:
            pattern = np.full(op.shape, value, numpy_dtype(dtype, op.dtype))
        backend.copy_to_device_async(op.pointer, pattern, stream)

    # Whether an array of this kind may be a result written in place at all.
    written_in_place = True

    def unwritable(self, obj: Any, name: str) -> str | None:
        """Why a kernel cannot write ``obj`` where it lies, in one line naming
        ``name`` (a view whose memory is not what it shows); None: it can."""
        return None

    def writable(self, op: Operand) -> bool:
        """Whether a kernel may write ``op``'s memory now (not a read-only view)."""
        return True

    def row_major(self, op: Operand) -> bool:
        """Whether ``op`` lies row-major, as a kernel writes a result (``operands.is_row_major``)."""
        from aotc.arrays.operands import is_row_major

        return is_row_major(op)

    def shares_memory(self, x: Operand, y: Operand) -> bool:
        """Whether two arrays of this kind whose byte ranges meet share an element;
        where the library cannot tell, meeting ranges count as sharing."""
        return True

    def current_stream(self, op: Operand) -> int:
        """The CUDA stream a call on ``op`` runs on when it names none: its library's current one there."""
        return 0

    def hold(self, op: Operand, stream: int) -> None:
        """Keep ``op``'s memory from being reused until ``stream`` is done with it,
        where its library would otherwise free it early (PyTorch's caching allocator)."""

    def sum_to(self, op: Operand, shape: tuple[int, ...]) -> Any:
        """``op``'s array summed over the leading axes and the axes of one that
        ``shape`` has less or 1 (a gradient of an operand that was broadcast)."""
        obj = op.obj
        lead = len(op.shape) - len(shape)
        if lead:
            obj = obj.sum(axis=tuple(range(lead)))
        keep = tuple(i for i, (have, want) in enumerate(zip(op.shape[lead:], shape)) if have != want)
        return obj.sum(axis=keep, keepdims=True) if keep else obj

    def host_array(self, op: Operand) -> Any:
        """A NumPy view of the host array ``op`` (staging, host fills)."""
        return op.obj

    # --- gradient operations (aotc.kernels._gradients), on the arrays themselves:
    # a kind whose reading touches memory (a tensor's data pointer) answers
    # without it, so a call torch.compile traces can make them.

    def shape_of(self, obj: Any) -> tuple[int, ...]:
        return self.read(obj, "gradient").shape

    def dtype_of(self, obj: Any) -> str:
        """aotc's dtype name of ``obj``'s elements."""
        return self.read(obj, "gradient").dtype

    def zeros(self, like: Any, shape: tuple[int, ...], dtype: str, stream: Any) -> Any:
        """A zeroed array of ``like``'s library and device, on ``stream`` (None: the library's current one)."""
        op = self.read(like, "gradient")
        return op.kind.allocate(op, shape, dtype, stream, "gradient", 0)

    def summed(self, obj: Any, shape: tuple[int, ...]) -> Any:
        """``obj`` summed to ``shape`` (``sum_to``): a gradient of an operand that was broadcast."""
        op = self.read(obj, "gradient")
        return op.kind.sum_to(op, shape)

    def wrote(self, op: Operand) -> None:
        """What its library must hear once a kernel wrote ``op`` in place (PyTorch: a version bump)."""

    def plan_wrote(self, op: Operand, var: str, prefix: str, names: dict[str, Any]) -> str | None:
        """A call plan's statement telling ``var``'s library a kernel wrote it (``PlanTexts``); None: nothing to tell."""
        return None if type(self).wrote is ArrayKind.wrote else f"{var}.kind.wrote({var})"
