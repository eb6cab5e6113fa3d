"""Faults in the arrays and arguments given to aotc.tropical, on the CPU emulator.

Each case is one input and what it must give: a one-line error (its class and
a fragment of its message) or the correct result, compared with aotc.reference.
A hypothesis fuzzer then runs matmul over shapes (0 included), layouts,
dtypes and semirings against the reference.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotc import reference, tropical
from aotc.errors import ArgumentError, ArgumentTypeError
from conftest import installed_library

installed_library()  # skips this module, saying why, where there is no library

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")

INT32_MAX = 2**31 - 1


def _f64(*shape: int) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 7 - 3


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _read_only_mmap(tmp_path: Path) -> np.ndarray:
    path = tmp_path / "out.bin"
    np.zeros((2, 2)).tofile(path)
    return np.memmap(path, dtype=np.float64, mode="r", shape=(2, 2))


class FakeCudaArray:
    """Quacks like a CuPy array on cuda:0 (its memory is host memory)."""

    def __init__(self, array: np.ndarray, *, read_only: bool = False) -> None:
        self.array = array
        self.__cuda_array_interface__ = {
            "shape": array.shape, "typestr": array.dtype.str, "data": (array.ctypes.data, read_only),
            "strides": None, "version": 3,
        }  # fmt: skip


def _interface(interface: Any = "keep", **changed: Any) -> FakeCudaArray:
    """A2x3's CUDA array with its interface replaced, or some of its keys changed."""
    array = FakeCudaArray(A23)
    array.__cuda_array_interface__ = interface if interface != "keep" else {**array.__cuda_array_interface__, **changed}
    return array


def _shared_out_and_k_out() -> tuple[Any, Any]:
    buffer = np.zeros(8)
    out = buffer[:4].reshape(2, 2)
    k_out = buffer[:2].view(np.int32).reshape(2, 2)  # the same bytes as out's first row
    return tropical.matmul_argmax(_f64(2, 3), _f64(3, 2), out=out, k_out=k_out)


def _overlapping_view() -> Any:
    big = np.zeros((4, 2))
    return tropical.matmul(big[1:3], _f64(2, 2), out=big[:2])


A23, B32 = _f64(2, 3), _f64(3, 2)
Call = Callable[[Path], Any]

