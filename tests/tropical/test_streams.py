"""One call's work on one stream, after its producers: shown on the emulator.

The emulator's streams run later, in order, and under the ``lazy`` schedule
a wait runs only the work ordered before it: a missing wait between two
streams gives a wrong answer on every run, as it may on a GPU. Fresh device
memory is poisoned, so work that reads it before its fill shows too. Each test here
is one of the stream faults of issue 20, run where it would show.
"""

from __future__ import annotations

import gc
from typing import Any

import emulated_cupy
import numpy as np
import pytest
from arrays.arrays_support import DLPackOnly
from conftest import installed_library

from aotc import reference, tropical
from aotc.arrays.kinds import as_operand
from aotc.arrays.placement import stream_handle
from aotc.errors import BackendError, CaptureError
from aotc.runtime import backends
from aotc.runtime.backends import BackendRegistry
from aotc.runtime.emulator import arrays, devices
from aotc.runtime.emulator.backend import EmulatorBackend
from aotc.runtime.library import Library


@pytest.fixture(autouse=True, params=["lazy", "in-order", "seed:7"])
def schedule(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Queued streams under each schedule: correct ordering is right under all of
    them; ``lazy`` (run only what a wait needs) is the one that shows every missing wait."""
    monkeypatch.delenv("AOTC_EMULATOR_STREAMS", raising=False)
    monkeypatch.setenv("AOTC_EMULATOR_SCHEDULE", request.param)
    # Earlier tests' arrays are freed now, not mid-test: a free waits for the whole
    # device (cuMemFree does), which would run this test's unordered work early.
    gc.collect()
    arrays.backend_for(0).synchronize()


@pytest.fixture
def api(emulated_tropical: Any) -> Any:
    return tropical.over(emulated_tropical)


@pytest.fixture
def cupy(monkeypatch: pytest.MonkeyPatch) -> Any:
    return emulated_cupy.install(monkeypatch)


def _operands(seed: int = 0, m: int = 9, k: int = 7, n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


# --- fault 2: allocations, fills and zeroed gradients on the call's stream ------------


def test_backward_gradients_are_zeroed_on_the_calls_stream(api: Any, cupy: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # No stream exported: only the call's own ordering can put the zeroing before the kernels.
    monkeypatch.setenv("CUPY_CUDA_ARRAY_INTERFACE_SYNC", "0")
    a_host, b_host = _operands(1)
    a, b = cupy.asarray(a_host), cupy.asarray(b_host)
    c, k = api.matmul_argmax(a, b)
    side = cupy.cuda.Stream(non_blocking=True)
    grad_c = cupy.asarray(np.ones(c.shape, np.float32))
    want_a, want_b = reference.matmul_backward(np.ones(c.shape, np.float32), k.get(), a_host, b_host, "maxplus")
    arrays.backend_for(0).stream_synchronize(0)  # the operands are ready; only the call's own work is in question
    grad_a, grad_b = api.matmul_backward(grad_c, k, a, b, stream=side.ptr)
    # Read on the call's stream only: nothing else may run the null stream's work first.
    np.testing.assert_array_equal(grad_a.get(side), want_a)
    np.testing.assert_array_equal(grad_b.get(side), want_b)
    assert grad_a.allocated_on == side.ptr and grad_b.allocated_on == side.ptr


def test_allocated_results_belong_to_the_calls_stream(api: Any, cupy: Any) -> None:
    a_host, b_host = _operands(2)
    a, b = cupy.asarray(a_host), cupy.asarray(b_host)
    arrays.backend_for(0).stream_synchronize(0)
    side = cupy.cuda.Stream(non_blocking=True)
    c, k = api.matmul_argmax(a, b, stream=side.ptr)
    assert (c.allocated_on, k.allocated_on) == (side.ptr, side.ptr)
    want_c, want_k = reference.matmul_argmax(a_host, b_host, "maxplus")
    np.testing.assert_array_equal(c.get(side), want_c)
    np.testing.assert_array_equal(k.get(side), want_k)


def test_the_k0_fill_runs_on_the_calls_stream(api: Any, cupy: Any) -> None:
    a, b = cupy.asarray(np.ones((3, 0), np.float32)), cupy.asarray(np.ones((0, 2), np.float32))
    side = cupy.cuda.Stream(non_blocking=True)
    c, k = api.matmul_argmax(a, b, stream=side.ptr)
    # Read on the call's stream: the fill must be queued there, not on the null stream.
    np.testing.assert_array_equal(c.get(side), np.full((3, 2), -np.inf, np.float32))
    np.testing.assert_array_equal(k.get(side), np.full((3, 2), -1, np.int32))


# --- fault 3: the producer's stream is waited for --------------------------------------


def test_the_cuda_array_interface_stream_is_waited_for(api: Any) -> None:
    a_host, b_host = _operands(3)
    producer, consumer = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    a, b = arrays.to_device(a_host, stream=producer), arrays.to_device(b_host, stream=producer)  # still queued
    out = arrays.zeros((9, 5), np.float32, stream=consumer)
    assert a.__cuda_array_interface__["stream"] == producer.handle
    api.matmul(a, b, out=out, stream=consumer.handle)
    np.testing.assert_array_equal(out.get(consumer), reference.matmul(a_host, b_host, "maxplus"))


def test_a_dlpack_producer_is_asked_with_the_calls_stream(api: Any) -> None:
    a_host, b_host = _operands(4)
    producer, consumer = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    a = DLPackOnly(arrays.to_device(a_host, stream=producer))
    b = DLPackOnly(arrays.to_device(b_host, stream=producer))
    out = arrays.zeros((9, 5), np.float32, stream=consumer)
    api.matmul(a, b, out=out, stream=consumer.handle)
    np.testing.assert_array_equal(out.get(consumer), reference.matmul(a_host, b_host, "maxplus"))


# --- fault 4: host operands staged on the call's stream ------------------------------


class StagedEmulator(EmulatorBackend):
    """The emulator as a device-memory backend: host arrays are staged exactly as on a GPU."""

    memory = "device"


@pytest.fixture
def staged(emulated_tropical: Any) -> Any:
    return tropical.over(Library(installed_library(), backend=StagedEmulator(cache=emulated_tropical.backend.cache)))


def test_host_operands_are_staged_on_a_non_blocking_calls_stream(staged: Any) -> None:
    a, b = _operands(5)
    side = arrays.Stream(non_blocking=True)
    c, k = staged.matmul_argmax(a, b, stream=side.handle)
    want_c, want_k = reference.matmul_argmax(a, b, "maxplus")
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(k, want_k)
    grad_a, grad_b = staged.matmul_backward(np.ones_like(c), k, a, b, stream=side.handle)
    want_a, want_b = reference.matmul_backward(np.ones_like(c), want_k, a, b, "maxplus")
    np.testing.assert_array_equal(grad_a, want_a)
    np.testing.assert_array_equal(grad_b, want_b)


# --- fault 5: CuPy arrays on another device than the current one ---------------------


@pytest.fixture
def two_devices(monkeypatch: pytest.MonkeyPatch, emulated_tropical: Any) -> Any:
    monkeypatch.setenv("AOTC_EMULATOR_DEVICES", "2")
    monkeypatch.setenv("AOTC_EMULATOR_ARCHS", "80,80")
    cache = emulated_tropical.backend.cache
    factory = {"emulator": lambda ordinal: EmulatorBackend(cache, ordinal=ordinal)}
    monkeypatch.setattr(backends, "registry", BackendRegistry(factory, automatic=()))
    return tropical.over(Library(installed_library(), backend="emulator"))


def test_cupy_arrays_launch_on_their_own_devices_stream(two_devices: Any, cupy: Any) -> None:
    a_host, b_host = _operands(6)
    with cupy.cuda.Device(1):
        a, b = cupy.asarray(a_host), cupy.asarray(b_host)
        arrays.backend_for(1).stream_synchronize(0)
    with cupy.cuda.Device(0), cupy.cuda.Stream(non_blocking=True):  # device 0's current stream is a side stream
        c = two_devices.matmul(a, b)
    assert c.device.id == 1
    with cupy.cuda.Device(1):
        np.testing.assert_array_equal(c.get(), reference.matmul(a_host, b_host, "maxplus"))


def _refuse_device_switches(cupy: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cupy.cuda.Device`` calls cudaSetDevice, which puts the primary context in
    place of one that other code made current (cuCtxCreate's, pycuda's): seen on
    an H100 with CuPy 14, where a call on host arrays left the caller's context
    replaced. Asking CuPy for a stream must not switch devices."""

    def refuse(device: Any) -> None:
        raise AssertionError(f"cupy.cuda.Device({device.id}) was made current")

    monkeypatch.setattr(cupy.cuda.Device, "__enter__", refuse)


def test_staging_host_operands_with_cupy_loaded_switches_no_device(
    staged: Any, cupy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _operands(9)
    _refuse_device_switches(cupy, monkeypatch)
    np.testing.assert_array_equal(staged.matmul(a, b), reference.matmul(a, b, "maxplus"))


def test_a_cupy_arrays_stream_is_asked_without_making_its_device_current(
    two_devices: Any, cupy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cupy.cuda.Device(1):
        a = cupy.asarray(_operands(10)[0])
        side = cupy.cuda.Stream(non_blocking=True)
    with side:  # device 1's current stream, while device 0 is current
        _refuse_device_switches(cupy, monkeypatch)
        assert stream_handle(None, as_operand(a, "a")) == side.ptr


# --- fault 7: capture is checked on every stream the call touches -----------------------


def test_host_operands_while_a_blocking_stream_is_captured_raise_capture_error(staged: Any) -> None:
    a, b = _operands(7)
    staged.preload("maxplus", "f32")
    captured = arrays.Stream(non_blocking=False)
    with devices.capture(captured.handle), pytest.raises(CaptureError) as info:
        staged.matmul(a, b)  # the legacy stream: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
    message = str(info.value)
    assert message.startswith("a: staging a host array: ") and "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT" in message, message
    assert "\n" not in message
    assert not devices.invalidated(captured.handle)


def test_host_operands_inside_a_frameworks_global_capture_raise_capture_error(staged: Any, cupy: Any) -> None:
    a, b = _operands(8)
    staged.preload("maxplus", "f32")
    side = cupy.cuda.Stream(non_blocking=True)
    with side, devices.capture(side.ptr), pytest.raises(CaptureError, match=rf"^a: staging a host array while stream {side.ptr} is being captured"):
        staged.matmul(a, b)
    assert not devices.invalidated(side.ptr)  # refused before anything the capture forbids


def test_a_forbidden_call_during_a_global_capture_invalidates_it_on_the_emulator() -> None:
    captured = arrays.Stream(non_blocking=True)
    with devices.capture(captured.handle), pytest.raises(BackendError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
        arrays.backend_for(0).alloc(16)
    assert devices.invalidated(captured.handle)
