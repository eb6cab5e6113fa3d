"""The parameter block: a kernel's arguments packed as one C struct, and unpacked.

One layout serves both sides of a launch. The launcher packs the arguments
with ``pack`` (a ``struct.Struct`` with native alignment, which is how a C
compiler lays out a kernel's parameter list); a backend that runs kernels on
the host (the emulator) finds each parameter in the block at ``offsets``, the
same struct's. Neither side computes alignment itself, so they cannot drift.
"""

from __future__ import annotations

import struct

from aotc.errors import AotcError, ArgumentError, ArgumentTypeError, BackendError, echo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["ParamLayout"]

# A parameter of this many bytes is packed with this code, when only sizes are known.
_CODE_FOR_SIZE = {1: "B", 2: "H", 4: "I", 8: "Q"}
_WHAT = {"ptr": "a device pointer (int)"}


class ParamLayout:
    """``format`` is a ``struct`` format with native alignment (``"@QQi..."``)."""

    __slots__ = ("_struct", "format")

    def __init__(self, format: str) -> None:  # struct's own word
        self.format = format
        self._struct = struct.Struct(format)

    def __eq__(self, other: object) -> bool:
        return type(other) is ParamLayout and other.format == self.format  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.format)

    def __repr__(self) -> str:
        return f"ParamLayout(format={self.format!r})"

    @classmethod
    def for_sizes(cls, sizes: Sequence[int]) -> ParamLayout:
        """The layout of parameters known by their sizes in bytes only (natural alignment)."""
        unknown = sorted({size for size in sizes if size not in _CODE_FOR_SIZE})
        if unknown:
            msg = f"parameters of {', '.join(map(str, unknown))} bytes have no packed layout (only 1, 2, 4 or 8)"
            raise BackendError(msg)
        return cls("@" + "".join(_CODE_FOR_SIZE[size] for size in sizes))

    @property
    def codes(self) -> str:
        return self.format.lstrip("@=<>!")

    @property
    def size(self) -> int:
        return self._struct.size

    @property
    def pack(self) -> Any:
        """``struct.Struct.pack`` itself, so the per-call path makes one C call."""
        return self._struct.pack

    @property
    def offsets(self) -> tuple[int, ...]:
        """Where each parameter starts in a packed block."""
        prefix = self.format[: len(self.format) - len(self.codes)]
        # "0Q" adds no bytes, only the padding that aligns the next Q: its start.
        return tuple(struct.calcsize(prefix + self.codes[:i] + "0" + code) for i, code in enumerate(self.codes))

    def split(self, leading: int) -> tuple[ParamLayout, ParamLayout] | None:
        """Two layouts whose packed blocks, concatenated, are this one's: the first
        ``leading`` parameters and the rest. None where alignment forbids it (the
        rest would start at a different offset on its own)."""
        prefix = self.format[: len(self.format) - len(self.codes)] or "@"
        head, tail = ParamLayout(prefix + self.codes[:leading]), ParamLayout(prefix + self.codes[leading:])
        shifted = tuple(head.size + offset for offset in tail.offsets)
        if self.offsets[leading:] != shifted or self.size != head.size + tail.size:
            return None
        return head, tail

    def argument_error(
        self, kernel: str, params: Sequence[str], kinds: Sequence[str], args: Sequence[object]
    ) -> AotcError:
        """Why ``args`` did not pack, as one line naming the kernel and the argument."""
        if len(args) != len(params):
            msg = f"{kernel} takes {len(params)} arguments ({', '.join(params)}), got {len(args)}"
            return ArgumentTypeError(msg)
        for name, kind, code, value in zip(params, kinds, self.codes, args):
            try:
                struct.pack("@" + code, value)
            except struct.error:
                what = _WHAT.get(kind, f"an {kind} int")
                msg = f"{kernel}: argument {name} must be {what}, got {echo(value)}"
                return ArgumentError(msg) if isinstance(value, int) else ArgumentTypeError(msg)
        return ArgumentTypeError(f"{kernel}: arguments do not pack")  # pragma: no cover - struct agreed per field
