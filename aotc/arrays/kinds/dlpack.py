"""Arrays that speak only DLPack (``__dlpack__`` and ``__dlpack_device__``): TensorFlow and kin.

On the CPU, ``numpy.from_dlpack`` gives a NumPy view of the same memory,
which is the operand from then on (a NumPy operand: results are NumPy
arrays); a dtype NumPy cannot view (bf16) is read from the capsule in place,
as on a CUDA device, where the capsule's ``DLManagedTensor`` is read in place
(``aotc.arrays.dlpack``). Such an array is read where it lies and never
written: DLPack says nothing of writability (JAX's arrays are immutable), and
aotc cannot make another array of its kind, so a product of CUDA DLPack
arrays names its result (``out=``, a tensor or a CUDA array).
"""

from __future__ import annotations

from aotc.arrays.kinds._base import ArrayKind
from aotc.arrays.operands import Operand
from aotc.errors import ArgumentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DLPACK", "DlpackKind"]


class DlpackKind(ArrayKind):
    name = "dlpack"
    written_in_place = False

    def read(self, obj: Any, name: str) -> Operand:
        from aotc.arrays.dlpack import KDL_CPU, dlpack_device, read_capsule

        device_type, device_id = dlpack_device(obj, name)
        if device_type == KDL_CPU:
            import numpy as np

            from aotc.arrays.kinds.numpy import NUMPY

            try:
                view = np.from_dlpack(obj)
            except (BufferError, TypeError, ValueError, RuntimeError) as exc:
                if "dtype" not in str(exc):
                    msg = f"{name}: NumPy cannot read this DLPack array ({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__})"
                    raise ArgumentError(msg) from None
                # A dtype NumPy cannot view (bf16: kDLBfloat): read in place, as on a
                # device; a dtype aotc lacks too is refused there, in one line.
                dtype, shape, strides, pointer, _ = read_capsule(obj.__dlpack__(), name)
                return Operand(obj, self, dtype, shape, strides, pointer, "cpu")
            return NUMPY.read(view, name)
        # No stream: the producer orders its work before the legacy default stream
        # (DLPack's rule); a call on another stream asks again (streams.wait_for_producers).
        dtype, shape, strides, pointer, _ = read_capsule(obj.__dlpack__(), name)
        return Operand(obj, self, dtype, shape, strides, pointer, f"cuda:{device_id}", "dlpack")

    def writable(self, op: Operand) -> bool:
        return False


DLPACK = DlpackKind()
