"""DLPack's C layout, for the one reader (``aotc.arrays.dlpack``) and the
one exporter (the emulator's device arrays) of DLPack capsules in aotc.

The layout is DLPack's ABI (``dlpack.h``), stable since 0.6; written once so
the two sides cannot drift apart.
"""

from __future__ import annotations

import ctypes

__all__ = ["DLTensor"]


class DLTensor(ctypes.Structure):
    _fields_ = [  # the C layout of DLPack's DLTensor
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8),
        ("lanes", ctypes.c_uint16),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]
