"""The cache key: every input a JIT product depends on, hashed into one digest."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

from aotc._version import __version__
from aotc.errors import ArgumentTypeError, echo

__all__ = ["KEY_SCHEMA", "CacheKey"]

# Bump when what goes into a key changes meaning: old entries become misses.
KEY_SCHEMA = 1


@dataclass(frozen=True)
class CacheKey:
    """Everything a JIT product depends on; ``digest`` names its entry.

    Build one with ``CacheKey.for_source``: the source is hashed, not kept.
    Option order is kept because later compiler options may override earlier.
    """

    source_sha256: str
    options: tuple[str, ...]
    target: str
    compiler: str
    aotc_version: str = __version__
    key_schema: int = KEY_SCHEMA

    @classmethod
    def for_source(
        cls,
        source: bytes,
        *,
        options: tuple[str, ...] | list[str] = (),
        target: str,
        compiler: str,
        aotc_version: str = __version__,
        key_schema: int = KEY_SCHEMA,
    ) -> CacheKey:
        if not isinstance(source, (bytes, bytearray, memoryview)):
            msg = f"source must be bytes, not {type(source).__name__}"
            raise ArgumentTypeError(msg)
        digest = hashlib.sha256(source).hexdigest()
        return cls(digest, options, target, compiler, aotc_version, key_schema)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        if isinstance(self.options, str):
            msg = "options must be a sequence of str, not one str"
            raise ArgumentTypeError(msg)
        try:
            object.__setattr__(self, "options", tuple(self.options))
        except TypeError:
            msg = f"options must be a sequence of str, not {type(self.options).__name__}"
            raise ArgumentTypeError(msg) from None
        fields = {"source_sha256": self.source_sha256, "target": self.target, "compiler": self.compiler}
        fields["aotc_version"] = self.aotc_version
        fields.update((f"options[{i}]", option) for i, option in enumerate(self.options))
        for name, value in fields.items():
            if not isinstance(value, str):
                msg = f"CacheKey {name} must be str, not {type(value).__name__} ({echo(value)})"
                raise ArgumentTypeError(msg)
        if type(self.key_schema) is not int:
            msg = f"key_schema must be int, not {type(self.key_schema).__name__}"
            raise ArgumentTypeError(msg)

    @cached_property
    def digest(self) -> str:
        """sha256 hex over every field, each length-prefixed so no two keys collide by concatenation."""
        parts = [
            str(self.key_schema),
            self.aotc_version,
            self.compiler,
            self.target,
            self.source_sha256,
            str(len(self.options)),
            *self.options,
        ]
        hasher = hashlib.sha256(b"aotc-cache-key\x00")
        for part in parts:
            data = part.encode("utf-8", "surrogatepass")
            hasher.update(len(data).to_bytes(8, "big"))
            hasher.update(data)
        return hasher.hexdigest()
