"""matmul's call plans, the generated bindings' own (aotc/kernels/_entry.py):
a repeat call reuses its plan, and every check that depends on the objects
themselves still runs."""

from __future__ import annotations

import numpy as np
import pytest

from aotc import reference, tropical
from aotc.errors import ArgumentError
from aotc.kernels._plans import MAX_PLANS

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")


def _plans() -> dict:
    return tropical._api()._forward.plans.tagged("numpy")  # noqa: SLF001 - the cache under test: the forward binding's


def _expected(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return reference.matmul(a, b, reference.SEMIRINGS["maxplus"])


def test_a_repeat_call_reuses_its_plan_and_reads_the_new_operands() -> None:
    rng = np.random.default_rng()
    a, b = rng.standard_normal((9, 5), np.float32), rng.standard_normal((5, 7), np.float32)
    out = np.empty((9, 7), np.float32)
    before = len(_plans())
    tropical.matmul(a, b, out=out)
    assert len(_plans()) == before + 1
    for _ in range(3):  # new arrays, same shapes: the plan, with these arrays' pointers
        a2, b2, out2 = a + rng.standard_normal(a.shape, np.float32), b * 2, np.empty_like(out)
        assert tropical.matmul(a2, b2, out=out2) is out2
        np.testing.assert_allclose(out2, _expected(a2, b2), rtol=1e-6)
    c = tropical.matmul(a, b)
    c2 = tropical.matmul(a, b)
    assert c is not c2 and c.dtype == np.float32 and c.shape == (9, 7)
    np.testing.assert_allclose(c2, _expected(a, b), rtol=1e-6)
    assert len(_plans()) == before + 2  # out= and allocating: one plan each


def test_a_planned_call_still_refuses_a_read_only_out() -> None:
    a, b, out = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32), np.empty((4, 5), np.float32)
    tropical.matmul(a, b, out=out)
    out.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul: out: is read-only; pass a writable array$"):
        tropical.matmul(a, b, out=out)


@pytest.mark.parametrize("shared", ["a", "b"])
def test_a_planned_call_still_refuses_an_out_sharing_memory(shared: str) -> None:
    # The same shapes, strides and dtypes as the planned call: only the addresses differ.
    a, b, out = np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), np.empty((4, 4), np.float32)
    tropical.matmul(a, b, out=out)
    with pytest.raises(ArgumentError, match=rf"^tropical\.matmul: out: shares memory with {shared}; pass a separate array$"):
        tropical.matmul(a, b, out=a if shared == "a" else b)


def test_spans_that_meet_without_sharing_take_the_full_path() -> None:
    # a is the first half of each row of buffer; out, in the gap after a's
    # first row, lies inside a's span yet shares no element with it.
    rng = np.random.default_rng()
    buffer = rng.standard_normal((2, 8), np.float32)
    a, b = buffer[:, :4], rng.standard_normal((4, 2), np.float32)
    tropical.matmul(a, b, out=np.empty((2, 2), np.float32))
    out = buffer[0, 4:8].reshape(2, 2)
    expected = _expected(a.copy(), b)
    assert tropical.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_a_copied_operand_leaves_a_plan_that_copies_it_again(full_path: list[str]) -> None:
    rng = np.random.default_rng(5)
    b = rng.standard_normal((6, 3), np.float32)
    for _ in range(3):  # column-major: copied to row-major by the full path, then by its plan
        a = np.asfortranarray(rng.standard_normal((5, 6), np.float32))
        np.testing.assert_allclose(tropical.matmul(a, b), _expected(a, b), rtol=1e-6)
    assert full_path == ["gemm_forward"]


def test_the_plans_are_capped() -> None:
    b = np.ones((2, 2), np.float32)
    for rows in range(1, MAX_PLANS + 3):
        tropical.matmul(np.ones((rows, 2), np.float32), b)
    assert 0 < len(_plans()) <= MAX_PLANS


def test_an_unhashable_semiring_after_a_plan_gets_the_one_line_error() -> None:
    # The planned entry keys on the semiring: a list can't be a key, and the
    # full path, not the dict, must say what is wrong.
    a = np.ones((3, 3), np.float32)
    tropical.matmul(a, a)
    with pytest.raises(TypeError, match=r"^tropical\.matmul: semiring: expected a semiring name \(str\)"):
        tropical.matmul(a, a, ["maxplus"])


# --- matmul_argmax ---------------------------------------------------------------


