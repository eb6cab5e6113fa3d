from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aotc.arrays.kinds import as_operand
from aotc.arrays.operands import Operand, is_row_major, overlaps


class FakeCudaArray:
    """Just enough of a CuPy or Numba array: ``__cuda_array_interface__`` and a device."""

    def __init__(self, shape: tuple[int, ...], typestr: str = "<f4", strides: tuple[int, ...] | None = None,
                 pointer: int = 0xDEAD0000, device: Any = None) -> None:  # fmt: skip
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "strides": strides, "data": (pointer, False), "version": 3,
        }  # fmt: skip
        if device is not None:
            self.device = device


class Device:
    def __init__(self, **attributes: object) -> None:
        self.__dict__.update(attributes)


def test_numpy_operand_reads_pointer_dtype_shape_strides_device() -> None:
    a = np.zeros((3, 5), np.float32)
    op = as_operand(a, "A")
    assert isinstance(op, Operand)
    assert (op.kind.name, op.dtype, op.shape, op.strides, op.device) == ("numpy", "f32", (3, 5), (5, 1), "cpu")
    assert op.pointer == a.ctypes.data
    assert op.obj is a and op.on_host


def test_numpy_pointer_of_a_view_points_into_the_base() -> None:
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    op = as_operand(a[1:, 1:], "A")
    assert op.pointer == a.ctypes.data + (4 + 1) * 8
    assert (op.dtype, op.shape, op.strides) == ("i64", (2, 3), (4, 1))


@pytest.mark.parametrize(
    ("dtype", "name"), [(np.float64, "f64"), (np.int32, "i32"), (np.int64, "i64"), (np.bool_, "bool"), (np.float16, "f16"), (np.uint8, "u8"), (np.complex64, "complex64")]
)
def test_numpy_dtype_names(dtype: Any, name: str) -> None:
    assert as_operand(np.zeros(2, dtype), "x").dtype == name  # unsupported dtypes keep NumPy's name, for the error


def test_transposed_array_is_not_row_major() -> None:
    a = np.zeros((4, 6), np.float32)
    op = as_operand(a.T, "A")
    assert (op.shape, op.strides) == ((6, 4), (1, 6))
    assert not is_row_major(op)
    assert is_row_major(as_operand(a, "A"))


def test_column_slice_is_not_row_major_but_row_slice_is() -> None:
    a = np.zeros((4, 6), np.float32)
    assert not is_row_major(as_operand(a[:, ::2], "A"))
    assert is_row_major(as_operand(a[1:3], "A"))


def test_extents_of_one_may_have_any_stride() -> None:
    a = np.zeros((4, 6), np.float32)
    op = as_operand(a[::2][:1], "A")
    assert (op.shape, op.strides) == ((1, 6), (12, 1))
    assert is_row_major(op)


def test_contiguous_copies_with_numpy() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    op = as_operand(a.T, "A")
    op = op.kind.contiguous(op, "A")
    assert is_row_major(op) and op.strides == (2, 1)
    np.testing.assert_array_equal(op.obj, a.T)
    assert op.pointer != a.ctypes.data


def test_whole_element_strides_of_a_record_field_are_kept() -> None:
    records = np.zeros(4, dtype=[("x", np.int32), ("y", np.float32)])
    op = as_operand(records["y"], "y")
    assert (op.dtype, op.strides) == ("f32", (2,))
    assert op.pointer == records.ctypes.data + 4


def test_part_element_strides_are_copied() -> None:
    records = np.zeros(4, dtype=[("x", np.int8), ("y", np.float32)])  # packed: 5-byte records
    records["y"] = [1, 2, 3, 4]
    op = as_operand(records["y"], "y")
    assert (op.dtype, op.strides) == ("f32", (1,))
    assert op.obj.flags.c_contiguous and op.pointer != records.ctypes.data + 1
    np.testing.assert_array_equal(op.obj, [1, 2, 3, 4])


def test_lists_become_numpy_arrays() -> None:
    op = as_operand([[1.0, 2.0], [3.0, 4.0]], "A")
    assert (op.kind.name, op.dtype, op.shape, op.strides) == ("numpy", "f64", (2, 2), (2, 1))


def test_unsupported_object_names_the_argument() -> None:
    with pytest.raises(TypeError, match=r"^B: expected a NumPy array, a PyTorch tensor, a CUDA array or a DLPack array, got str$"):
        as_operand("matrix", "B")


