"""The emulator's streams (``aotc.runtime.emulator.streams``) and device arrays
(``arrays``): work queued now runs later, in stream order, with the legacy
stream's rules, events, a schedule, and faults reported at the next wait."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

from aotc import tropical
from aotc.errors import BackendError, ConfigurationError
from aotc.runtime.emulator import arrays, streams


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AOTC_EMULATOR_STREAMS", raising=False)
    monkeypatch.setenv("AOTC_EMULATOR_SCHEDULE", "lazy")
    gc.collect()  # earlier tests' arrays freed now: a free waits for the whole device, as cuMemFree does
    arrays.backend_for(0).synchronize()


def _filled(value: float, stream: Any) -> arrays.DeviceArray:
    array = arrays.empty((4,), np.float32)  # poisoned: NaN until written
    array.set(..., value, stream)
    return array


def test_memsets_and_copies_return_before_they_run() -> None:
    side = arrays.Stream(non_blocking=True)
    zeroed = arrays.zeros((3,), np.float32, stream=side)
    copied = arrays.to_device(np.arange(3, dtype=np.float32), stream=side)
    assert np.isnan(zeroed.host_view()).all() and np.isnan(copied.host_view()).all()
    side.synchronize()
    np.testing.assert_array_equal(zeroed.host_view(), [0, 0, 0])
    np.testing.assert_array_equal(copied.host_view(), [0, 1, 2])


def test_a_launch_returns_before_the_kernel_runs(emulated_tropical: Any) -> None:
    side = arrays.Stream(non_blocking=True)
    a = arrays.to_device(np.ones((2, 3), np.float32), stream=side)
    b = arrays.to_device(np.ones((3, 2), np.float32), stream=side)
    out = arrays.empty((2, 2), np.float32, stream=side)
    tropical.over(emulated_tropical).matmul(a, b, out=out, stream=side.handle)
    assert np.isnan(out.host_view()).all()
    np.testing.assert_array_equal(out.get(), np.full((2, 2), 2.0))


def test_the_legacy_stream_and_a_blocking_stream_wait_for_each_other() -> None:
    blocking = arrays.Stream(non_blocking=False)
    array = _filled(1.0, 0)
    array.set(..., 2.0, blocking)  # after the legacy stream's fill
    blocking.synchronize()
    np.testing.assert_array_equal(array.host_view(), np.full(4, 2.0))
    array.set(..., 3.0, blocking)
    array.set(..., 4.0, 0)  # after the blocking stream's fill
    arrays.backend_for(0).stream_synchronize(0)
    np.testing.assert_array_equal(array.host_view(), np.full(4, 4.0))


def test_a_non_blocking_stream_is_not_ordered_with_the_legacy_stream() -> None:
    side = arrays.Stream(non_blocking=True)
    array = _filled(1.0, 0)
    array.set(..., 2.0, side)
    side.synchronize()  # runs its own fill only: the legacy stream's is still queued
    np.testing.assert_array_equal(array.host_view(), np.full(4, 2.0))
    arrays.backend_for(0).synchronize()
    np.testing.assert_array_equal(array.host_view(), np.full(4, 1.0))  # landed last: a race on a GPU too


def test_an_event_orders_one_stream_after_another() -> None:
    backend = arrays.backend_for(0)
    producer, consumer = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    array = _filled(5.0, producer)
    event = backend.event_create()
    backend.event_record(event, producer.handle)
    backend.stream_wait_event(consumer.handle, event)
    host = np.empty(4, np.float32)
    backend.copy_to_host_async(memoryview(host.view("uint8")), array.pointer, consumer.handle)
    consumer.synchronize()
    np.testing.assert_array_equal(host, np.full(4, 5.0))
    later = _filled(6.0, producer)
    backend.event_record(event, producer.handle)
    backend.event_synchronize(event)
    np.testing.assert_array_equal(later.host_view(), np.full(4, 6.0))
    backend.event_destroy(event)


def test_without_the_event_the_consumer_reads_before_the_producer_wrote() -> None:
    backend = arrays.backend_for(0)
    producer, consumer = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    array = _filled(5.0, producer)
    host = np.zeros(4, np.float32)
    backend.copy_to_host_async(memoryview(host.view("uint8")), array.pointer, consumer.handle)
    consumer.synchronize()
    assert np.isnan(host).all()


def test_dlpack_export_orders_the_consumers_stream(emulated_tropical: Any) -> None:
    producer, consumer = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    array = _filled(7.0, producer)
    capsule = array.__dlpack__(stream=consumer.handle)
    host = np.zeros(4, np.float32)
    arrays.backend_for(0).copy_to_host_async(memoryview(host.view("uint8")), array.pointer, consumer.handle)
    consumer.synchronize()
    np.testing.assert_array_equal(host, np.full(4, 7.0))
    assert array.__dlpack_device__() == (2, 0) and capsule is not None
    with pytest.raises(ValueError, match="__dlpack__: stream must be None, -1 or a stream handle other than 0"):
        array.__dlpack__(stream=0)


def test_sync_mode_runs_each_operation_when_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_STREAMS", "sync")
    array = _filled(3.0, arrays.Stream(non_blocking=True))
    np.testing.assert_array_equal(array.host_view(), np.full(4, 3.0))


def _interleaving(seed: int, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(streams, "_schedule", {})  # a fresh generator, as in a new process
    monkeypatch.setenv("AOTC_EMULATOR_SCHEDULE", f"seed:{seed}")
    order: list[str] = []
    one, two = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    for i in range(4):
        for name, stream in (("a", one), ("b", two)):
            streams.enqueue(streams.stream(stream.handle, 0), lambda n=f"{name}{i}": order.append(n), "mark")
    arrays.backend_for(0).synchronize()
    assert [o for o in order if o[0] == "a"] == ["a0", "a1", "a2", "a3"]  # each stream in its order
    return " ".join(order)


def test_a_seeded_schedule_is_the_same_on_every_run_and_differs_between_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _interleaving(3, monkeypatch) == _interleaving(3, monkeypatch)
    assert len({_interleaving(seed, monkeypatch) for seed in range(8)}) > 1


def test_a_stream_of_another_device_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_EMULATOR_DEVICES", "2")
    other = arrays.Stream(device=1, non_blocking=True)
    with pytest.raises(BackendError, match=rf"^emulator: stream {other.handle:#x} belongs to device 1, used on device 0 \(CUDA_ERROR_INVALID_HANDLE\)$"):
        arrays.backend_for(0).stream_synchronize(other.handle)
    with pytest.raises(BackendError, match=r"^emulator: stream 12345 on device 0: no such stream"):
        arrays.backend_for(0).stream_synchronize(12345)


@pytest.mark.parametrize(("variable", "value"), [("AOTC_EMULATOR_SCHEDULE", "reverse"), ("AOTC_EMULATOR_SCHEDULE", "seed:x"), ("AOTC_EMULATOR_STREAMS", "queued")])
def test_bad_settings_are_one_line(monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=rf"^{variable}='{value}': expected "):
        _filled(1.0, 0).get()


def test_a_fault_of_queued_work_is_reported_at_the_next_wait(emulated_tropical: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    side = arrays.Stream(non_blocking=True)
    a, b = arrays.to_device(np.ones((2, 3), np.float32), stream=side), arrays.to_device(np.ones((3, 2), np.float32), stream=side)
    out = arrays.empty((2, 2), np.float32, stream=side)
    tropical.over(emulated_tropical).matmul(a, b, out=out, stream=side.handle)  # queued: not run yet
    monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", "sideways")  # read when the kernel runs
    with pytest.raises(BackendError, match=r"^gemm_maxplus_f32_forward\(grid=.*\) failed: launching gemm_maxplus_f32_forward: AOTC_EMULATOR_BLOCK_ORDER must be"):
        side.synchronize()
    side.synchronize()  # reported once


def test_none_is_the_legacy_stream_as_the_driver_takes_it() -> None:
    array = _filled(8.0, 0)
    arrays.backend_for(0).stream_synchronize(None)
    np.testing.assert_array_equal(array.host_view(), np.full(4, 8.0))


def test_threads_waiting_at_once_keep_each_streams_order() -> None:
    import threading

    results: dict[int, list[float]] = {}

    def worker(index: int) -> None:
        stream = arrays.Stream(non_blocking=True)
        array = arrays.empty((4,), np.float32, stream=stream)
        seen = []
        for step in range(20):
            array.set(..., float(step), stream)
            if step % 5 == 4:
                stream.synchronize()
                seen.append(float(array.host_view()[0]))
        results[index] = seen

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == {i: [4.0, 9.0, 14.0, 19.0] for i in range(4)}


def _statements_before_the_cleanup(function: Any) -> list[int]:
    """The line numbers of ``function``'s statements up to its ``finally:`` (where a cleanup starts)."""
    import dis
    import inspect

    lines, first = inspect.getsourcelines(function)
    cleanup = first + next(i for i, line in enumerate(lines) if line.strip() == "finally:")
    return sorted({line for _, line in dis.findlinestarts(function.__code__) if line is not None and first < line < cleanup})


