"""Value classes for the run-time path: ``Record`` and ``StrChoices``.

``Record``, an immutable value class with ``__slots__``: what
``@dataclass(frozen=True)`` gives (construction by position or keyword,
equality, hashing, a repr, no assignment) without importing ``dataclasses``,
which brings ``inspect``, ``dis`` and ``ast`` into every process that loads a
kernel (about 10 ms here). A subclass lists its fields in ``__slots__``, in
order, in ``_fields`` (and ``__slots__ = _fields``), and may set defaults in
``_defaults``.

``StrChoices``, a fixed set of named strings: what ``class X(str, enum.Enum)``
gives (members by name, ``X(value)``, iteration in order, ``.name`` and
``.value``, each member equal to its string) without importing ``enum``, which
brings ``functools`` and ``collections`` (17 M instructions: about 1.7 ms of
every start-up that chooses a kernel's image).
"""

from __future__ import annotations

from aotc.errors import ArgumentError, ArgumentTypeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, ClassVar

__all__ = ["Record", "StrChoices"]

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


class _ChoicesType(type):
    """The class of a ``StrChoices``: iterable over its members, called to look one up."""

    def __iter__(cls) -> Iterator[Any]:
        return iter(cls._members.values())  # type: ignore[attr-defined]

    def __len__(cls) -> int:
        return len(cls._members)  # type: ignore[attr-defined]

    def __call__(cls, value: Any) -> Any:
        """The member whose value is ``value`` (a member is its own); ValueError otherwise."""
        found = cls._members.get(value) if isinstance(value, str) else None  # type: ignore[attr-defined]
        if found is None:
            msg = f"{value!r} is not a valid {cls.__name__}"
            raise ArgumentError(msg)  # a ValueError, as enum's
        return found


class StrChoices(str, metaclass=_ChoicesType):
    """A subclass lists its members as ``NAME = "value"``, in order; each becomes an
    instance, equal to (and hashed as) its value."""

    _members: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._members = {}
        for name, value in list(vars(cls).items()):
            if name.isupper() and type(value) is str:
                member = str.__new__(cls, value)
                vars(member)["_name"] = name  # set here, once: a member has no other writer
                setattr(cls, name, member)
                cls._members[value] = member

    @property
    def name(self) -> str:
        return self._name  # type: ignore[attr-defined]

    @property
    def value(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {str.__repr__(self)}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.value,))
