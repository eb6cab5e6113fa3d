"""A strict YAML reader: safe tags only, no duplicate keys, line numbers kept.

Mappings come back as :class:`LineDict` and sequences as :class:`LineList`,
which remember the line of every key and item so validation errors can point
at the exact line a person has to fix.
"""

from __future__ import annotations

from typing import Any

import yaml

from aotc.errors import YamlError

__all__ = ["LineDict", "LineList", "load_yaml"]




class LineDict(dict):
    """A dict that remembers its own line and the line of each key."""

    line: int
    key_lines: dict[Any, int]


class LineList(list):
    """A list that remembers its own line and the line of each item."""

    line: int
    item_lines: list[int]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and records line numbers."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            duplicate = key in result
        except TypeError:
            raise YamlError(line, f"unhashable mapping key {key!r}") from None
        if duplicate:
            first = result.key_lines[key]
            raise YamlError(line, f"duplicate key (first defined on line {first})", str(key))
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = line
    return result


def _construct_sequence(loader: _StrictLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml(text: str) -> Any:
    """Parse one YAML document strictly; raise :class:`YamlError` on any problem.

    Only the safe core schema is constructed: a tag such as ``!!python/object``
    is rejected before anything is built from it.
    """
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except YamlError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = " ".join(str(exc.problem or exc.context or "malformed YAML").split())
        raise YamlError(line, problem) from None
    except yaml.YAMLError as exc:
        raise YamlError(1, " ".join(str(exc).split())) from None
