"""Which device a call runs on, and what a library keeps per device.

A process may drive several GPUs (one per rank, or several per process). A
library keeps one ``DeviceState`` per device ordinal: that device's backend
instance (in its primary context), the launchers of the modules loaded
there, and what image selection learnt about it, so a node with an sm_80 and
an sm_90 GPU loads the right image on each.

When a call names no device, the device is the one the frameworks would
pick: PyTorch's current device once PyTorch has initialised CUDA, else the
device whose context the calling thread has current (``cudaSetDevice``,
``torch.cuda.set_device(local_rank)``), else device 0.
"""

from __future__ import annotations

import sys

from aotc.errors import ArgumentError, CaptureError, NoDeviceError, echo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _thread import LockType
    from typing import Any

    from aotc.runtime.backends import Backend
    from aotc.runtime.launcher import Launcher
    from aotc.runtime.select import Platform

__all__ = ["DeviceState", "check_ordinal", "current_device", "refuse_while_capturing"]


def check_ordinal(device: Any) -> int:
    """``device`` as an ordinal: an int >= 0, or a "cuda:N" string / torch device."""
    if type(device) is int and device >= 0:
        return device
    index = getattr(device, "index", None)
    if getattr(device, "type", None) == "cuda" and (index is None or type(index) is int):
        return index or 0
    if isinstance(device, str) and device.startswith("cuda:") and device[5:].isdigit():
        return int(device[5:])
    msg = f"device: expected a device ordinal (an int >= 0 or 'cuda:N'), got {echo(device)}"
    raise ArgumentError(msg)


def current_device(backend: Backend) -> int:
    """The device a call that names none runs on; see the module docstring."""
    torch = sys.modules.get("torch")
    if torch is not None:
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_initialized():
            return int(cuda.current_device())
    try:
        return backend.current_device()
    except NoDeviceError:
        return 0  # no GPU: device 0, whose backend says so plainly on first use


class DeviceState:
    """A library's state on one device: its backend and the kernels loaded there."""

    __slots__ = ("backend", "kernel_locks", "launchers", "ordinal", "platforms")

    def __init__(self, ordinal: int, backend: Backend) -> None:
        self.ordinal = ordinal
        self.backend = backend
        self.kernel_locks: dict[str, LockType] = {}
        self.launchers: dict[str, Launcher] = {}
        self.platforms: dict[bool, Platform] = {}


def refuse_while_capturing(backend: Backend, stream: Any, what: str) -> None:
    """Raise CaptureError if ``stream`` (or any of a tuple of streams) is being
    captured into a CUDA graph: ``what`` (a module load, an allocation, a host
    copy) cannot be recorded in one."""
    for one in stream if type(stream) is tuple else (stream,):
        try:
            capturing = one is not None and backend.is_capturing(one)
        except CaptureError as exc:  # the driver's own refusal (the legacy stream during a capture)
            raise CaptureError(f"{what}: {exc}") from None
        if capturing:
            msg = (
                f"{what} while stream {one} is being captured into a CUDA graph on device {backend.ordinal}: "
                "call preload() before capturing, and pass device arrays"
            )
            raise CaptureError(msg)
