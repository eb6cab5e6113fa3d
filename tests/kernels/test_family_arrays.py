"""A declared family takes every array kind the tropical API takes, on the
call's stream after the arrays' producers: emulated device arrays
(__cuda_array_interface__ v3, with a producer stream), DLPack-only arrays, and
host arrays staged both ways on a device-memory backend, inout ones too."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest
from arrays.arrays_support import DLPackOnly

import aotc
import aotc.kernels
from aotc.errors import ArgumentTypeError
from aotc.runtime.emulator import arrays
from aotc.runtime.emulator.backend import EmulatorBackend
from aotc.runtime.library import Library
from declared_support import AXPY, ROWOPS, declared_library, reference, write_project

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True, params=["lazy", "seed:7"])
def schedule(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Queued streams; ``lazy`` runs only what a wait needs, so a missing wait shows."""
    monkeypatch.delenv("AOTC_EMULATOR_STREAMS", raising=False)
    monkeypatch.setenv("AOTC_EMULATOR_SCHEDULE", request.param)
    gc.collect()  # earlier tests' arrays freed now: a free waits for the whole device


class StagedEmulator(EmulatorBackend):
    """The emulator as a device-memory backend: host arrays are staged as on a GPU."""

    memory = "device"


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("arrays")
    rowops = declared_library(root / "rowops", ROWOPS / "manifest.yaml")
    axpy = declared_library(root / "axpy", write_project(root / "axpy" / "project", AXPY))
    return rowops, axpy


def test_device_arrays_wait_for_their_producer(libraries: tuple[Path, Path]) -> None:
    rowops = aotc.kernels.over(aotc.load(libraries[0], backend="emulator"))
    host = RNG.normal(size=(4, 300))
    producer, consumer = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    x = arrays.to_device(host, stream=producer)  # still queued on producer
    with pytest.raises(ArgumentTypeError, match=r"^softmax: y: cannot allocate a result like DeviceArray; pass y=$"):
        rowops.softmax(x, stream=consumer.handle)
    y = arrays.empty((4, 300), np.float64, stream=consumer)
    assert rowops.softmax(x, y=y, stream=consumer.handle) is y
    np.testing.assert_allclose(y.get(consumer), reference.softmax(host), rtol=1e-13)


def test_a_dlpack_array_is_read_in_place(libraries: tuple[Path, Path]) -> None:
    rowops = aotc.kernels.over(aotc.load(libraries[0], backend="emulator"))
    host = RNG.integers(-50, 50, size=(3, 700)).astype(np.int64)
    producer, consumer = arrays.Stream(non_blocking=True), arrays.Stream(non_blocking=True)
    out = arrays.zeros((3, 700), np.int64, stream=consumer)
    assert rowops.scan(DLPackOnly(arrays.to_device(host, stream=producer)), y=out, stream=consumer.handle) is out
    np.testing.assert_array_equal(out.get(consumer), reference.scan(host))


def test_host_arrays_are_staged_both_ways_on_a_device_backend(libraries: tuple[Path, Path]) -> None:
    backend = StagedEmulator()
    rowops = aotc.kernels.over(Library(libraries[0], backend=backend))
    axpy = aotc.kernels.over(Library(libraries[1], backend=backend))
    x = RNG.normal(size=(5, 90))
    np.testing.assert_allclose(rowops.softmax(x), reference.softmax(x), rtol=1e-13)
    assert not rowops.layout("softmax").plans.tagged("numpy")  # staged: no plan, every call stages again
    y = RNG.normal(size=(5, 90))
    expected = y + 0.25 * x
    side = arrays.Stream(non_blocking=True)
    assert axpy.axpy(x, y, 0.25, threads=128, stream=side.handle) is y  # inout: copied in, and back
    np.testing.assert_allclose(y, expected, rtol=1e-15)
