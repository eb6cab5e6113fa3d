"""Pointers a kernel can use: operands in place, or staged device copies, all
of one call's work on the call's stream.

On a host-memory backend (the CPU emulator) every operand is used where it
lies. On a GPU backend, device arrays are used in place and host arrays are
staged: allocated, copied to the device on the call's stream
(``copy_to_device_async``; results that must start zeroed are zeroed there),
and results copied back on the same stream after the launch. Either way a
call that hands host memory to the kernel synchronizes its stream before it
returns, so the host sees the results, as it would after ``cudaMemcpy``.
"""

from __future__ import annotations

from aotc.errors import ArgumentError
from aotc.arrays.operands import Operand, is_row_major

TYPE_CHECKING = False  # typing is not imported at run time: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Memory", "on_host_memory", "stageable"]


def on_host_memory(backend: Any) -> bool:
    """Whether ``backend`` runs kernels on host memory (the emulator)."""
    return getattr(backend, "memory", "device") == "host"


def stageable(op: Operand, name: str) -> Operand:
    """A host operand bound for a GPU is copied there byte for byte, so its
    layout must be plain row-major first (a padded or broadcast view is not)."""
    return op.kind.contiguous(op, name) if op.on_host and not is_row_major(op) else op


class Memory:
    """The pointers of one launch on ``stream``; ``finish()`` copies results back,
    synchronizes where the host must see them, and frees."""

    def __init__(self, backend: Any, host_memory: bool, stream: Any = None) -> None:
        self.backend = backend
        self.host_memory = host_memory
        self.stream = 0 if stream is None else stream
        self.staged: list[tuple[int, Any, bool]] = []  # (device pointer, host array, copy back)
        self.host_used = False  # host memory handed to the kernel in place: wait before returning
        self._capture_checked = False

    def check(self, op: Operand, name: str) -> None:
        """Refuse, before anything is allocated, arrays this backend cannot reach."""
        # The emulator's own allocations are device memory it can reach.
        if self.host_memory and not op.on_host and self.backend.pointer_device(op.pointer) is None:
            msg = f"{name}: a {op.device} array, but the {self.backend.name} backend runs on host memory"
            raise ArgumentError(msg)

    def pointer(self, op: Operand, name: str, *, result: bool = False, zeroed: bool = False, inout: bool = False) -> int:
        """A pointer the kernel can use for ``op``: a result is copied back after the
        launch; an ``inout`` result is copied to the device first, as an input is."""
        self.check(op, name)
        if not op.on_host:
            return op.pointer
        if self.host_memory:
            self.host_used = True
            return op.pointer
        if not self._capture_checked:
            self.refuse_capture(f"{name}: staging a host array")
        host = op.kind.host_array(op)
        size = host.nbytes
        device = self.backend.alloc(max(size, 1))
        self.staged.append((device, host, result))
        if size and (inout or not result):
            self.backend.copy_to_device_async(device, host, self.stream)
        elif size and zeroed:
            self.backend.memset_async(device, 0, size, self.stream)
        return device

    def refuse_capture(self, what: str) -> None:
        """Staging allocates and synchronizes: refuse it while any stream this call
        could be captured on is (``streams.capture_candidates``)."""
        from aotc.runtime.devices import refuse_while_capturing  # the runtime loads on first staging, not on import
        from aotc.arrays.streams import capture_candidates

        refuse_while_capturing(self.backend, capture_candidates(self.stream, self.backend.ordinal), what)
        self._capture_checked = True

    def finish(self) -> None:
        """Copy the results back on the call's stream, wait for it where the host
        reads what the kernel wrote, and free the staged copies."""
        try:
            for device, host, result in self.staged:
                if result and host.nbytes:
                    self.backend.copy_to_host_async(memoryview(host.reshape(-1).view("uint8")), device, self.stream)
            if self.staged or self.host_used:
                self.backend.stream_synchronize(self.stream)
        finally:
            for device, _, _ in self.staged:
                self.backend.free(device)

