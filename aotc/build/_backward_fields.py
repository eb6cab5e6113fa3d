"""A declared family's ``backward:``: the family that computes its gradients.

``backward: {family: softmax_backward, saves: [y]}`` pairs a family with
another declared family of the same manifest, whose parameters are named by
a convention (README, "Any kernel"):

- an in array ``grad_<o>`` takes the gradient of the forward's out or inout
  array ``o``; an in array named as one of ``saves`` takes that array of the
  forward call (an input, or a result);
- an out array ``grad_<i>`` is the gradient of the forward's in array ``i``;
- a scalar argument is the forward call's argument of the same name and type.

Each pairing is checked here, once every family is expanded, each problem one
line naming the forward family's ``backward`` key. The runtime registers the
autograd formula from it (``aotc.kernels._torch_ops``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aotc.build._checks import Checker, describe, line_of, listing
from aotc.build._yaml import LineDict, LineList
from aotc.build.signature import ArrayParam, ScalarParam, Signature

__all__ = ["Backward", "Gradient", "check_backward", "parse_backward", "resolve_backward"]


@dataclass(frozen=True)
class Backward:
    """The family computing a family's gradients, and the forward arrays it keeps."""

    family: str
    saves: tuple[str, ...]
    line: int



@dataclass(frozen=True)
class Gradient:
    """A kernel's backward resolved to kernel names, as the index records it: its
    gradient kernels with the forward arrays each saves, or its route (the
    kernel it is differentiated through)."""

    kernels: tuple[tuple[str, tuple[str, ...]], ...] = ()
    through: str = ""

    def to_json(self) -> dict[str, object]:
        if self.through:
            return {"through": self.through}
        return {"kernels": [{"kernel": name, "saves": list(saves)} for name, saves in self.kernels]}


def parse_backward(check: Checker, value: Any, key: str, line: int) -> Backward:
    """The ``backward:`` mapping's own shape; ``check_backward`` checks the pairing."""
    fields = check.mapping(value, key, line, required=("family",), optional=("saves",))
    family = check.identifier(fields["family"], f"{key}.family", line_of(fields, "family"))
    saves: list[str] = []
    if "saves" in fields:
        raw = fields["saves"]
        if not isinstance(raw, LineList):
            check.fail(line_of(fields, "saves"), f"{key}.saves", f"expected a list of array names, got {describe(raw)}")
        for item, item_line in zip(raw, raw.item_lines):
            saves.append(check.identifier(item, f"{key}.saves", item_line))
    return Backward(family, tuple(saves), line)


def check_backward(check: Checker, key: str, forward: str, backward: Backward, signatures: dict[str, Signature], axes: dict[str, dict[str, Any]]) -> None:
    """Hold ``forward``'s pairing to the convention; ``signatures`` and ``axes`` are every declared family's."""
    at = f"{key}.backward"
    if backward.family not in signatures or backward.family == forward:
        others = [name for name in signatures if name != forward]
        check.fail(backward.line, f"{at}.family", f"{backward.family!r} is not another declared family of this manifest (declared: {listing(others) or 'none'})")
    mine, theirs = signatures[forward], signatures[backward.family]
    arrays = {p.name: p for p in mine.params if isinstance(p, ArrayParam)}
    inout = [name for name, p in arrays.items() if p.role == "inout"]
    if inout:
        check.fail(backward.line, at, f"{forward} writes {inout[0]} in place (inout); autograd pairs only families whose results are out arrays")
    arguments = {p.name: p.type for p in mine.params if isinstance(p, ScalarParam) and not p.dim}
    for name in backward.saves:
        if name not in arrays:
            check.fail(backward.line, f"{at}.saves", f"{name!r} is not an array of {forward} (arrays: {listing(arrays)})")
    gradients = 0
    for param in theirs.params:
        where = f"{backward.family}'s parameter {param.name}"
        if isinstance(param, ScalarParam):
            if not param.dim and arguments.get(param.name) != param.type:
                check.fail(backward.line, at, f"{where} is a {param.type} argument {forward} does not take")
            continue
        target = param.name.removeprefix("grad_")
        if param.role == "out":
            if not param.name.startswith("grad_") or target not in arrays or arrays[target].role != "in":
                ins = [f"grad_{n}" for n, p in arrays.items() if p.role == "in"]
                check.fail(backward.line, at, f"{where} is an out array, so it must be the gradient of an in array of {forward} ({listing(ins)})")
            gradients += 1
        elif param.name in backward.saves:
            continue
        elif not param.name.startswith("grad_") or target not in arrays or arrays[target].role == "in":
            results = [f"grad_{n}" for n, p in arrays.items() if p.role != "in"]
            check.fail(backward.line, at, f"{where} is neither the gradient of a result of {forward} ({listing(results)}) nor a saved array (saves: {listing(backward.saves) or 'none'})")
    if not gradients:
        check.fail(backward.line, at, f"{backward.family} has no out array grad_<in array>: it computes no gradient")
    for axis, values in axes[backward.family].items():
        if len(values) > 1 and axis not in axes[forward]:
            check.fail(backward.line, at, f"{backward.family}'s axis {axis} has several values and {forward} has no axis of that name to pass on")


def resolve_backward(check: Checker, key: str, backward: Backward, axes: dict[str, Any], kernels: dict[str, dict[tuple[tuple[str, Any], ...], str]]) -> Gradient:
    """The gradient of the forward kernel at ``axes``: family ``backward.family``'s
    kernel at the same values of the axes it has (``kernels``: each family's
    kernels by their points)."""
    found = [name for point, name in kernels[backward.family].items() if all(axes.get(axis, value) == value for axis, value in point)]
    if len(found) != 1:
        where = ", ".join(f"{a}={v}" for a, v in axes.items())
        what = "no kernel" if not found else f"{len(found)} kernels ({listing(found)})"
        check.fail(backward.line, f"{key}.backward", f"at {where}, {backward.family} has {what} at those axis values; a gradient is one kernel")
    return Gradient(((found[0], backward.saves),))


def backward_field(fields: LineDict, check: Checker, key: str) -> Backward | None:
    """The family's ``backward:``, if it has one."""
    if "backward" not in fields:
        return None
    return parse_backward(check, fields["backward"], f"{key}.backward", line_of(fields, "backward"))
