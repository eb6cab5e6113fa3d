"""``Record``: an immutable value class with ``__slots__``, for the run-time path.

What ``@dataclass(frozen=True)`` gives (construction by position or keyword,
equality, hashing, a repr, no assignment) without importing ``dataclasses``,
which brings ``inspect``, ``dis`` and ``ast`` into every process that loads a
kernel (about 10 ms here). A subclass lists its fields in ``__slots__``, in
order, in ``_fields`` (and ``__slots__ = _fields``), and may set defaults in
``_defaults``.
"""

from __future__ import annotations

from aotc.errors import ArgumentTypeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = ["Record"]

_set = object.__setattr__


class Record:
    """Fields in ``_fields`` order; ``_defaults`` maps trailing fields to their default."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if not kwargs and len(args) == len(fields):  # every field by position: an index entry's records
            for name, value in zip(fields, args):
                _set(self, name, value)
            return
        if len(args) > len(fields):
            msg = f"{type(self).__name__}() takes {len(fields)} arguments, got {len(args)}"
            raise ArgumentTypeError(msg)
        for name, value in zip(fields, args):
            _set(self, name, value)
        for name in fields[len(args) :]:
            if name in kwargs:
                _set(self, name, kwargs.pop(name))
            elif name in self._defaults:
                _set(self, name, self._defaults[name])
            else:
                msg = f"{type(self).__name__}() missing argument {name!r}"
                raise ArgumentTypeError(msg)
        if kwargs:
            msg = f"{type(self).__name__}() got unexpected arguments {', '.join(map(repr, kwargs))}"
            raise ArgumentTypeError(msg)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __setattr__(self, name: str, value: Any) -> None:
        msg = f"{type(self).__name__} is immutable: cannot set {name!r}"
        raise AttributeError(msg)

    def __delattr__(self, name: str) -> None:
        msg = f"{type(self).__name__} is immutable: cannot delete {name!r}"
        raise AttributeError(msg)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values())
