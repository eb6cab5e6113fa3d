"""Pointers a kernel can use: operands in place, or staged device copies.

On a host-memory backend (the CPU emulator) every operand is used where it
lies. On a GPU backend, device arrays are used in place and host arrays are
copied to the device before the launch, and results copied back after it.
"""

from __future__ import annotations


from aotc.errors import ArgumentError
from aotc.tropical._arrays import Operand, contiguous, is_row_major

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
    return contiguous(op, name) if op.on_host and not is_row_major(op) else op


class Memory:
    """The pointers of one launch; ``finish()`` copies results back and frees."""

    def __init__(self, backend: Any, host_memory: bool, stream: Any = None) -> None:
        self.backend = backend
        self.host_memory = host_memory
        self.stream = stream  # a stream being captured into a CUDA graph refuses staging
        self.staged: list[tuple[int, Any, bool]] = []  # (device pointer, host array, copy back)

    def check(self, op: Operand, name: str) -> None:
        """Refuse, before anything is allocated, arrays this backend cannot reach."""
        # The emulator's own allocations are device memory it can reach.
        if self.host_memory and not op.on_host and self.backend.pointer_device(op.pointer) is None:
            msg = f"{name}: a {op.device} array, but the {self.backend.name} backend runs on host memory"
            raise ArgumentError(msg)

    def pointer(self, op: Operand, name: str, *, result: bool = False, zeroed: bool = False) -> int:
        self.check(op, name)
        if self.host_memory or not op.on_host:
            return op.pointer
        from aotc.runtime.devices import refuse_while_capturing  # the runtime loads on first staging, not on import

        refuse_while_capturing(self.backend, self.stream, f"{name}: staging a host array")
        host = op.obj.numpy() if op.kind == "torch" else op.obj
        size = host.nbytes
        device = self.backend.alloc(max(size, 1))
        self.staged.append((device, host, result))
        if size and (not result or zeroed):
            self.backend.copy_to_device(device, host)
        return device

    def finish(self) -> None:
        try:
            if self.staged:
                self.backend.synchronize()
            for device, host, result in self.staged:
                if result and host.nbytes:
                    self.backend.copy_to_host(memoryview(host.reshape(-1).view("uint8")), device)
        finally:
            for device, _, _ in self.staged:
                self.backend.free(device)
