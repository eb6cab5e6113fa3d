"""The user API, aotc.tropical, on the CPU emulator against the NumPy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aotc import reference, tropical
from tropical_support import other  # noqa: F401 - `other` is a fixture
from conftest import installed_library
from kernel_harness import Case, operands

LIBRARY = installed_library()


# aotc.tropical's functions run on the emulated library (conftest).
pytestmark = pytest.mark.usefixtures("tropical_on_emulator")


def _kinds() -> list[tuple[str, str]]:
    import json

    kernels = json.loads((LIBRARY / "index.json").read_text())["kernels"].values()
    return sorted({(k["axes"]["semiring"], k["axes"]["dtype"]) for k in kernels})


def _has_gradient(semiring: str, dtype: str) -> bool:
    return semiring in ("maxplus", "minplus", "maxmul") and dtype in ("f32", "f64")


CASES = [Case(19, 23, 17), Case(4, 6, 9, batch=3), Case(5, 7, 8, batch=2, a_batched=False), Case(6, 5, 4, batch=2, b_batched=False)]


@pytest.mark.parametrize(("semiring", "dtype"), _kinds(), ids=[f"{s}-{d}" for s, d in _kinds()])
def test_api_reproduces_the_reference(semiring: str, dtype: str) -> None:
    rng = np.random.default_rng()  # fresh inputs every run; the seed is printed on failure
    for case in CASES:
        seed = int(rng.integers(2**31))
        a, b = operands(case, dtype, semiring, seed)
        np.testing.assert_array_equal(tropical.matmul(a, b, semiring), reference.matmul(a, b, semiring), err_msg=f"seed {seed}")
        c, k = tropical.matmul_argmax(a, b, semiring)
        want_c, want_k = reference.matmul_argmax(a, b, semiring)
        np.testing.assert_array_equal(c, want_c, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(k, want_k, err_msg=f"seed {seed}")
        assert k.dtype == np.int32
        if _has_gradient(semiring, dtype):
            grad_c = np.random.default_rng(seed).standard_normal(want_c.shape).astype(a.dtype)
            grad_a, grad_b = tropical.matmul_backward(grad_c, k, a, b, semiring)
            want_a, want_b = reference.matmul_backward(grad_c, want_k, a, b, semiring)
            tolerance = 1e-5 if dtype == "f32" else 1e-12
            np.testing.assert_allclose(grad_a, want_a, rtol=tolerance, atol=tolerance, err_msg=f"seed {seed}")
            np.testing.assert_allclose(grad_b, want_b, rtol=tolerance, atol=tolerance, err_msg=f"seed {seed}")
            assert grad_a.shape == a.shape and grad_b.shape == b.shape


def test_strided_and_transposed_inputs_are_handled() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((12, 20)).astype(np.float32)
    b = rng.standard_normal((20, 9)).astype(np.float32)
    want = reference.matmul(a, b, "maxplus")
    variants = {
        "fortran": (np.asfortranarray(a), b),
        "transposed view": (np.ascontiguousarray(a.T).T, b),
        "column slice": (np.repeat(a, 2, axis=1)[:, ::2], b),
        "row slice": (np.repeat(a, 2, axis=0)[::2], b),
        "negative stride": (a[::-1].copy()[::-1], b[::-1].copy()[::-1]),
        "padded rows": (np.pad(a, ((0, 0), (0, 3)))[:, :20], b),
    }
    for name, (x, y) in variants.items():
        np.testing.assert_array_equal(tropical.matmul(x, y), want, err_msg=name)


def test_broadcast_batch_views_are_read_in_place() -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 6))
    b = rng.standard_normal((3, 6, 4))
    stacked = np.broadcast_to(a, (3, 5, 6))  # batch stride 0
    np.testing.assert_array_equal(tropical.matmul(stacked, b, "minplus"), reference.matmul(a, b, "minplus"))


def test_out_is_filled_and_returned() -> None:
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = np.arange(8, dtype=np.float64).reshape(4, 2)
    out = np.full((3, 2), np.nan)
    assert tropical.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, reference.matmul(a, b, "maxplus"))
    c, k = np.empty((3, 2)), np.empty((3, 2), np.int32)
    assert tropical.matmul_argmax(a, b, out=c, k_out=k) == (c, k)


class FakeCudaArray:
    """Quacks like a CuPy array on cuda:0 (its memory is host memory)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.__cuda_array_interface__ = {
            "shape": array.shape,
            "typestr": array.dtype.str,
            "data": (array.ctypes.data, False),
            "strides": None,
            "version": 3,
        }