def test_cuda_array_interface_contiguous() -> None:
    op = as_operand(FakeCudaArray((2, 3, 4), "<i4", pointer=0x7000), "C")
    assert (op.kind.name, op.dtype, op.shape, op.strides, op.pointer, op.device) == (
        "cuda_array", "i32", (2, 3, 4), (12, 4, 1), 0x7000, "cuda",  # no device attribute: the call asks the driver
    )  # fmt: skip
    assert not op.on_host and is_row_major(op)


def test_cuda_array_interface_strides_in_elements() -> None:
    op = as_operand(FakeCudaArray((3, 4), "<f8", strides=(8, 64)), "A")
    assert op.strides == (1, 8)
    assert not is_row_major(op)


def test_cuda_array_interface_device_from_id_or_index() -> None:
    assert as_operand(FakeCudaArray((1,), device=Device(id=2)), "x").device == "cuda:2"
    assert as_operand(FakeCudaArray((1,), device=Device(index=3)), "x").device == "cuda:3"
    assert as_operand(FakeCudaArray((1,), device=Device(id="gpu")), "x").device == "cuda"


def test_cuda_array_interface_null_pointer_and_foreign_dtype() -> None:
    op = as_operand(FakeCudaArray((0,), "<c8", pointer=None), "x")  # type: ignore[arg-type]
    assert (op.pointer, op.dtype) == (0, "<c8")


def test_cuda_array_interface_part_element_strides_are_an_error() -> None:
    with pytest.raises(ValueError, match=r"^A: strides \(6, 4\) are not whole elements$"):
        as_operand(FakeCudaArray((2, 2), "<f4", strides=(6, 4)), "A")


def test_strided_foreign_array_cannot_be_copied_here() -> None:
    op = as_operand(FakeCudaArray((3, 4), strides=(4, 12)), "A")
    with pytest.raises(ValueError, match=r"^A: a strided FakeCudaArray cannot be copied here; pass a contiguous array$"):
        op.kind.contiguous(op, "A")


def test_new_arrays_follow_the_operand_library() -> None:
    like = as_operand(np.zeros((2, 2), np.float32), "A")
    empty = like.kind.allocate(like, (3, 4), "i32", None, "out")
    zeros = like.kind.allocate(like, (2, 5), "f64", None, "out", 0)
    filled = like.kind.allocate(like, (2, 2), "f32", None, "out", -np.inf)
    assert (type(empty), empty.shape, empty.dtype) == (np.ndarray, (3, 4), np.int32)
    assert (zeros.shape, zeros.dtype, zeros.any()) == ((2, 5), np.float64, False)
    assert (filled == -np.inf).all()


def test_no_allocator_for_a_foreign_array() -> None:
    like = as_operand(FakeCudaArray((2, 2)), "A")
    with pytest.raises(TypeError, match=r"^out: cannot allocate a result like FakeCudaArray; pass out=$"):
        like.kind.allocate(like, (2, 2), "f32", None, "out")


def test_read_only_arrays_are_not_writable() -> None:
    frozen = np.zeros((2, 2))
    frozen.flags.writeable = False

    def writable(array: Any) -> bool:
        op = as_operand(array, "out")
        return op.kind.writable(op)

    assert writable(np.zeros((2, 2)))
    assert not writable(frozen)
    assert not writable(np.frombuffer(bytes(32)).reshape(2, 2))


def test_overlap_is_exact_for_numpy_and_by_byte_range_otherwise() -> None:
    base = np.zeros((4, 4))
    assert overlaps(as_operand(base[:2], "x"), as_operand(base[1:3], "y"))
    assert not overlaps(as_operand(base[:2], "x"), as_operand(base[2:], "y"))
    # Interleaved columns: the byte ranges meet, but NumPy knows no element is shared.
    assert not overlaps(as_operand(base[:, ::2], "x"), as_operand(base[:, 1::2], "y"))
    assert not overlaps(as_operand(base[:0], "x"), as_operand(base, "y"))  # empty: touches nothing


def test_fill_sets_every_element_of_a_host_array() -> None:
    plain = np.zeros((2, 3))
    op = as_operand(plain, "out")
    op.kind.fill(op, -np.inf, 0, None)
    assert (plain == -np.inf).all()


def test_each_library_has_one_adapter_chosen_by_type() -> None:
    from aotc.arrays.kinds import kind_of

    assert kind_of(np.zeros(2), "x") is kind_of(np.ones(3), "y")
    assert kind_of(np.zeros(2), "x").name == "numpy" and kind_of([1.0], "x").name == "numpy"
    assert kind_of(FakeCudaArray((2,)), "x").name == "cuda_array"
