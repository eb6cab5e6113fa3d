"""A stand-in for ``cuda.bindings.driver``: the cuda-python backend without a GPU.

It answers the slice of the driver API the backend calls, records context
calls and launches, and reports whatever driver version a test gives it. The
enums come from the real module, so a machine without cuda-bindings skips
the tests that import this. Not a conftest.py (see runtime_support.py).
"""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

driver = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is a default dependency")
SUCCESS = driver.CUresult.CUDA_SUCCESS

__all__ = ["SUCCESS", "FakeDriver", "driver"]


class FakeDriver:
    """The slice of cuda.bindings.driver the backend uses, recording calls."""

    CUresult = driver.CUresult
    CUdevice_attribute = driver.CUdevice_attribute
    CUdeviceptr = driver.CUdeviceptr

    def __init__(self, init: Any = SUCCESS, current: int = 0, version: int = 13010) -> None:
        self.init = init
        self.current = current
        self.version = version  # what cuDriverGetVersion answers
        self.loaded: list[bytes] = []  # images cuModuleLoadData accepted
        self.calls: list[str] = []
        self.launches: list[dict[str, Any]] = []
        self.attributes = {
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 8,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 6,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 84,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CLOCK_RATE: 1_695_000,
        }

    def cuInit(self, flags: int) -> tuple[Any]:  # noqa: N802 - the driver's names
        if isinstance(self.init, Exception):
            raise self.init
        return (self.init,)

    def cuDeviceGetCount(self) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, 1

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, ordinal

    def cuDevicePrimaryCtxRetain(self, device: int) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, 0xC0FFEE

    def cuDeviceGetName(self, length: int, device: int) -> tuple[Any, bytes]:  # noqa: N802
        return SUCCESS, b"Stand-in GPU\0\0\0"

    def cuDeviceGetAttribute(self, attribute: Any, device: int) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, self.attributes[attribute]

    def cuDriverGetVersion(self) -> tuple[Any, int]:  # noqa: N802
        return SUCCESS, self.version

    def cuCtxGetCurrent(self) -> tuple[Any, int]:  # noqa: N802
        self.calls.append("get")
        return SUCCESS, self.current

    def cuCtxSetCurrent(self, context: int) -> tuple[Any]:  # noqa: N802
        self.calls.append("set")
        self.current = context
        return (SUCCESS,)

    def cuCtxPushCurrent(self, context: int) -> tuple[Any]:  # noqa: N802
        self.calls.append("push")
        return (SUCCESS,)

    def cuCtxPopCurrent(self) -> tuple[Any, int]:  # noqa: N802
        self.calls.append("pop")
        return SUCCESS, 0xC0FFEE

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, str]:  # noqa: N802
        if not image.startswith((b"good", b"stand-in fatbin")):  # the latter: runtime_support's libraries
            return driver.CUresult.CUDA_ERROR_NO_BINARY_FOR_GPU, None
        self.loaded.append(image)
        return SUCCESS, "module"

    def cuModuleGetFunction(self, module: str, symbol: bytes) -> tuple[Any, str]:  # noqa: N802
        return SUCCESS, f"{module}:{symbol.decode()}"

    def cuLaunchKernel(self, function: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: Any, params: Any, extra: int) -> tuple[Any]:  # noqa: N802, E501
        # Read `extra` while it is alive, as the driver does.
        words = (ctypes.c_void_p * 5).from_address(extra)
        size = ctypes.c_size_t.from_address(words[3]).value
        self.launches.append({
            "function": function, "grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shared, "stream": stream,
            "params": params, "markers": (words[0], words[2], words[4]), "block_bytes": ctypes.string_at(words[1], size),
        })  # fmt: skip
        return (SUCCESS,)

    def cuGetErrorName(self, err: Any) -> tuple[Any, bytes]:  # noqa: N802
        return SUCCESS, err.name.encode()

    def cuGetErrorString(self, err: Any) -> tuple[Any, bytes]:  # noqa: N802
        return SUCCESS, b"described"
