"""Arrays that speak only DLPack (aotc/arrays/dlpack.py), on the emulator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from arrays.arrays_support import DLPackOnly

from aotc import reference, tropical
from aotc.arrays.dlpack import read_capsule

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")
MAXPLUS = reference.SEMIRINGS["maxplus"]


def test_numpy_through_dlpack_gives_a_numpy_result() -> None:
    rng = np.random.default_rng()
    a, b = rng.standard_normal((7, 5), np.float32), rng.standard_normal((5, 6), np.float32)
    c = tropical.matmul(DLPackOnly(a), DLPackOnly(b))
    assert type(c) is np.ndarray and c.dtype == np.float32
    np.testing.assert_allclose(c, reference.matmul(a, b, MAXPLUS), rtol=1e-6)


def test_a_strided_dlpack_array_is_read_by_its_strides() -> None:
    rng = np.random.default_rng()
    a, b = rng.standard_normal((5, 7)).T, rng.standard_normal((10, 6))[::2]  # f64, transposed and stepped
    c, k = tropical.matmul_argmax(DLPackOnly(a), DLPackOnly(b), out=np.empty((7, 6)), k_out=np.empty((7, 6), np.int32))
    np.testing.assert_allclose(c, reference.matmul(a, b, MAXPLUS))
    assert k.min() >= 0


def test_torch_cpu_tensors_through_dlpack() -> None:
    torch = pytest.importorskip("torch")
    a, b = torch.randn(4, 3, dtype=torch.float64), torch.randn(3, 5, dtype=torch.float64)
    c = tropical.matmul(DLPackOnly(a), DLPackOnly(b), "minplus")
    assert type(c) is np.ndarray
    np.testing.assert_allclose(c, reference.matmul(a.numpy(), b.numpy(), reference.SEMIRINGS["minplus"]))


@pytest.mark.parametrize("view", [lambda x: x, lambda x: x[1:, ::2], lambda x: x.T])
def test_the_capsule_reader_sees_what_numpy_sees(view: Any) -> None:
    # The reader CUDA arrays take, on a CPU capsule: the DLManagedTensor layout is the same.
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    x = view(base)
    dtype, shape, strides, pointer, device_id = read_capsule(x.__dlpack__(), "a")
    assert (dtype, shape, device_id) == ("i32", x.shape, 0)
    assert strides == tuple(s // 4 for s in x.strides)
    assert pointer == x.ctypes.data
