"""JAX arrays. A call given one runs through XLA (``route``): a
``buffer_callback`` whose callback hands the kernel XLA's own buffers, or
jaxlib's built-in launcher (``aotc.kernels._jax``). Read directly, outside that
route, a JAX array is a DLPack array: read in place, never written (JAX's
arrays are immutable), and no result is made like it. Its gradient operations
are JAX's own (``jax.numpy``): a gradient on JAX's route is a traced value.
"""

from __future__ import annotations

from aotc.arrays.kinds.dlpack import DlpackKind
from aotc.arrays.kinds.numpy import dtype_name  # JAX's dtypes are NumPy's (JAX imports NumPy)
from aotc.dtypes import DTYPES
from aotc.errors import ArgumentTypeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["JAX", "JaxKind"]


class JaxKind(DlpackKind):
    name = "jax"
    route = "jax"

    def shape_of(self, obj: Any) -> tuple[int, ...]:
        return tuple(obj.shape)

    def dtype_of(self, obj: Any) -> str:
        name = dtype_name(obj.dtype)
        if name not in DTYPES:
            msg = f"gradient: dtype {obj.dtype} has no kernel ({', '.join(d.numpy for d in DTYPES.values())})"
            raise ArgumentTypeError(msg)
        return name

    def zeros(self, like: Any, shape: tuple[int, ...], dtype: str, stream: Any) -> Any:
        import jax

        return jax.numpy.zeros(shape, DTYPES[dtype].numpy)

    def summed(self, obj: Any, shape: tuple[int, ...]) -> Any:
        lead = obj.ndim - len(shape)
        summed = obj.sum(axis=tuple(range(lead))) if lead else obj
        keep = tuple(i for i, (have, want) in enumerate(zip(summed.shape, shape)) if have != want)
        return summed.sum(axis=keep, keepdims=True) if keep else summed


JAX = JaxKind()