# name -> (call, error class, fragment of its one-line message)
ERRORS: dict[str, tuple[Call, type[Exception], str]] = {
    # semiring, stream, library and the like: the wrong type gets one line, never a bare TypeError
    "semiring-list": (lambda _: tropical.matmul(A23, B32, ["maxplus"]), ArgumentTypeError, "semiring: expected a semiring name (str)"),
    "semiring-none": (lambda _: tropical.matmul(A23, B32, None), ArgumentTypeError, "semiring: expected a semiring name"),
    "semiring-int": (lambda _: tropical.matmul(A23, B32, 3), ArgumentTypeError, "got 3"),
    "semiring-bytes": (lambda _: tropical.matmul(A23, B32, b"maxplus"), ArgumentTypeError, "known: maxplus"),
    "semiring-unknown": (lambda _: tropical.matmul(A23, B32, "maxplux"), ArgumentError, "semiring: unknown 'maxplux' (known: maxplus"),
    "argmax-semiring-list": (lambda _: tropical.matmul_argmax(A23, B32, ["minplus"]), ArgumentTypeError, "semiring: expected"),
    "backward-semiring-dict": (
        lambda _: tropical.matmul_backward(np.ones((2, 2)), np.zeros((2, 2), np.int32), A23, B32, {"maxplus": 1}),
        ArgumentTypeError, "semiring: expected",
    ),  # fmt: skip
    "packed-semiring-list": (
        lambda _: tropical.matmul_packed(tropical.pack_bool(np.ones((2, 3), bool)), tropical.pack_bool(np.ones((3, 2), bool), 0), ["andor"]),
        ArgumentTypeError, "semiring: expected",
    ),  # fmt: skip
    "stream-str": (lambda _: tropical.matmul(A23, B32, stream="0"), ArgumentTypeError, "stream: expected None, an int stream handle"),
    "stream-float": (lambda _: tropical.matmul(A23, B32, stream=1.5), ArgumentTypeError, "stream: expected"),
    "stream-object": (lambda _: tropical.matmul(A23, B32, stream=object()), ArgumentTypeError, "stream: expected"),
    "stream-negative": (lambda _: tropical.matmul(A23, B32, stream=-1), ArgumentError, "stream: a stream handle is a non-negative int"),
    "stream-str-empty-product": (lambda _: tropical.matmul(np.ones((0, 3)), B32, stream="0"), ArgumentTypeError, "stream: expected"),
    "stream-bool": (lambda _: tropical.matmul(A23, B32, stream=True), ArgumentTypeError, "stream: expected"),
    # an int that names no stream: the backend's refusal, once without the function or the argument
    "stream-no-such-handle": (
        lambda _: tropical.matmul(A23, B32, stream=12345), ArgumentError,
        "tropical.matmul: stream: 12345 is no stream of the call's device (emulator: stream 12345 on device 0: no such stream",
    ),  # fmt: skip
    "backward-stream-no-such-handle": (
        lambda _: tropical.matmul_backward(np.ones((2, 2)), np.zeros((2, 2), np.int32), A23, B32, stream=12345), ArgumentError,
        "tropical.matmul_backward: stream: 12345 is no stream of the call's device",
    ),  # fmt: skip
    "set-library-int": (lambda _: tropical.set_library(42), ArgumentTypeError, "library: expected a kernel library"),
    "over-a-name": (lambda _: tropical.over("tropical"), ArgumentTypeError, "library: expected a kernel library (an aotc.load() result)"),
    "pack-axis-str": (lambda _: tropical.pack_bool(np.ones((2, 2), bool), "1"), ArgumentTypeError, "axis: expected 0"),
    "pack-axis-2": (lambda _: tropical.pack_bool(np.ones((2, 2), bool), 2), ArgumentError, "axis: must be 0"),
    "packed-not-packed": (lambda _: tropical.matmul_packed(np.ones((2, 3), bool), np.ones((3, 2), bool)), ArgumentTypeError, "pa: expected pack_bool(A, 1)"),
    "packed-wrong-axis": (
        lambda _: tropical.matmul_packed(tropical.pack_bool(np.ones((2, 3), bool)), tropical.pack_bool(np.ones((3, 2), bool), 1)),
        ArgumentError, "pb: expected pack_bool(B, 0)",
    ),  # fmt: skip
    "packed-flag-str": (
        lambda _: tropical.matmul_packed(tropical.pack_bool(np.ones((2, 3), bool)), tropical.pack_bool(np.ones((3, 2), bool), 0), packed="yes"),
        ArgumentTypeError, "packed: expected True or False",
    ),  # fmt: skip
    # read-only results: written anyway before, a read-only mmap crashed with SIGSEGV
    "out-not-writeable": (lambda _: tropical.matmul(A23, B32, out=_read_only(np.zeros((2, 2)))), ArgumentError, "out: is read-only"),
    "out-over-bytes": (
        lambda _: tropical.matmul(A23, B32, out=np.frombuffer(bytes(32), np.float64).reshape(2, 2)), ArgumentError, "out: is read-only",
    ),  # fmt: skip
    "out-read-only-mmap": (lambda tmp: tropical.matmul(A23, B32, out=_read_only_mmap(tmp)), ArgumentError, "out: is read-only"),
    "k-out-not-writeable": (
        lambda _: tropical.matmul_argmax(A23, B32, k_out=_read_only(np.zeros((2, 2), np.int32))), ArgumentError, "k_out: is read-only",
    ),  # fmt: skip
    "packed-out-read-only": (
        lambda _: tropical.matmul_packed(
            tropical.pack_bool(np.ones((2, 3), bool)), tropical.pack_bool(np.ones((3, 2), bool), 0), out=_read_only(np.zeros((2, 2), bool))
        ),
        ArgumentError, "out: is read-only",
    ),  # fmt: skip
    # results that share memory with an input or with each other
    "out-is-a": (lambda _: (lambda a: tropical.matmul(a, _f64(2, 2), out=a))(_f64(2, 2)), ArgumentError, "out: shares memory with a"),
    "out-is-b": (lambda _: (lambda b: tropical.matmul(_f64(2, 2), b, out=b))(_f64(2, 2)), ArgumentError, "out: shares memory with b"),
    "out-overlaps-a-view": (lambda _: _overlapping_view(), ArgumentError, "out: shares memory with a"),
    "k-out-overlaps-out": (lambda _: _shared_out_and_k_out(), ArgumentError, "k_out: shares memory with out"),
    "k-out-is-a": (
        lambda _: (lambda a: tropical.matmul_argmax(a, np.ones((2, 2), np.int32), k_out=a))(np.ones((2, 2), np.int32)),
        ArgumentError, "k_out: shares memory with a",
    ),  # fmt: skip
    # results of the wrong kind
    "out-dtype": (lambda _: tropical.matmul(A23, B32, out=np.zeros((2, 2), np.float32)), ArgumentError, "out: expected shape (2, 2) and dtype f64"),
    "out-shape": (lambda _: tropical.matmul(A23, B32, out=np.zeros((2, 3))), ArgumentError, "out: expected shape (2, 2)"),
    "out-strided": (lambda _: tropical.matmul(A23, B32, out=np.zeros((2, 4))[:, ::2]), ArgumentError, "out: must be a contiguous row-major array"),
    "out-fortran": (lambda _: tropical.matmul(_f64(3, 3), _f64(3, 3), out=np.zeros((3, 3), order="F")), ArgumentError, "out: must be a contiguous"),
    "out-list": (lambda _: tropical.matmul(A23, B32, out=[[0.0, 0.0], [0.0, 0.0]]), ArgumentTypeError, "out: expected an array to write the result into"),
    "out-on-device": (lambda _: tropical.matmul(A23, B32, out=FakeCudaArray(np.zeros((2, 2)))), ArgumentError, "out: on cuda:0, but a is on cpu"),
    "k-out-dtype": (lambda _: tropical.matmul_argmax(A23, B32, k_out=np.zeros((2, 2), np.int64)), ArgumentError, "k_out: expected shape (2, 2) and dtype i32"),
    # sizes past what the kernels hold, refused before anything is allocated (a grid past
    # CUDA's limits is launched in parts: "batch-past-grid" below, tests/tropical/test_grid_split.py)
    "k-past-int32": (
        lambda _: tropical.matmul(np.broadcast_to(np.zeros(1), (1, 2**31)), np.broadcast_to(np.ones(1), (2**31, 1))),
        ArgumentError, f"a: K=2147483648 is past the kernel's i32 limit of {INT32_MAX}",
    ),  # fmt: skip
    "m-past-int32": (
        lambda _: tropical.matmul(np.broadcast_to(np.ones(1), (2**31, 1)), np.ones((1, 1))), ArgumentError, "a: M=2147483648 is past the kernel's i32 limit",
    ),  # fmt: skip
    # operands
    "a-scalar": (lambda _: tropical.matmul(np.float64(1), B32), ArgumentError, "a: expected a 2-D or 3-D array ([batch], M, K), got shape ()"),
    "a-1d": (lambda _: tropical.matmul(np.ones(3), B32), ArgumentError, "a: expected a 2-D or 3-D array ([batch], M, K), got shape (3,)"),
    "a-4d": (lambda _: tropical.matmul(np.ones((1, 2, 2, 3)), B32), ArgumentError, "a: expected a 2-D or 3-D array"),
    "inner-mismatch": (lambda _: tropical.matmul(A23, np.ones((4, 2))), ArgumentError, "b: shape (4, 2) gives K=4, but a gave K=3"),
    "batch-mismatch": (lambda _: tropical.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2))), ArgumentError, "b: shape (3, 3, 2) gives batch=3, but a gave batch=2"),
    "empty-batch-mismatch": (lambda _: tropical.matmul(np.ones((0, 2, 3)), np.ones((3, 3, 2))), ArgumentError, "b: shape (3, 3, 2) gives batch=3, but a gave batch=0"),
    "mixed-dtypes": (lambda _: tropical.matmul(np.ones((2, 3), np.float32), B32), ArgumentError, "b: dtype f64 does not match a's f32"),
    "int16": (lambda _: tropical.matmul(np.ones((2, 3), np.int16), np.ones((3, 2), np.int16)), ArgumentError, "tropical.matmul: a: dtype i16, but its kernels for semiring=maxplus take f32, f64, i32 or i64 there"),
    "complex": (lambda _: tropical.matmul(A23 + 0j, B32 + 0j), ArgumentError, "dtype complex128"),
    "bool-maxplus": (lambda _: tropical.matmul(np.ones((2, 3), bool), np.ones((3, 2), bool), "maxplus"), ArgumentError, "dtype bool"),
    "counting-no-pairs": (lambda _: tropical.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), "counting"), ArgumentError, "then 2 values an element), got shape (2, 3)"),
    "a-ragged-list": (lambda _: tropical.matmul([[1.0, 2.0], [3.0]], B32), ArgumentError, "a: NumPy cannot make an array of this list"),
    "out-big-endian": (
        lambda _: tropical.matmul(A23, B32, out=np.zeros((2, 2), ">f8")), ArgumentError, "out: has non-native byte order (>f8)",
    ),  # fmt: skip
    "a-str": (lambda _: tropical.matmul("a", B32), ArgumentTypeError, "a: expected a NumPy array, a PyTorch tensor, a CUDA array or a DLPack array, got str"),
    "a-none": (lambda _: tropical.matmul(None, B32), ArgumentTypeError, "a: expected a NumPy array"),
    "b-dict": (lambda _: tropical.matmul(A23, {"b": 1}), ArgumentTypeError, "b: expected a NumPy array"),
    "b-on-device": (lambda _: tropical.matmul(A23, FakeCudaArray(B32)), ArgumentError, "b: a cuda:0 array, but the emulator backend runs on host memory"),
    "device-on-host-backend": (lambda _: tropical.matmul(FakeCudaArray(A23), FakeCudaArray(B32)), ArgumentError, "backend runs on host memory"),
    "backward-k-dtype": (lambda _: tropical.matmul_backward(np.ones((2, 2)), np.zeros((2, 2)), A23, B32), ArgumentError, "tropical.matmul_backward: k: dtype f64, but its kernels for semiring=maxplus, variant=single take i32 there"),
    # the public function and the argument at fault: before, "k: shape (2, 2) gives M=2, but grad_c gave M=3"
    "backward-grad-shape": (
        lambda _: tropical.matmul_backward(np.ones((3, 3)), np.zeros((2, 2), np.int32), A23, B32), ArgumentError,
        "tropical.matmul_backward: grad_c: shape (3, 3), but the result it is the gradient of, out, has shape (2, 2) for these inputs",
    ),  # fmt: skip
    "backward-k-shape": (
        lambda _: tropical.matmul_backward(np.ones((2, 2)), np.zeros((3, 2), np.int32), A23, B32), ArgumentError,
        "tropical.matmul_backward: k: shape (3, 2), but the result it is, k_out, has shape (2, 2) for these inputs",
    ),  # fmt: skip
    # before: "gemm_argmax (semiring=maxplus, dtype=i32, variant=single): declares no backward", a kernel never called
    "backward-i32": (
        lambda _: tropical.matmul_backward(np.ones((2, 2), np.int32), np.zeros((2, 2), np.int32), np.ones((2, 3), np.int32), np.ones((3, 2), np.int32)),
        ArgumentError, "tropical.matmul_backward: a: dtype i32 has no gradient (its kernels differentiate f32 or f64)",
    ),  # fmt: skip
    "backward-andor": (
        lambda _: tropical.matmul_backward(np.ones((2, 2), bool), np.zeros((2, 2), np.int32), np.ones((2, 3), bool), np.ones((3, 2), bool), "andor"),
        ArgumentError, "semiring: 'andor' has no gradient",
    ),  # fmt: skip
    # A malformed __cuda_array_interface__: before, KeyError, TypeError or a negative extent blamed on out.
    "cai-no-shape": (lambda _: tropical.matmul(_interface(shape=None), B32), ArgumentTypeError, "tropical.matmul: a: its __cuda_array_interface__ shape None is not a tuple of sizes"),
    "cai-negative-shape": (lambda _: tropical.matmul(_interface(shape=(-2, 3)), B32), ArgumentTypeError, "a: its __cuda_array_interface__ shape (-2, 3) is not a tuple of sizes"),
    "cai-typestr": (lambda _: tropical.matmul(_interface(typestr=4), B32), ArgumentTypeError, "a: its __cuda_array_interface__ typestr 4 is not a type string like '<f4'"),
    "cai-data": (lambda _: tropical.matmul(_interface(data=None), B32), ArgumentTypeError, "a: its __cuda_array_interface__ data None is not (pointer, read_only)"),
    "cai-strides": (lambda _: tropical.matmul(_interface(strides=(8,)), B32), ArgumentTypeError, "a: its __cuda_array_interface__ strides (8,) are not one integer per axis of shape (2, 3)"),
    "cai-version": (lambda _: tropical.matmul(_interface(version="3"), B32), ArgumentTypeError, "a: its __cuda_array_interface__ version '3' is not an integer"),
    "cai-not-a-dict": (lambda _: tropical.matmul(_interface(None), B32), ArgumentTypeError, "a: its __cuda_array_interface__ is a NoneType, not a dict"),
}


