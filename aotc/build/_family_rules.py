"""What a declared family chooses per point: ``when`` conditions, constants,
and the alternatives of its signature and launch shape.

One family's kernels may differ by more than their dtypes. Tropical GEMM's
argmax pass returns k* beside C, its backward passes take k* second, its
batched variant adds batch strides and its f64 kernels take smaller tiles.
Rather than one family per combination, a family says so per point:

- ``constants:`` a list of entries, later ones over earlier ones where their
  ``when`` matches (a matrix block's own ``constants:`` come last). The
  templates read them by name, and so do the name pattern and the launch
  expressions: tile sizes, a name suffix, the lanes of a pair element.
- ``signature:`` and ``launch:`` may be lists of alternatives, each with a
  ``when``; a point takes the first that matches.

A ``when`` maps axes to a value or a list of values; it matches a point whose
value of every axis named is listed. Problems are one line naming the file,
the line and the key (``aotc.build._checks``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aotc.build._checks import Checker, describe, line_of, listing
from aotc.build._yaml import LineDict, LineList, key_text
from aotc.errors import echo

__all__ = [
    "Alternative", "AxisValue", "ConstantRule", "Rule", "RuleIndex",
    "choose", "constants_at", "parse_alternatives", "parse_constants", "parse_when",
]  # fmt: skip

AxisValue = str | int  # an axis's value, as a manifest writes it
Rule = dict[str, tuple[AxisValue, ...]]
# A constant's text value: a dtype's name, a name suffix; possibly empty.
_CONSTANT_TEXT = re.compile(r"[A-Za-z0-9_]{0,64}\Z")


def parse_when(check: Checker, value: Any, key: str, line: int, axes: dict[str, tuple[AxisValue, ...]]) -> Rule:
    """``when: {axis: value or [values]}``: the points it matches."""
    table = check.mapping(value, key, line, optional=tuple(axes))
    if not table:
        check.fail(line, key, f"must name at least one of the axes ({listing(axes)})")
    rule: Rule = {}
    for axis, raw in table.items():
        at, at_line = f"{key}.{key_text(axis)}", line_of(table, axis)
        items = raw if isinstance(raw, LineList) else [raw]
        item_lines = raw.item_lines if isinstance(raw, LineList) else [at_line]
        if not items:
            check.fail(at_line, at, "must not be empty")
        for item, item_line in zip(items, item_lines):
            if isinstance(item, bool) or item not in axes[axis]:
                check.fail(item_line, at, f"{echo(item)} is not a value of axis {axis} (declared: {listing(map(str, axes[axis]))})")
        rule[axis] = tuple(items)
    return rule


def matches(rule: Rule | None, values: dict[str, Any]) -> bool:
    return rule is None or all(values[axis] in allowed for axis, allowed in rule.items())


class RuleIndex:
    """Which of a list of ``when`` rules (None: every point) match a point, in time
    linear in the family's axes rather than in the rules: per axis and value, a
    bit mask of the rules that let it pass (those that do not name the axis, and
    those that list the value). A point's matches are the AND of its values'
    masks. A thousand excludes over a million points is then a million ANDs per
    axis, not a billion comparisons. The masks take values x rules bits an axis."""

    def __init__(self, rules: list[Rule | None], axes: dict[str, tuple[AxisValue, ...]]) -> None:
        count = len(rules)
        self.every = (1 << count) - 1
        self._masks: list[tuple[str, dict[AxisValue, int]]] = []
        for axis, values in axes.items():
            named: dict[AxisValue, list[int]] = {value: [] for value in values}
            unnamed = []
            for i, rule in enumerate(rules):
                if rule is None or axis not in rule:
                    unnamed.append(i)
                else:
                    for value in rule[axis]:
                        named[value].append(i)
            if len(unnamed) < count:  # an axis no rule names filters nothing
                passing = _bits(unnamed, count)
                self._masks.append((axis, {value: passing | _bits(listed, count) for value, listed in named.items()}))

    def mask(self, point: dict[str, AxisValue]) -> int:
        """The rules that match ``point``, bit i for rule i."""
        found = self.every
        for axis, masks in self._masks:
            found &= masks[point[axis]]
            if not found:
                break
        return found

    def matching(self, point: dict[str, AxisValue]) -> list[int]:
        """The indices of the rules that match ``point``, in order."""
        found, indices = self.mask(point), []
        while found:
            low = found & -found
            indices.append(low.bit_length() - 1)
            found ^= low
        return indices


def _bits(indices: list[int], count: int) -> int:
    """An int with bit i set for each of ``indices`` (all below ``count``), built in one pass."""
    buffer = bytearray((count + 7) // 8)
    for i in indices:
        buffer[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(buffer, "little")


@dataclass(frozen=True)
class ConstantRule:
    """One entry of ``constants:``: the values it sets where ``when`` matches."""

    when: Rule | None
    values: dict[str, int | str]  # bools among the integers


def _constant_values(check: Checker, table: LineDict, key: str, reserved: set[str]) -> dict[str, int | str]:
    values: dict[str, int | str] = {}
    for name, raw in table.items():
        if name == "when":
            continue
        at, at_line = f"{key}.{key_text(name)}", line_of(table, name)
        check.identifier(name, at, at_line)
        if name in reserved:
            check.fail(at_line, at, f"{name} is also an axis; a constant needs a name of its own")
        # Integers, true/false and -inf/+inf also serve as an out array's fill (aotc.build._binding_fields).
        if not isinstance(raw, (int, str)):
            check.fail(at_line, at, f"expected an integer, true, false, -inf, +inf or a name, got {describe(raw)}")
        if isinstance(raw, int) and not -(1 << 63) <= raw < 1 << 64:
            check.fail(at_line, at, f"{raw} is out of range (a 64-bit integer)")
        if isinstance(raw, str) and not _CONSTANT_TEXT.match(raw) and raw not in ("-inf", "+inf"):
            check.fail(at_line, at, f"{echo(raw)} is not a name (letters, digits and _, at most 64), -inf or +inf")
        values[name] = raw
    return values


def parse_constants(check: Checker, value: Any, key: str, line: int, axes: dict[str, tuple[AxisValue, ...]]) -> tuple[ConstantRule, ...]:
    """``constants:``: one mapping, or a list of them, each with an optional ``when``."""
    items, item_lines = ([value], [line]) if isinstance(value, LineDict) else (check.sequence(value, key, line), value.item_lines)
    rules = []
    for i, (item, item_line) in enumerate(zip(items, item_lines)):
        at = key if isinstance(value, LineDict) else f"{key}[{i}]"
        table = check.mapping(item, at, item_line, optional=item.keys() if isinstance(item, LineDict) else ())
        when = parse_when(check, table["when"], f"{at}.when", line_of(table, "when"), axes) if "when" in table else None
        values = _constant_values(check, table, at, set(axes))
        if not values:
            check.fail(item_line, at, "sets no constant")
        rules.append(ConstantRule(when, values))
    return tuple(rules)


def constants_at(rules: tuple[ConstantRule, ...], point: dict[str, AxisValue], index: RuleIndex | None = None) -> dict[str, int | str]:
    """The constants at ``point``: each matching entry in order, the later one
    winning. ``index``, a RuleIndex of ``rules``' whens, finds them without trying each."""
    values: dict[str, int | str] = {}
    for i in index.matching(point) if index is not None else range(len(rules)):
        if index is not None or matches(rules[i].when, point):
            values.update(rules[i].values)
    return values


