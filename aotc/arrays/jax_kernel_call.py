"""The call jaxlib's built-in GPU kernel launcher takes: a zlib-compressed
``jax_triton.TritonAnyKernelCall`` protobuf, the ``opaque`` attribute of the
``triton_kernel_call_ffi`` custom call (``aotc.runtime.jax_route``).

Encoded here on protobuf's wire format rather than through jaxlib's Python
classes (``jax._src.lib.triton``), whose constructors have changed between
releases, or the protobuf package, which neither jax nor aotc depends on.
Field numbers are what protobuf keeps stable; the ones below are those of
the schema jaxlib 0.11.1's CUDA plugin embeds (``jaxlib/gpu/triton.proto``),
and tests/kernels/test_jax_kernel_call.py decodes this module's output
against that schema, read out of the plugin's ``_triton.so``.

What the launcher does with the call (jaxlib/gpu/triton_kernels.cc):

- it loads ``module_image.object_file`` with ``cuModuleLoadData``, which
  takes a fatbin, and keeps the module under (kernel name, shared memory,
  ``ptx``, compute capability). aotc puts no PTX there but a line naming the
  image's sha256, so two images of one kernel name never share a module;
- at instantiation it looks that key up again with the device's compute
  capability, and compiles the ``ptx`` text if it misses: the capability
  written here must be the device's;
- it launches ``num_warps * 32`` threads in x, 1 in y and z, with
  ``shared_mem_bytes`` of dynamic shared memory, and passes XLA's buffers,
  operands then results, to the array parameters in order.

No jax here: the encoding is plain bytes.
"""

from __future__ import annotations

import struct
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["ARRAY", "SCALAR_FIELDS", "encode_kernel_call", "image_key"]

ARRAY = "array"  # a parameter that is one of XLA's buffers
# A scalar parameter's kind -> its field of TritonKernelCall.Parameter's oneof, and how it is written.
SCALAR_FIELDS = {"bool": (2, "varint"), "i32": (3, "varint"), "u32": (4, "varint"), "i64": (5, "varint"), "u64": (6, "varint"), "f32": (7, "<f"), "f64": (8, "<d")}
_WIRE_TYPES = {"varint": 0, "<d": 1, "bytes": 2, "<f": 5}


def image_key(sha256: str) -> str:
    """What stands in the ``ptx`` field: the image's digest, the launcher's module key."""
    return f"// aotc image sha256:{sha256}\n"


def encode_kernel_call(
    *,
    name: str,
    symbol: str,
    num_warps: int,
    shared_bytes: int,
    capability: tuple[int, int],
    image: bytes,
    image_sha256: str,
    grid: tuple[int, int, int],
    params: Sequence[tuple[str, Any]],
) -> bytes:
    """The ``opaque`` bytes for one launch of ``symbol``; ``params`` in the kernel's
    order, each ``(ARRAY, None)`` or ``(scalar kind, value)``."""
    compute_capability = capability[0] * 10 + capability[1]
    module_image = _field(1, "bytes", image) + _field(2, "bytes", symbol.encode()) + _field(3, "varint", shared_bytes)
    kernel = b"".join((
        _field(1, "bytes", symbol.encode()),
        _field(2, "varint", num_warps),
        _field(3, "varint", shared_bytes),
        _field(4, "bytes", image_key(image_sha256).encode()),
        _field(6, "varint", compute_capability),
        _field(10, "varint", 1, always=True),  # num_ctas: one block a cluster, a plain cuLaunchKernel
        _field(11, "bytes", module_image, always=True),
    ))  # fmt: skip
    call = _field(1, "bytes", kernel) + b"".join(_field(2 + axis, "varint", extent) for axis, extent in enumerate(grid))
    for kind, value in params:
        if kind == ARRAY:
            parameter = _field(1, "bytes", b"", always=True)  # nothing zeroed, no alignment asked
        else:
            number, wire = SCALAR_FIELDS[kind]
            parameter = _field(number, wire, value, always=True)  # a oneof member is written even when 0
        call += _field(5, "bytes", parameter, always=True)
    any_call = _field(1, "bytes", call, always=True) + _field(4, "bytes", name.encode())
    return zlib.compress(any_call)


def _field(number: int, wire: str, value: Any, *, always: bool = False) -> bytes:
    """One field: its key, then its value; a proto3 default is left out unless ``always``."""
    if not value and not always:
        return b""
    key = _varint(number << 3 | _WIRE_TYPES[wire])
    if wire == "varint":
        return key + _varint(int(value))
    if wire == "bytes":
        return key + _varint(len(value)) + value
    return key + struct.pack(wire, value)


def _varint(number: int) -> bytes:
    """Base-128, low group first; a negative number as its 64-bit two's complement (ten bytes)."""
    number &= (1 << 64) - 1
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)