@pytest.mark.parametrize("case", list(ERRORS.values()), ids=list(ERRORS))
def test_fault_gives_one_line(case: tuple[Call, type[Exception], str], tmp_path: Path) -> None:
    call, error, fragment = case
    with pytest.raises(error) as info:
        call(tmp_path)
    text = str(info.value)
    assert fragment in text and "\n" not in text, text


def _counting(*shape: int) -> np.ndarray:
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 5
    return np.stack([values, np.ones_like(values)], axis=-1)


def _in_place_k0() -> tuple[Any, ...]:
    out, k_out = np.full((2, 3), 7.0), np.full((2, 3), 7, np.int32)
    c, k = tropical.matmul_argmax(np.ones((2, 0)), np.ones((0, 3)), out=out, k_out=k_out)
    assert c is out and k is k_out
    return c, k


def _given(out: Any, call: Callable[[Any], Any]) -> Any:
    """``call(out)``, which must return the out array(s) it was given, written in place."""
    got = call(out)
    assert all(g is o for g, o in zip(got, out)) if isinstance(out, tuple) else got is out
    return got


def _packed(a: np.ndarray, b: np.ndarray, argmax: bool = False) -> Any:
    pa, pb = tropical.pack_bool(a, 1), tropical.pack_bool(b, 0)
    return tropical.matmul_packed_argmax(pa, pb) if argmax else tropical.matmul_packed(pa, pb)