@dataclass(frozen=True)
class Alternative:
    """One alternative of a family's signature or launch: its ``when`` (None:
    every point) and its fields, without the ``when``."""

    when: Rule | None
    fields: LineDict
    key: str
    line: int


def parse_alternatives(check: Checker, value: Any, key: str, line: int, axes: dict[str, tuple[AxisValue, ...]]) -> tuple[Alternative, ...]:
    """A section that is one mapping, or a list of mappings each with a ``when``
    (the last may leave it out: it matches the points no earlier one did)."""
    if not isinstance(value, LineList):
        table = check.mapping(value, key, line, optional=value.keys() if isinstance(value, LineDict) else ())
        if "when" in table:
            check.fail(line_of(table, "when"), f"{key}.when", "a single section applies everywhere; give a list of alternatives to choose by axis")
        return (Alternative(None, table, key, line),)
    items = check.sequence(value, key, line)
    if not items:
        check.fail(line, key, "must not be empty")
    alternatives = []
    for i, (item, item_line) in enumerate(zip(items, items.item_lines)):
        at = f"{key}[{i}]"
        table = check.mapping(item, at, item_line, optional=item.keys() if isinstance(item, LineDict) else ())
        if "when" not in table and i < len(items) - 1:
            check.fail(item_line, at, "needs a `when`; only the last alternative may leave it out")
        when = parse_when(check, table["when"], f"{at}.when", line_of(table, "when"), axes) if "when" in table else None
        fields = LineDict((k, v) for k, v in table.items() if k != "when")
        fields.line, fields.key_lines = table.line, {k: line_of(table, k) for k in fields}
        alternatives.append(Alternative(when, fields, at, item_line))
    return tuple(alternatives)


def choose(check: Checker, alternatives: tuple[Alternative, ...], point: dict[str, AxisValue], key: str, line: int, where: str) -> Alternative:
    """The first alternative whose ``when`` matches ``point``."""
    for alternative in alternatives:
        if matches(alternative.when, point):
            return alternative
    return check.fail(line, key, f"no alternative's `when` matches {where}")
