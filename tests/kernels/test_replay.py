"""aotc/kernels/_replay.py: every route a call takes gets a plan made from its
full call's decision, and a repeat call takes it.

Each test counts the launches through the full path (``_launch.launch``) with
the ``full_path`` fixture's hook: the first call of a kind decides and
launches there, and leaves the plan; the repeats launch from the plan alone,
and their results are checked against the reference.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from arrays.arrays_support import DLPackOnly
from tropical import emulated_cupy

from aotc import reference, tropical
from aotc.errors import AotcError
from aotc.runtime.emulator import arrays

torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")


@pytest.fixture
def api(emulated_tropical: Any) -> Any:
    """The emulated library's tropical API, its layouts' plans dropped: each test counts its own."""
    found = tropical.over(emulated_tropical)
    for layout in found.family.layouts.values():
        layout.plans.clear()
    return found


def _operands(seed: int, m: int = 6, k: int = 5, n: int = 4, dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


def _product(a: Any, b: Any) -> np.ndarray:
    return reference.matmul(np.asarray(a), np.asarray(b), reference.SEMIRINGS["maxplus"])


# --- NumPy --------------------------------------------------------------------------


def test_numpy_allocating_and_in_place(api: Any, full_path: list[str]) -> None:
    out = np.empty((6, 4), np.float32)
    for seed in range(3):
        a, b = _operands(seed)
        np.testing.assert_array_equal(api.matmul(a, b), _product(a, b))
        assert api.matmul(a, b, out=out) is out
        np.testing.assert_array_equal(out, _product(a, b))
    assert full_path == ["gemm_forward", "gemm_forward"]  # one plan allocating, one writing out=


def test_an_empty_call_is_planned_too_and_launches_nothing(api: Any, full_path: list[str]) -> None:
    """No rows: no launch, the full path's or the plan's; the result is made all the same."""
    for _ in range(3):
        c, k = api.matmul_argmax(np.ones((0, 5), np.float32), np.ones((5, 3), np.float32))
        assert c.shape == k.shape == (0, 3) and c.dtype == np.float32 and k.dtype == np.int32
    assert full_path == ["gemm_argmax"]


# --- the frames of a repeat call -----------------------------------------------------


def _generated_frames(call: Any) -> list[str]:
    """What aotc's generated code ``call()`` runs, in order: each frame's kind
    ("entry", "guard", "plan": the word its linecache name opens with)."""
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        name = frame.f_code.co_filename
        if event == "call" and name.startswith("<aotc "):
            seen.append(name.split()[1])

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.parametrize("route", ["numpy out=", "numpy", "tensors", "tensors out=", "argmax"])
def test_a_repeat_module_call_runs_the_guard_and_the_plan_alone(api: Any, tropical_on_emulator: None, route: str) -> None:
    """``tropical.matmul`` asks the forward entry's guard of its first array's
    type itself (the entry's ``guards``): a repeat call runs that guard and
    the plan, no entry frame between them; a refusal still names the function."""
    a, b = _operands(0)
    if route.startswith("tensors"):
        a, b = torch.from_numpy(a), torch.from_numpy(b)
    out = None if not route.endswith("out=") else (np.empty((6, 4), np.float32) if route.startswith("numpy") else torch.empty(6, 4))
    call = (lambda: tropical.matmul_argmax(a, b)) if route == "argmax" else (lambda: tropical.matmul(a, b, out=out))
    call()
    assert _generated_frames(call) == ["guard", "plan"]
    got = call()[0] if route == "argmax" else call()
    np.testing.assert_array_equal(np.asarray(got), _product(a, b))
    bad = b[:, :3].T if route.startswith("tensors") else b.T  # K of 4 or 3 against a's 5
    with pytest.raises(AotcError, match=r"^tropical\.matmul(_argmax)?: b: ") as refused:
        tropical.matmul_argmax(a, bad) if route == "argmax" else tropical.matmul(a, bad, out=out)
    assert "\n" not in str(refused.value)


# --- a stream named ----------------------------------------------------------------


def test_plans_are_kept_per_stream_named(api: Any, full_path: list[str]) -> None:
    one, two = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    for seed in range(3):
        a, b = _operands(seed)
        for stream in (0, one, two.handle):  # an int handle, a stream object, another handle
            np.testing.assert_array_equal(api.matmul(a, b, stream=stream), _product(a, b))
    assert full_path == ["gemm_forward"] * 3


def test_tensors_on_a_stream_named(api: Any, full_path: list[str]) -> None:
    side = arrays.Stream(non_blocking=True)
    for seed in range(3):
        a, b = (torch.from_numpy(x) for x in _operands(seed))
        np.testing.assert_array_equal(api.matmul(a, b, stream=side).numpy(), _product(a, b))
    assert full_path == ["gemm_forward"]


# --- PyTorch ------------------------------------------------------------------------


def test_tensors_plain_and_out(api: Any, full_path: list[str]) -> None:
    out = torch.empty(6, 4)
    for seed in range(3):
        a, b = (torch.from_numpy(x) for x in _operands(seed))
        np.testing.assert_array_equal(api.matmul(a, b).numpy(), _product(a, b))
        api.matmul(a, b, out=out)
        np.testing.assert_array_equal(out.numpy(), _product(a, b))
    assert full_path == ["gemm_forward", "gemm_forward"]


@pytest.mark.parametrize("step", ["sum", "ones", "transposed"])
def test_a_training_step_and_its_gradients(api: Any, full_path: list[str], step: str) -> None:
    """The recorded forward (through argmax) and both gradient kernels, for the
    gradient ``.sum().backward()`` hands down (expanded: strides (0, 0), copied
    for the kernels each step), a contiguous one, and a transposed one."""
    for seed in range(3):
        a, b = (torch.from_numpy(x).double().requires_grad_() for x in _operands(seed))
        c = api.matmul(a, b)
        if step == "sum":
            c.sum().backward()
            grad = np.ones((6, 4))
        else:
            g = torch.ones(6, 4, dtype=torch.float64) if step == "ones" else torch.arange(24.0, dtype=torch.float64).reshape(4, 6).T
            c.backward(g)
            grad = g.numpy()
        _, k = reference.matmul_argmax(a.detach().numpy(), b.detach().numpy(), "maxplus")
        want_a, want_b = reference.matmul_backward(grad, k, a.detach().numpy(), b.detach().numpy(), "maxplus")
        np.testing.assert_array_equal(a.grad.numpy(), want_a)
        np.testing.assert_array_equal(b.grad.numpy(), want_b)
    assert full_path == ["gemm_argmax", "gemm_backward_a", "gemm_backward_b"]


def test_matmul_backward_called_directly(api: Any, full_path: list[str]) -> None:
    for seed in range(3):
        a, b = (torch.from_numpy(x) for x in _operands(seed))
        _, k = api.matmul_argmax(a, b)
        grad_c = torch.ones(1, 1).expand(6, 4)  # strides (0, 0): copied for the kernels, each call
        grad_a, grad_b = api.matmul_backward(grad_c, k, a, b)
        want_a, want_b = reference.matmul_backward(np.ones((6, 4), np.float32), k.numpy(), a.numpy(), b.numpy(), "maxplus")
        np.testing.assert_array_equal(grad_a.numpy(), want_a)
        np.testing.assert_array_equal(grad_b.numpy(), want_b)
    assert full_path == ["gemm_argmax", "gemm_backward_a", "gemm_backward_b"]


def test_a_repeat_backward_on_numpy_arrays_imports_only_its_route(api: Any, tropical_on_emulator: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """An import statement inside a function runs the import machinery at every
    call (a ``from m import f`` of a loaded module: about 7,800 instructions),
    so a repeat call's path holds one only where the module at the top would
    load with every first call: ``Layout.gradients``' ``from aotc.kernels
    import _gradients`` (the cheapest form, a package's submodule).
    ``matmul_backward`` on NumPy arrays ran seven."""
    import builtins

    a, b = _operands(0)
    _, k = tropical.matmul_argmax(a, b)
    grad_c = np.ones((6, 4), np.float32)
    tropical.matmul_backward(grad_c, k, a, b)
    imported: list[str] = []
    real = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *rest, **options: imported.append(name) or real(name, *rest, **options))
    grad_a, grad_b = tropical.matmul_backward(grad_c, k, a, b)
    monkeypatch.undo()
    assert imported == ["aotc.kernels"]  # Layout.gradients' from aotc.kernels import _gradients
    want_a, want_b = reference.matmul_backward(grad_c, k, a, b, "maxplus")
    np.testing.assert_array_equal(grad_a, want_a)
    np.testing.assert_array_equal(grad_b, want_b)


# --- CUDA arrays (CuPy) and DLPack -----------------------------------------------------


def test_cupy_arrays_on_the_current_stream_and_one_named(api: Any, full_path: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cupy = emulated_cupy.install(monkeypatch)
    side = cupy.cuda.Stream(non_blocking=True)
    for seed in range(3):
        a_host, b_host = _operands(seed)
        a, b = cupy.asarray(a_host), cupy.asarray(b_host)
        np.testing.assert_array_equal(api.matmul(a, b).get(), _product(a_host, b_host))
        c = api.matmul(a, b, stream=side.ptr)
        assert c.allocated_on == side.ptr  # the plan allocates on the stream named, as the full path does
        np.testing.assert_array_equal(c.get(side), _product(a_host, b_host))
    assert full_path == ["gemm_forward", "gemm_forward"]


def test_dlpack_arrays_on_a_device_and_on_the_cpu(api: Any, full_path: list[str]) -> None:
    consumer = arrays.Stream(non_blocking=True)
    out = arrays.zeros((6, 4), np.float32, stream=consumer)
    for seed in range(3):
        a_host, b_host = _operands(seed)
        a, b = DLPackOnly(arrays.to_device(a_host)), DLPackOnly(arrays.to_device(b_host))
        api.matmul(a, b, out=out, stream=consumer.handle)
        np.testing.assert_array_equal(out.get(consumer), _product(a_host, b_host))
        np.testing.assert_array_equal(api.matmul(DLPackOnly(a_host), DLPackOnly(b_host)), _product(a_host, b_host))
    assert full_path == ["gemm_forward", "gemm_forward"]


# --- JAX ----------------------------------------------------------------------------------


def test_jax_arrays_eagerly_and_under_jit(api: Any, full_path: list[str]) -> None:
    jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
    product = jax.jit(lambda a, b: api.matmul(a, b))
    for seed in range(3):
        a, b = (jax.numpy.asarray(x) for x in _operands(seed))
        np.testing.assert_array_equal(np.asarray(api.matmul(a, b)), _product(a, b))
        np.testing.assert_array_equal(np.asarray(product(a, b)), _product(a, b))
    assert full_path == ["gemm_forward"]  # XLA's host buffers alike: one plan, eager and jitted