def _ref(a: Any, b: Any, semiring: str = "maxplus", argmax: bool = False) -> Any:
    return reference.matmul_argmax(a, b, semiring) if argmax else reference.matmul(a, b, semiring)


T = np.ones((2, 3), bool)
BIG = _f64(6, 8)
# name -> (what aotc gives, what the reference gives)
class SemiringName(str, enum.Enum):
    """A str-valued enum, as a user's code names its semirings."""

    MINPLUS = "minplus"


# Shapes no other case uses, so no call plan of an earlier case answers for them.
A75, B53 = np.arange(35, dtype=np.float32).reshape(7, 5) % 4, np.arange(15, dtype=np.float32).reshape(5, 3) % 3

RESULTS: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
    # big-endian inputs are read through a native copy, never as swapped bytes
    "big-endian-inputs": (lambda: tropical.matmul(A75.astype(">f4"), B53.astype(">f4")), lambda: _ref(A75, B53)),
    "semiring-str-enum": (lambda: tropical.matmul(A75, B53, SemiringName.MINPLUS), lambda: _ref(A75, B53, "minplus")),
    # empty dimensions: an empty result with no launch; K = 0: the zero, which the kernels write
    "m0": (lambda: tropical.matmul(np.ones((0, 3)), B32), lambda: _ref(np.ones((0, 3)), B32)),
    "n0": (lambda: tropical.matmul(A23, np.ones((3, 0))), lambda: _ref(A23, np.ones((3, 0)))),
    "k0-maxplus": (lambda: tropical.matmul_argmax(np.ones((2, 0)), np.ones((0, 3))), lambda: _ref(np.ones((2, 0)), np.ones((0, 3)), argmax=True)),
    "k0-minplus-i32": (
        lambda: tropical.matmul_argmax(np.ones((2, 0), np.int32), np.ones((0, 2), np.int32), "minplus"),
        lambda: _ref(np.ones((2, 0), np.int32), np.ones((0, 2), np.int32), "minplus", True),
    ),  # fmt: skip
    "k0-maxmul-i64": (
        lambda: tropical.matmul(np.ones((3, 0), np.int64), np.ones((0, 1), np.int64), "maxmul"),
        lambda: _ref(np.ones((3, 0), np.int64), np.ones((0, 1), np.int64), "maxmul"),
    ),  # fmt: skip
    "k0-andor": (
        lambda: tropical.matmul_argmax(np.ones((2, 0), bool), np.ones((0, 2), bool), "andor"),
        lambda: _ref(np.ones((2, 0), bool), np.ones((0, 2), bool), "andor", True),
    ),  # fmt: skip
    "k0-counting": (
        lambda: tropical.matmul_argmax(_counting(2, 0), _counting(0, 3), "counting"), lambda: _ref(_counting(2, 0), _counting(0, 3), "counting", True),
    ),  # fmt: skip
    "m0-counting": (lambda: tropical.matmul(_counting(0, 3), _counting(3, 2), "counting"), lambda: _ref(_counting(0, 3), _counting(3, 2), "counting")),
    "k0-batched": (lambda: tropical.matmul(np.ones((2, 3, 0)), np.ones((0, 4))), lambda: _ref(np.ones((2, 3, 0)), np.ones((0, 4)))),
    "k0-in-place": (_in_place_k0, lambda: _ref(np.ones((2, 0)), np.ones((0, 3)), argmax=True)),
    # an out array with an extent of 0, whose strides NumPy reports as (0, 0): never refused for them
    "m0-out": (lambda: _given(np.zeros((0, 2)), lambda out: tropical.matmul(np.ones((0, 3)), B32, out=out)), lambda: _ref(np.ones((0, 3)), B32)),
    "m0-out-argmax": (
        lambda: _given((np.zeros((0, 2)), np.zeros((0, 2), np.int32)), lambda out: tropical.matmul_argmax(np.ones((0, 3)), B32, out=out[0], k_out=out[1])),
        lambda: _ref(np.ones((0, 3)), B32, argmax=True),
    ),  # fmt: skip
    "batch0-out": (
        lambda: _given(np.zeros((0, 2, 2)), lambda out: tropical.matmul(np.ones((0, 2, 3)), B32, out=out)), lambda: _ref(np.ones((0, 2, 3)), B32),
    ),  # fmt: skip
    # a grid past CUDA's 65535 blocks on z, launched in parts (before: refused)
    "batch-past-grid": (
        lambda: tropical.matmul(np.broadcast_to(np.ones((1, 1)), (65536, 1, 1)), np.ones((1, 1))), lambda: np.full((65536, 1, 1), 2.0),
    ),  # fmt: skip
    "m0-k0": (lambda: tropical.matmul_argmax(np.ones((0, 0)), np.ones((0, 2))), lambda: _ref(np.ones((0, 0)), np.ones((0, 2)), argmax=True)),
    "batch0": (lambda: tropical.matmul(np.ones((0, 2, 3)), np.ones((0, 3, 2))), lambda: _ref(np.ones((0, 2, 3)), np.ones((0, 3, 2)))),
    "batch0-view": (lambda: tropical.matmul(_f64(4, 2, 3)[:0], B32), lambda: _ref(_f64(4, 2, 3)[:0], B32)),
    "batch0-argmax": (lambda: tropical.matmul_argmax(A23, np.ones((0, 3, 2))), lambda: _ref(A23, np.ones((0, 3, 2)), argmax=True)),
    "batch0-strided": (lambda: tropical.matmul(_f64(4, 2, 6)[:0, :, ::2], B32), lambda: _ref(_f64(4, 2, 6)[:0, :, ::2], B32)),
    "k0-packed": (lambda: _packed(np.ones((2, 0), bool), np.ones((0, 3), bool), True), lambda: _ref(np.ones((2, 0), bool), np.ones((0, 3), bool), "andor", True)),
    "m0-packed": (lambda: _packed(np.ones((0, 5), bool), np.ones((5, 3), bool)), lambda: _ref(np.ones((0, 5), bool), np.ones((5, 3), bool), "andor")),
    "k0-backward": (
        lambda: tropical.matmul_backward(np.ones((2, 3)), np.full((2, 3), -1, np.int32), np.ones((2, 0)), np.ones((0, 3))),
        lambda: reference.matmul_backward(np.ones((2, 3)), np.full((2, 3), -1, np.int32), np.ones((2, 0)), np.ones((0, 3)), "maxplus"),
    ),  # fmt: skip
    "m0-backward": (
        lambda: tropical.matmul_backward(np.ones((0, 2)), np.zeros((0, 2), np.int32), np.ones((0, 3)), B32),
        lambda: reference.matmul_backward(np.ones((0, 2)), np.zeros((0, 2), np.int32), np.ones((0, 3)), B32, "maxplus"),
    ),  # fmt: skip
    # layouts the kernels don't read directly: copied, or read in place with stride 0
    "transposed": (lambda: tropical.matmul(BIG.T, BIG), lambda: _ref(BIG.T, BIG)),
    "negative-strides": (lambda: tropical.matmul(BIG[::-1, ::-1], BIG.T[::-1]), lambda: _ref(BIG[::-1, ::-1], BIG.T[::-1])),
    "column-slices": (lambda: tropical.matmul(BIG[:, ::2], BIG[:4, 1::2]), lambda: _ref(BIG[:, ::2], BIG[:4, 1::2])),
    "broadcast-batch": (
        lambda: tropical.matmul(np.broadcast_to(BIG, (3, 6, 8)), _f64(3, 8, 2)), lambda: _ref(np.broadcast_to(BIG, (3, 6, 8)), _f64(3, 8, 2)),
    ),  # fmt: skip
    "broadcast-rows": (
        lambda: tropical.matmul_argmax(np.broadcast_to(BIG[0], (6, 8)), BIG.T), lambda: _ref(np.broadcast_to(BIG[0], (6, 8)), BIG.T, argmax=True),
    ),  # fmt: skip
    "zero-stride-column": (
        lambda: tropical.matmul(_f64(1, 50), np.broadcast_to(np.float64(2), (50, 1))), lambda: _ref(_f64(1, 50), np.broadcast_to(np.float64(2), (50, 1))),
    ),  # fmt: skip
    "batched-transposed": (lambda: tropical.matmul(_f64(2, 8, 6).transpose(0, 2, 1), BIG.T), lambda: _ref(_f64(2, 8, 6).transpose(0, 2, 1), BIG.T)),
    "list-operands": (lambda: tropical.matmul([[1.0, 2.0]], [[3.0], [4.0]]), lambda: _ref(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]]))),
    "read-only-inputs": (lambda: tropical.matmul(_read_only(_f64(2, 3)), _read_only(_f64(3, 2))), lambda: _ref(A23, B32)),
    "andor-true": (lambda: tropical.matmul_argmax(T, T.T, "andor"), lambda: _ref(T, T.T, "andor", True)),
}