def test_a_keyboard_interrupt_at_any_statement_of_a_wait_leaves_the_queues_runnable() -> None:
    """Ctrl-C lands between any two statements of a wait (as a signal handler's
    exception does): the operation the waiting thread had claimed is given back,
    so the next wait runs the rest, neither hanging nor finding it running forever."""
    import sys

    interrupted, kept = 0, []  # kept: a free waits for the whole device, running the next fill early
    for line in _statements_before_the_cleanup(streams._run_until):  # noqa: SLF001 - the wait itself
        array = _filled(float(line), 0)
        kept.append(array)

        def interrupt(frame: Any, event: str, arg: Any, line: int = line) -> Any:
            if frame.f_code is not streams._run_until.__code__:  # noqa: SLF001
                return None
            if event == "line" and frame.f_lineno == line:
                sys.settrace(None)
                frame.f_trace = None  # one interrupt: not another where the cleanup reports this line
                raise KeyboardInterrupt
            return interrupt

        sys.settrace(interrupt)
        try:
            arrays.backend_for(0).stream_synchronize(0)
        except KeyboardInterrupt:
            interrupted += 1
        finally:
            sys.settrace(None)
        assert streams._running == 0, f"interrupted at line {line}: an operation is left running"  # noqa: SLF001
        arrays.backend_for(0).stream_synchronize(0)
        np.testing.assert_array_equal(array.host_view(), np.full(4, float(line)))
    assert interrupted > 5
