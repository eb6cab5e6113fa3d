"""The packed launch (``aotc/runtime/backends/packed_launch.py``): the block the driver reads."""

from __future__ import annotations

import struct
import threading

import pytest

from aotc.runtime.backends import packed_launch
from aotc.runtime.backends.cuda_python import CudaPythonBackend
from fake_driver import FakeDriver

SHAPE = ((3, 2, 1), (16, 16, 1), 48)


def loaded() -> tuple[FakeDriver, object]:
    fake = FakeDriver()
    backend = CudaPythonBackend(driver=fake)
    function = backend.get_function(backend.load_module(b"good", name="m"), "k")
    fake.add_stream(0x5000)
    return fake, function


@pytest.mark.parametrize("by_offset", [True, False], ids=["bytes-offset", "ctypes"])
def test_the_driver_reads_exactly_the_packed_block(monkeypatch: pytest.MonkeyPatch, by_offset: bool) -> None:
    if not by_offset:
        monkeypatch.setattr(packed_launch, "_OFFSET", None)  # an interpreter whose ids are no addresses
    fake, function = loaded()
    for params in (struct.pack("@QQQiiiqqq", 1, 2, 3, 4, 5, 6, 7, 8, 9), b"", bytearray(b"\x07" * 12)):
        err = packed_launch.launch_packed(fake, function, SHAPE, 0x5000, params)
        assert not err
        launch = fake.launches[-1]
        assert launch["block_bytes"] == bytes(params) and launch["markers"] == (1, 2, None)
        assert (launch["grid"], launch["block"], launch["shared"], launch["stream"]) == ((3, 2, 1), (16, 16, 1), 48, 0x5000)


def test_this_interpreter_gives_the_fast_path() -> None:
    assert packed_launch._OFFSET is not None  # noqa: SLF001 - CPython: without it a launch costs 1.6 us more


def test_each_thread_fills_its_own_extra_array() -> None:
    # cuda-bindings releases the GIL during the launch: one shared array could be refilled under it.
    addresses = [packed_launch._slot()[2]]  # noqa: SLF001 - the per-thread array under test
    thread = threading.Thread(target=lambda: addresses.append(packed_launch._slot()[2]))  # noqa: SLF001
    thread.start()
    thread.join()
    assert addresses[0] != addresses[1]
