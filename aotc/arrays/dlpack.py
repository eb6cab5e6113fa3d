"""Arrays that speak only DLPack (``__dlpack__`` and ``__dlpack_device__``):
JAX, TensorFlow, and any library that exports the protocol.

On the CPU (kDLCPU) ``numpy.from_dlpack`` gives a NumPy view of the same
memory, which is the operand from then on: results are NumPy arrays. On a
CUDA device (kDLCUDA) the capsule's ``DLManagedTensor`` is read in place with
ctypes (pointer, shape, strides, dtype); the capsule is not consumed, so its
destructor gives the producer's reference back. Such an array is read where it
lies; aotc cannot make another of its kind, so a product of CUDA DLPack arrays
needs ``out=`` (a torch tensor or a CUDA array on the same device).

Nothing here is imported until an array of this kind is seen.
"""

from __future__ import annotations

import ctypes

from aotc.dtypes import DTYPES, by_dlpack
from aotc.errors import ArgumentError, ArgumentTypeError, echo
from aotc.runtime.dlpack_abi import DLTensor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["KDL_CPU", "KDL_CUDA", "dlpack_device", "read_capsule"]

KDL_CPU, KDL_CUDA = 1, 2
_DEVICE_NAMES = {3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal", 10: "kDLROCM", 13: "kDLCUDAManaged", 14: "kDLOneAPI"}




_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def dlpack_device(obj: Any, name: str) -> tuple[int, int]:
    """``obj.__dlpack_device__()`` checked: (device type, device id), CPU or CUDA."""
    try:
        device_type, device_id = obj.__dlpack_device__()
        device_type, device_id = int(device_type), int(device_id)
    except (TypeError, ValueError):
        msg = f"{name}: __dlpack_device__() must return (device type, device id), got {echo(obj.__dlpack_device__())}"
        raise ArgumentTypeError(msg) from None
    if device_type not in (KDL_CPU, KDL_CUDA):
        what = _DEVICE_NAMES.get(device_type, "an unknown type")
        msg = f"{name}: a DLPack array on device type {device_type} ({what}); only CPU (1) and CUDA (2) arrays are supported"
        raise ArgumentError(msg)
    return device_type, device_id


def read_capsule(capsule: Any, name: str) -> tuple[str, tuple[int, ...], tuple[int, ...], int, int]:
    """(dtype, shape, strides in elements, data pointer, device id) of an unconsumed
    ``dltensor`` capsule; the capsule stays the owner."""
    if not _is_valid(capsule, b"dltensor"):
        msg = f"{name}: __dlpack__() did not return an unused DLPack capsule"
        raise ArgumentTypeError(msg)
    tensor = DLTensor.from_address(_get_pointer(capsule, b"dltensor"))  # DLManagedTensor starts with its DLTensor
    found = by_dlpack(tensor.code, tensor.bits) if tensor.lanes == 1 else None
    if found is None:
        known = ", ".join(d.numpy for d in DTYPES.values())
        msg = f"{name}: DLPack dtype (code {tensor.code}, {tensor.bits} bits, {tensor.lanes} lanes) is not one of {known}"
        raise ArgumentError(msg)
    dtype = found.name
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] for i in range(ndim))
    else:  # NULL: C-contiguous
        steps, step = [], 1
        for extent in reversed(shape):
            steps.append(step)
            step *= extent
        strides = tuple(reversed(steps))
    return dtype, shape, strides, (tensor.data or 0) + tensor.byte_offset, tensor.device_id
