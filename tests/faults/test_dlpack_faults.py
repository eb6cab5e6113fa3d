"""Faults in arrays that speak only DLPack: one-line errors naming the argument."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aotc import tropical
from aotc.arrays.dlpack import read_capsule
from aotc.errors import ArgumentError, ArgumentTypeError

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")


class DLPackOnly:
    """An array that exposes only the DLPack protocol, answering as told."""

    def __init__(self, array: Any, device: Any = (1, 0)) -> None:
        self._array = array
        self._device = device

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._device


def test_a_device_type_other_than_cpu_or_cuda_is_refused() -> None:
    a = DLPackOnly(np.ones((2, 2), np.float32), device=(10, 0))
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul: a: a DLPack array on device type 10 \(kDLROCM\); only CPU \(1\) and CUDA \(2\) arrays are supported$"):
        tropical.matmul(a, np.ones((2, 2), np.float32))


def test_a_malformed_dlpack_device_is_a_type_error() -> None:
    b = DLPackOnly(np.ones((2, 2), np.float32), device="cpu")
    with pytest.raises(ArgumentTypeError, match=r"^tropical\.matmul: b: __dlpack_device__\(\) must return \(device type, device id\), got 'cpu'$"):
        tropical.matmul(np.ones((2, 2), np.float32), b)


def test_an_unsupported_dtype_on_the_cpu_names_it() -> None:
    a = DLPackOnly(np.ones((2, 2), np.float16))
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul: a: dtype f16, but its kernels for semiring=maxplus take f32, f64, i32 or i64 there$"):
        tropical.matmul(a, DLPackOnly(np.ones((2, 2), np.float16)))


def test_an_unsupported_dtype_in_a_capsule_names_it() -> None:
    # The CUDA reader, given a CPU capsule: the same DLManagedTensor layout.
    with pytest.raises(ArgumentError, match=r"^a: DLPack dtype \(code 5, 64 bits, 1 lanes\) is not one of float32, float64, int32, int64, bool, uint32, float16, bfloat16, int8, uint8, int16, uint16, uint64$"):
        read_capsule(np.ones(3, np.complex64).__dlpack__(), "a")


def test_a_used_or_foreign_capsule_is_refused() -> None:
    with pytest.raises(ArgumentTypeError, match=r"^a: __dlpack__\(\) did not return an unused DLPack capsule$"):
        read_capsule(object(), "a")


def test_a_dlpack_only_out_is_refused() -> None:
    a = np.ones((2, 2), np.float32)
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul: out: a DLPack-only array is not written in place; pass a NumPy array, a tensor or a CUDA array$"):
        tropical.matmul(a, a, out=DLPackOnly(np.empty((2, 2), np.float32)))
