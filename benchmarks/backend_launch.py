"""Host cost of one GPU backend launch, over a driver that answers at once.

What is timed is the cuda-python backend's own work per launch: the context
check (one ``cuCtxGetCurrent``), filling the packed block's ``extra`` array,
the ``cuLaunchKernel`` call and the launch log's stores. The driver is a
stand-in whose calls return at once, so a real driver adds its own cost
(on the order of 0.1 us for ``cuCtxGetCurrent``, a few us for a launch).
Three cases, interleaved batch by batch: our context current (the usual
case), a foreign context current (push and pop around the launch), and the
packed launch alone.

    python benchmarks/backend_launch.py [--batches 30] [--calls 5000]
"""

from __future__ import annotations

import argparse

import run  # first: puts this checkout's aotc first on sys.path
from cuda.bindings import driver

from aotc.runtime.backends.cuda_python import CudaPythonBackend

SUCCESS = driver.CUresult.CUDA_SUCCESS
PRIMARY, FOREIGN = 0xC0FFEE, 0xBEEF


class InstantDriver:
    """The calls the backend makes, answered at once; one device, one thread."""

    CUresult = driver.CUresult
    CUdevice_attribute = driver.CUdevice_attribute

    def __init__(self) -> None:
        self.stack = [driver.CUcontext(PRIMARY)]

    def cuInit(self, flags: int) -> tuple:  # noqa: N802 - the driver's names
        return (SUCCESS,)

    def cuDriverGetVersion(self) -> tuple:  # noqa: N802
        return SUCCESS, 13000

    def cuDeviceGetCount(self) -> tuple:  # noqa: N802
        return SUCCESS, 1

    def cuDeviceGet(self, ordinal: int) -> tuple:  # noqa: N802
        return SUCCESS, driver.CUdevice(ordinal)

    def cuDevicePrimaryCtxRetain(self, device: object) -> tuple:  # noqa: N802
        return SUCCESS, driver.CUcontext(PRIMARY)

    def cuDeviceGetName(self, length: int, device: object) -> tuple:  # noqa: N802
        return SUCCESS, b"instant\0"

    def cuDeviceGetAttribute(self, attribute: object, device: object) -> tuple:  # noqa: N802
        return SUCCESS, 8

    def cuCtxGetCurrent(self) -> tuple:  # noqa: N802
        return SUCCESS, self.stack[-1]

    def cuCtxSetCurrent(self, context: object) -> tuple:  # noqa: N802
        self.stack[-1] = context
        return (SUCCESS,)

    def cuCtxPushCurrent(self, context: object) -> tuple:  # noqa: N802
        self.stack.append(context)
        return (SUCCESS,)

    def cuCtxPopCurrent(self) -> tuple:  # noqa: N802
        return SUCCESS, self.stack.pop()

    def cuModuleLoadData(self, image: bytes) -> tuple:  # noqa: N802
        return SUCCESS, driver.CUmodule(1)

    def cuModuleGetFunction(self, module: object, name: bytes) -> tuple:  # noqa: N802
        return SUCCESS, driver.CUfunction(2)

    def cuLaunchKernel(self, *args: object) -> tuple:  # noqa: N802
        return (SUCCESS,)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    instant = InstantDriver()
    backend = CudaPythonBackend(driver=instant)
    function = backend.get_function(backend.load_module(b"image", name="k"), "k")
    shape, params = ((4, 1, 1), (256, 1, 1), 0), bytes(72)  # a 9-argument kernel's block

    def foreign() -> None:
        instant.stack.append(driver.CUcontext(FOREIGN))
        try:
            backend.launch(function, shape, 0, params)
        finally:
            instant.stack.pop()

    cases = {
        "launch, our context current": lambda: backend.launch(function, shape, 0, params),
        "launch, a foreign context current (push + pop)": foreign,
    }
    try:  # a checkout from before packed_launch.py (to compare) has no such module
        from aotc.runtime.backends.packed_launch import launch_packed
    except ImportError:
        pass
    else:
        cases["the packed cuLaunchKernel alone"] = lambda: launch_packed(instant, function, shape, 0, params)
    medians = run.interleaved_medians(cases, args.batches, args.calls)
    print(f"host cost per launch, cuda-python backend over an instant driver, median of {args.batches} batches")
    for name, value in medians.items():
        print(f"  {name:48s} {value / 1000:6.2f} us")


if __name__ == "__main__":
    main()