@pytest.mark.parametrize("case", list(RESULTS.values()), ids=list(RESULTS))
def test_fault_gives_the_reference_result(case: tuple[Callable[[], Any], Callable[[], Any]]) -> None:
    got_call, want_call = case
    got, want = got_call(), want_call()
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_array_equal(g, w)


def test_the_suite_has_at_least_fifty_cases() -> None:
    assert len(ERRORS) + len(RESULTS) >= 50


# --- a fuzzer over shapes, layouts, dtypes and semirings ------------------------

# One dtype each, so the fuzzer compiles few kernels (each costs about a second on the emulator).
KINDS = [("maxplus", np.float32), ("minplus", np.int32), ("maxmul", np.float64), ("andor", np.bool_), ("counting", np.float32)]
LAYOUTS = ["c", "transposed", "sliced", "reversed"]
MAX_EXAMPLES = 250
fuzzed: list[str] = []


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, semiring: str) -> np.ndarray:
    if dtype == np.bool_:
        return rng.random(shape) < 0.4
    values = rng.integers(-4, 5, size=shape).astype(dtype)
    if semiring == "counting":
        return np.stack([values, rng.integers(0, 3, size=shape).astype(dtype)], axis=-1)
    return values


def _laid_out(x: np.ndarray, layout: str, counting: bool) -> np.ndarray:
    """``x`` (its values unchanged) as a view with another memory layout."""
    axes = (-3, -2) if counting else (-2, -1)
    if layout == "transposed":
        return np.ascontiguousarray(np.swapaxes(x, *axes)).swapaxes(*axes)
    if layout == "sliced":
        wide = np.repeat(x, 2, axis=axes[1])
        return wide[(..., slice(None, None, 2)) + ((slice(None),) if counting else ())]
    if layout == "reversed":
        return np.flip(np.flip(x, axes[0]).copy(), axes[0])
    return x