ERRORS = {
    "mixed-dtypes": (lambda: tropical.matmul(np.ones((2, 3), np.float32), np.ones((3, 2))), "b: dtype f64 does not match a's f32"),
    "no-kernel-for-dtype": (
        lambda: tropical.matmul(np.ones((2, 3), np.int16), np.ones((3, 2), np.int16)),
        "tropical.matmul: a: dtype i16, but its kernels for semiring=maxplus take f32, f64, i32 or i64 there",
    ),
    "bool-needs-andor": (lambda: tropical.matmul(np.ones((2, 3), bool), np.ones((3, 2), bool), "maxplus"), "dtype bool"),
    "unknown-semiring": (lambda: tropical.matmul(np.ones((2, 3)), np.ones((3, 2)), "maxplux"), "semiring: unknown 'maxplux' (known: maxplus"),
    "wrong-ndim": (lambda: tropical.matmul(np.ones(3), np.ones((3, 2))), "a: expected a 2-D or 3-D array ([batch], M, K), got shape (3,)"),
    "four-dims": (lambda: tropical.matmul(np.ones((1, 2, 2, 3)), np.ones((3, 2))), "a: expected a 2-D or 3-D array"),
    "inner-mismatch": (lambda: tropical.matmul(np.ones((2, 3)), np.ones((4, 2))), "b: shape (4, 2) gives K=4, but a gave K=3"),
    "batch-mismatch": (lambda: tropical.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2))), "b: shape (3, 3, 2) gives batch=3, but a gave batch=2"),
    "counting-needs-pairs": (lambda: tropical.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), "counting"), "a: expected a 3-D or 4-D array ([batch], M, K, then 2 values an element), got shape (2, 3)"),
    # A host array beside a device array is staged on a GPU; the emulator reaches no device array.
    "host-and-device-arrays": (lambda: tropical.matmul(np.ones((2, 3)), FakeCudaArray(np.ones((3, 2)))), "b: a cuda:0 array, but the emulator backend runs on host memory"),
    "device-array-on-host-backend": (
        lambda: tropical.matmul(FakeCudaArray(np.ones((2, 3))), FakeCudaArray(np.ones((3, 2)))),
        "a: a cuda:0 array, but the emulator backend runs on host memory",
    ),
    "out-shape": (lambda: tropical.matmul(np.ones((2, 3)), np.ones((3, 2)), out=np.empty((2, 3))), "out: expected shape (2, 2) and dtype f64"),
    "out-strided": (lambda: tropical.matmul(np.ones((2, 3)), np.ones((3, 2)), out=np.empty((2, 4))[:, ::2]), "out: must be a contiguous row-major array"),
    "not-an-array": (lambda: tropical.matmul("a", np.ones((3, 2))), "a: expected a NumPy array"),
    "no-gradient": (lambda: tropical.matmul_backward(np.ones((2, 2), bool), np.zeros((2, 2), np.int32), np.ones((2, 3), bool), np.ones((3, 2), bool), "andor"), "semiring: 'andor' has no gradient"),
    "bad-k": (lambda: tropical.matmul_backward(np.ones((2, 2)), np.zeros((2, 2)), np.ones((2, 3)), np.ones((3, 2))), "tropical.matmul_backward: k: dtype f64, but its kernels for semiring=maxplus, variant=single take i32 there"),
}


@pytest.mark.parametrize("call", list(ERRORS.values()), ids=list(ERRORS))
def test_errors_are_one_line_naming_the_argument(call: tuple[Any, str]) -> None:
    function, message = call
    with pytest.raises((ValueError, TypeError)) as info:
        function()
    text = str(info.value)
    assert message in text and "\n" not in text, text


# --- a second library beside the default one ------------------------------------

