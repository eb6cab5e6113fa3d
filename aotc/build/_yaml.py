"""A strict YAML reader: safe tags only, no duplicate keys, line numbers kept.

Mappings come back as :class:`LineDict` and sequences as :class:`LineList`,
which remember the line of every key and item so validation errors can point
at the exact line a person has to fix.

A manifest is a few kilobytes a person writes, but the reader also runs on
files a person only downloaded (``aotc list``), so it refuses what no manifest
needs and what costs more to read than the file's size: anchors and aliases
(a billion-laughs file expands exponentially), explicit tags (``!!set``,
``!!binary``: values no manifest field takes), nesting deeper than
:data:`MAX_DEPTH` (the composer recurses), keys that are not strings, and
numbers longer than :data:`MAX_NUMBER_CHARS` (Python refuses, or takes
quadratic time, to convert huge integers). Each refusal is a
:class:`~aotc.errors.YamlError` naming the line and, once the value sits
under a key, the dotted key.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from aotc.errors import YamlError, echo

__all__ = ["MAX_DEPTH", "MAX_NUMBER_CHARS", "LineDict", "LineList", "key_text", "load_yaml"]

MAX_DEPTH = 32
MAX_NUMBER_CHARS = 32
# A key from the file is named in an error as written up to this length.
_KEY_ECHO = 40
# PyYAML's own problem text can quote a tag or character from the file.
_PROBLEM_CHARS = 120
_NO_KEY = "(yaml)"


def key_text(key: object) -> str:
    """A key read from the file, as an error names it: as written when it is a
    short printable string, else escaped and cut by :func:`aotc.errors.echo`."""
    if isinstance(key, str) and 0 < len(key) <= _KEY_ECHO and key.isprintable():
        return key
    return echo(key, _KEY_ECHO)


class LineDict(dict):
    """A dict that remembers its own line and the line of each key."""

    line: int
    key_lines: dict[Any, int]


class LineList(list):
    """A list that remembers its own line and the line of each item."""

    line: int
    item_lines: list[int]


def _line(node: yaml.Node | yaml.Event) -> int:
    return node.start_mark.line + 1


class _StrictComposer:
    """Refuses duplicate keys, anchors and deep nesting while composing (line numbers kept)."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        # Refused here, on the event, before the composer looks an alias up
        # or anything is expanded.
        event = self.peek_event()  # type: ignore[attr-defined]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise YamlError(_line(event), "anchors and aliases are not allowed in a manifest")
        if getattr(event, "tag", None) is not None:
            raise YamlError(_line(event), f"tags such as {echo(event.tag)} are not allowed in a manifest")
        if not isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            return super().compose_node(parent, index)  # type: ignore[misc]
        if self._depth >= MAX_DEPTH:
            raise YamlError(_line(event), f"nested deeper than {MAX_DEPTH} levels")
        self._depth += 1
        try:
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1


class _StrictLoader(_StrictComposer, yaml.SafeLoader):
    """The pure-Python reader: every problem in PyYAML's own words."""


if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _FastStrictLoader(_StrictComposer, yaml.composer.Composer, yaml.constructor.SafeConstructor, yaml.resolver.Resolver, CParser):
        """The same reader over libyaml's events: the scanner and parser in C are
        most of the time (a 1 MiB manifest reads about 4x faster), and the
        composer, with the checks above, is still PyYAML's own in Python."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    _LOADERS: tuple[type, ...] = (_FastStrictLoader, _StrictLoader)
else:  # PyYAML built without libyaml
    _LOADERS = (_StrictLoader,)


def _under(exc: YamlError, part: str) -> YamlError:
    """``exc`` with ``part`` prepended to its key, as the error leaves a mapping or list."""
    if exc.key == _NO_KEY:
        exc.key = part
    elif exc.key.startswith("["):
        exc.key = part + exc.key
    else:
        exc.key = f"{part}.{exc.key}"
    return exc


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    result = LineDict()
    result.line = _line(node)
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = _line(key_node)
        if not isinstance(key, str):
            raise YamlError(line, f"key {echo(key)} is not a string; quote it")
        if key in result:
            first = result.key_lines[key]
            raise YamlError(line, f"duplicate key (first defined on line {first})", key_text(key))
        try:
            result[key] = loader.construct_object(value_node, deep=True)
        except YamlError as exc:
            raise _under(exc, key_text(key)) from None
        result.key_lines[key] = line
    return result


def _construct_sequence(loader: _StrictLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList()
    for index, child in enumerate(node.value):
        try:
            result.append(loader.construct_object(child, deep=True))
        except YamlError as exc:
            raise _under(exc, f"[{index}]") from None
    result.line = _line(node)
    result.item_lines = [_line(child) for child in node.value]
    return result


def _number_text(loader: _StrictLoader, node: yaml.ScalarNode) -> str:
    text = loader.construct_scalar(node)
    if len(text) > MAX_NUMBER_CHARS:
        raise YamlError(_line(node), f"number {echo(text)} is longer than {MAX_NUMBER_CHARS} characters")
    return text


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    text = _number_text(loader, node)
    try:
        return loader.construct_yaml_int(node)
    except ValueError:  # YAML 1.1 reads "0x_" as an integer with no digits
        raise YamlError(_line(node), f"{echo(text)} is not a number") from None


def _construct_float(loader: _StrictLoader, node: yaml.ScalarNode) -> float:
    text = _number_text(loader, node)
    try:
        value = loader.construct_yaml_float(node)
    except ValueError:  # and "._" as a float
        raise YamlError(_line(node), f"{echo(text)} is not a number") from None
    # 1e999 reads as infinity; only a spelled-out .inf may mean that.
    if math.isinf(value) and "inf" not in text.lower():
        raise YamlError(_line(node), f"number {echo(text)} is out of range")
    return value


for _loader in _LOADERS:
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
    _loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
    # A manifest has no dates, and "2024-13-01" would fail in datetime: a
    # date-like value stays the text it is.
    _loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_scalar)


def _problem(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _PROBLEM_CHARS else f"{text[: _PROBLEM_CHARS - 3]}..."


def load_yaml(text: str) -> Any:
    """Parse one YAML document strictly; raise :class:`YamlError` on any problem.

    Only the safe core schema is constructed: a tag such as ``!!python/object``
    is rejected before anything is built from it. Malformed YAML is read again
    by the pure-Python reader, so its line and words are PyYAML's whichever
    reader found it.
    """
    try:
        return yaml.load(text, Loader=_LOADERS[0])  # noqa: S506 - a SafeLoader subclass
    except YamlError:
        raise
    except yaml.YAMLError as exc:
        if _LOADERS[0] is not _StrictLoader:
            return _load_slowly(text)
        raise _yaml_error(exc) from None


def _load_slowly(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except YamlError:
        raise
    except yaml.YAMLError as exc:
        raise _yaml_error(exc) from None


def _yaml_error(exc: yaml.YAMLError) -> YamlError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        return YamlError(line, _problem(str(exc.problem or exc.context or "malformed YAML")))
    return YamlError(1, _problem(str(exc)))