@settings(derandomize=True, max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(KINDS),
    sizes=st.tuples(*[st.integers(0, 6)] * 3),
    batch=st.sampled_from([None, 0, 1, 3]),
    broadcast=st.sampled_from(["none", "a", "b"]),
    layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)),
    argmax=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def _fuzz_matmul(
    kind: tuple[str, Any], sizes: tuple[int, int, int], batch: int | None, broadcast: str,
    layouts: tuple[str, str], argmax: bool, seed: int,
) -> None:  # fmt: skip
    semiring, dtype = kind
    m, n, k = sizes
    rng = np.random.default_rng(seed)
    lead_a = () if batch is None or broadcast == "a" else (batch,)
    lead_b = () if batch is None or broadcast == "b" else (batch,)
    counting = semiring == "counting"
    a = _laid_out(_values(rng, (*lead_a, m, k), dtype, semiring), layouts[0], counting)
    b = _laid_out(_values(rng, (*lead_b, k, n), dtype, semiring), layouts[1], counting)
    if argmax:
        (c, kstar), (want_c, want_k) = tropical.matmul_argmax(a, b, semiring), reference.matmul_argmax(a, b, semiring)
        np.testing.assert_array_equal(kstar, want_k)
    else:
        c, want_c = tropical.matmul(a, b, semiring), reference.matmul(a, b, semiring)
    assert c.shape == want_c.shape and c.dtype == want_c.dtype
    np.testing.assert_array_equal(c, want_c)
    fuzzed.append(f"{semiring} {m}x{n}x{k} batch {batch}")


def test_fuzz_matmul_against_the_reference(record_fuzz: Callable[[str, str], None]) -> None:
    fuzzed.clear()
    _fuzz_matmul()
    # Counted, so a fuzzer that silently ran nothing fails.
    record_fuzz("matmul", f"{len(fuzzed)} examples against aotc.reference")
    assert len(fuzzed) >= MAX_EXAMPLES * 9 // 10, len(fuzzed)
    assert any(s.endswith("batch 0") for s in fuzzed) and any("x0" in s for s in fuzzed)