def _argmax_plans() -> dict:
    return tropical._api()._argmax.plans.tagged("numpy")  # noqa: SLF001 - the cache under test: the argmax binding's


def test_a_repeat_argmax_reuses_its_plan_allocating_and_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    shape_a, shape_b = (2, 9, 5), (5, 7)  # batched, b broadcast
    before = len(_argmax_plans())
    c0, k0 = tropical.matmul_argmax(rng.standard_normal(shape_a, np.float32), rng.standard_normal(shape_b, np.float32))
    out, k_out = np.empty_like(c0), np.empty_like(k0)
    tropical.matmul_argmax(rng.standard_normal(shape_a, np.float32), rng.standard_normal(shape_b, np.float32), out=out, k_out=k_out)
    assert len(_argmax_plans()) == before + 2
    # From here on a call that left its plan for the full path would fail.
    monkeypatch.setattr("aotc.kernels._binding.launch", lambda *args: pytest.fail("took the full path"))
    for _ in range(3):
        a, b = rng.standard_normal(shape_a, np.float32), rng.standard_normal(shape_b, np.float32)
        want_c, want_k = reference.matmul_argmax(a, b, "maxplus")
        c, k = tropical.matmul_argmax(a, b)
        np.testing.assert_array_equal(c, want_c)
        np.testing.assert_array_equal(k, want_k)
        c, k = tropical.matmul_argmax(a, b, out=out, k_out=k_out)
        assert c is out and k is k_out
        np.testing.assert_array_equal(out, want_c)
        np.testing.assert_array_equal(k_out, want_k)


def test_a_planned_argmax_still_refuses_a_read_only_or_overlapping_result() -> None:
    a, b = np.ones((4, 4), np.float32), np.ones((4, 4), np.float32)
    out, k_out = np.empty((4, 4), np.float32), np.empty((4, 4), np.int32)
    tropical.matmul_argmax(a, b, out=out, k_out=k_out)
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul_argmax: k_out: shares memory with out; pass a separate array$"):
        tropical.matmul_argmax(a, b, out=out, k_out=out.view(np.int32))
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul_argmax: out: shares memory with a; pass a separate array$"):
        tropical.matmul_argmax(a, b, out=a, k_out=k_out)
    k_out.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul_argmax: k_out: is read-only; pass a writable array$"):
        tropical.matmul_argmax(a, b, out=out, k_out=k_out)


def test_one_result_given_leaves_a_plan_of_its_own() -> None:
    # The key holds which results were given: out= alone is a plan beside both and neither.
    a, b = np.ones((3, 5), np.float32), np.ones((5, 2), np.float32)
    before = len(_argmax_plans())
    for _ in range(2):
        c, k = tropical.matmul_argmax(a, b, out=np.empty((3, 2), np.float32))
        np.testing.assert_array_equal(c, reference.matmul(a, b, "maxplus"))
        assert k.dtype == np.int32 and k.shape == (3, 2)
    assert len(_argmax_plans()) == before + 1


def test_a_keyboard_interrupt_after_a_planned_launch_leaves_no_kernel_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C that lands between a plan's launch and its wait (a signal handler's
    exception): the plan waits on the way out, so no kernel stays queued to write
    the result the unwinding frees; the next call is right."""
    import sys

    from aotc.runtime.emulator import streams

    monkeypatch.setenv("AOTC_EMULATOR_STREAMS", "async")  # the launch is queued, as a GPU's
    a, b = np.full((6, 4), 2.0, np.float32), np.full((4, 5), 3.0, np.float32)
    tropical.matmul(a, b)  # the plan

    def interrupt(frame: object, event: str, arg: object) -> object:
        code = frame.f_code  # type: ignore[attr-defined]
        if not code.co_filename.startswith("<aotc plan"):
            return None
        if event == "line" and _line(frame).startswith("_aotc_wait("):  # launched, not yet waited for
            sys.settrace(None)
            frame.f_trace = None  # type: ignore[attr-defined]
            raise KeyboardInterrupt
        return interrupt

    sys.settrace(interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            tropical.matmul(a, b)
    finally:
        sys.settrace(None)
    assert not any(s.queue for s in streams._legacy.values()), "a kernel is still queued"  # noqa: SLF001 - the emulator's queues
    np.testing.assert_array_equal(tropical.matmul(a, b), np.full((6, 5), 5.0, np.float32))


def _line(frame: object) -> str:
    """The source line ``frame`` is at (the generated sources are in linecache)."""
    import linecache

    return linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()  # type: ignore[attr-defined]