def test_a_second_library_is_used_through_its_own_handle(emulated_tropical: Any, other: Any) -> None:  # noqa: F811 - the fixture imported above
    assert tropical.over(other) is tropical.over(other) and tropical.over(other).library is other
    assert tropical.over(other).semirings() == ("maxmin", "maxplus", "minmul")

    rng = np.random.default_rng(3)
    a = rng.standard_normal((13, 21)).astype(np.float32)
    b = rng.standard_normal((21, 10)).astype(np.float32)
    maxmin = reference.semiring_from_ops("max", "min", "-inf", "+inf", name="maxmin")
    np.testing.assert_array_equal(tropical.over(other).matmul(a, b, "maxmin"), reference.matmul(a, b, maxmin))
    np.testing.assert_array_equal(tropical.over(other).matmul(a, b, "maxplus"), reference.matmul(a, b, "maxplus"))
    assert set(other.loaded) >= {"gemm_maxmin_f32_forward", "gemm_maxplus_f32_forward"}

    # The module's functions still use the default library, which has no max-min
    # but has batched kernels, which the other library lacks.
    assert tropical._library() is emulated_tropical  # noqa: SLF001
    with pytest.raises(ValueError, match=r"semiring: unknown 'maxmin' \(known: maxplus"):
        tropical.matmul(a, b, "maxmin")
    batched = rng.standard_normal((2, 13, 21)).astype(np.float32)
    np.testing.assert_array_equal(tropical.matmul(batched, b), reference.matmul(batched, b, "maxplus"))
    with pytest.raises(ValueError, match=r"^tropical\.matmul: a: expected a 2-D array \(M, K\), got shape \(2, 13, 21\)$"):
        tropical.over(other).matmul(batched, b)

    # set_library still swaps the default: then the module's functions reach max-min.
    tropical.set_library(other)
    np.testing.assert_array_equal(tropical.matmul(a, b, "maxmin"), reference.matmul(a, b, maxmin))


def _emulator_as_device(cache: Any) -> Any:
    """The emulator, declared a device-memory backend: host arrays are then
    staged through alloc and copies exactly as on a GPU, and the kernels still
    run, so the staging path is checked without one."""
    from aotc.runtime.emulator.backend import EmulatorBackend

    class StagedEmulator(EmulatorBackend):
        memory = "device"

    return StagedEmulator(cache=cache)


def test_host_arrays_are_staged_for_device_backends(emulated_tropical: Any) -> None:
    from aotc.runtime.library import Library

    staged = Library(LIBRARY, backend=_emulator_as_device(emulated_tropical.backend.cache))
    tropical.set_library(staged)
    rng = np.random.default_rng(9)
    a = np.pad(rng.standard_normal((9, 7)), ((0, 0), (0, 3)))[:, :7]  # padded rows: not contiguous
    b = np.broadcast_to(rng.standard_normal((7, 5)), (3, 7, 5))  # batch stride 0
    c, k = tropical.matmul_argmax(a, b, "maxplus")
    want_c, want_k = reference.matmul_argmax(a, b, "maxplus")
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(k, want_k)
    grad_a, grad_b = tropical.matmul_backward(np.ones_like(c), k, a, b, "maxplus")
    want_a, want_b = reference.matmul_backward(np.ones_like(c), want_k, a, b, "maxplus")
    np.testing.assert_allclose(grad_a, want_a)
    np.testing.assert_allclose(grad_b, want_b)


@pytest.mark.parametrize("semiring", ["maxplus", "maxmul"])
def test_a_k_outside_the_inner_dimension_sends_no_gradient(semiring: str) -> None:
    # As README says: an entry of k past 0 .. K-1 counts as -1 (no term), and
    # the kernels read nothing past a or b for it.
    rng = np.random.default_rng(21)
    a, b = rng.uniform(1, 2, (4, 3)), rng.uniform(1, 2, (3, 5))
    _, k = reference.matmul_argmax(a, b, semiring)
    grad_c = rng.standard_normal((4, 5))
    wild = k.copy()
    wild[0, :] = 3  # == K
    wild[1, :] = 99
    wild[2, :] = -7
    tame = k.copy()
    tame[:3, :] = -1
    grad_a, grad_b = tropical.matmul_backward(grad_c, wild, a, b, semiring)
    want_a, want_b = reference.matmul_backward(grad_c, tame, a, b, semiring)
    np.testing.assert_allclose(grad_a, want_a)
    np.testing.assert_allclose(grad_b, want_b)
    assert not grad_a[:3].any() and grad_a[3].any()
