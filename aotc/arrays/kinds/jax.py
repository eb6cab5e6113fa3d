"""JAX arrays. A call given one runs through XLA (``route``): a
``buffer_callback`` whose callback hands the kernel XLA's own buffers, or
jaxlib's built-in launcher (``aotc.kernels._jax``). Read directly, outside that
route, a JAX array is a DLPack array: read in place, never written (JAX's
arrays are immutable), and no result is made like it.
"""

from __future__ import annotations

from aotc.arrays.kinds.dlpack import DlpackKind

__all__ = ["JAX", "JaxKind"]


class JaxKind(DlpackKind):
    name = "jax"
    route = "jax"


JAX = JaxKind()
