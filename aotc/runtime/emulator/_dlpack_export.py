"""DLPack capsules for the emulator's device arrays (``arrays.DeviceArray.__dlpack__``).

A capsule named ``dltensor`` holds a ``DLManagedTensor`` whose memory this
module keeps alive (the struct, its shape, and the array that owns the data)
until the consumer calls the tensor's deleter or, unconsumed, the capsule dies.
"""

from __future__ import annotations

import ctypes
from typing import Any

from aotc.runtime.dlpack_abi import DLTensor

__all__ = ["capsule"]

# (kind, bits) of NumPy dtypes -> DLPack's type code (0 int, 1 uint, 2 float, 6 bool).
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}

_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


_alive: dict[int, tuple[Any, ...]] = {}  # managed tensor address -> what must outlive it


@_Deleter
def _delete(address: int) -> None:  # the consumer is done with the tensor
    _alive.pop(address, None)


# The destructor gets the dying capsule as a raw pointer: making it a Python
# object again there would revive it mid-deallocation.
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_NAME = ctypes.create_string_buffer(b"dltensor")  # the capsule keeps a pointer to its name
_new = ctypes.pythonapi.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, _CapsuleDestructor]
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))


@_CapsuleDestructor
def _destroy_unconsumed(capsule: Any) -> None:
    # A consumer renames the capsule "used_dltensor" and calls the deleter itself.
    if _is_valid(capsule, b"dltensor"):
        _alive.pop(_pointer(capsule, b"dltensor"), None)


def capsule(owner: Any, pointer: int, shape: tuple[int, ...], dtype: Any, device_type: int, device_id: int) -> Any:
    """A ``dltensor`` capsule over ``pointer`` (C-contiguous ``shape`` of NumPy ``dtype``);
    ``owner`` is kept alive until the capsule is consumed and released, or dies."""
    extents = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    managed = _DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data, tensor.device_type, tensor.device_id, tensor.ndim = pointer, device_type, device_id, len(shape)
    tensor.code, tensor.bits, tensor.lanes = _CODES[dtype.kind], dtype.itemsize * 8, 1
    tensor.shape = extents
    tensor.strides = ctypes.POINTER(ctypes.c_int64)()  # NULL: C-contiguous
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _alive[address] = (managed, extents, owner)
    return _new(address, ctypes.addressof(_NAME), _destroy_unconsumed)
