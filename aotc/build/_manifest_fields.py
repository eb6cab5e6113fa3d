"""The manifest's top-level tables, each parsed and validated on its own: the
architectures, and the semirings (template data the tropical templates read).

A family's own sections are :mod:`aotc.build._family_fields`'; nothing here
knows about templates or kernels.
"""

from __future__ import annotations

from typing import Any

from aotc.archs import DEFAULT_SASS, arch_sort_key, parse_arch
from aotc.build._checks import MAX_PARAMS, Checker, describe, line_of, listing
from aotc.build._yaml import LineDict, key_text
from aotc.errors import ArchError, echo
from aotc.semiring import CONSTANTS, DTYPES, Semiring

__all__ = ["parse_archs", "parse_semirings"]


def parse_archs(check: Checker, value: Any, line: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(SASS, PTX) architectures; PTX defaults to the highest SASS one."""
    if value is None:
        return DEFAULT_SASS, (DEFAULT_SASS[-1],)
    archs = check.mapping(value, "archs", line, optional=("sass", "ptx"))

    def arch_list(key: str) -> tuple[str, ...]:
        items = check.sequence(archs[key], f"archs.{key}", line_of(archs, key))
        result: list[str] = []
        for item, item_line in zip(items, items.item_lines):
            try:
                arch = parse_arch(item)
            except ArchError as exc:
                check.fail(item_line, f"archs.{key}", str(exc))
            if arch in result:
                check.fail(item_line, f"archs.{key}", f"architecture {arch} is listed twice")
            result.append(arch)
        return tuple(sorted(result, key=arch_sort_key))

    sass = arch_list("sass") if "sass" in archs else DEFAULT_SASS
    ptx = arch_list("ptx") if "ptx" in archs else (max(sass, key=arch_sort_key),)
    return sass, ptx


def _constant(check: Checker, value: Any, key: str, line: int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = {float("inf"): "+inf", float("-inf"): "-inf"}.get(value, str(value))
        text = {"0.0": "0", "1.0": "1"}.get(text, text)
    elif isinstance(value, str):
        text = {"inf": "+inf"}.get(value.strip().lower(), value.strip().lower())
    else:
        check.fail(line, key, f"expected a constant, got {describe(value)}")
    if text not in CONSTANTS:
        check.fail(line, key, f"unknown constant {echo(value)} (known: {listing(CONSTANTS)})")
    return text


def parse_semirings(check: Checker, value: Any, line: int) -> tuple[Semiring, ...]:
    table = check.mapping(value, "semirings", line, optional=value.keys() if isinstance(value, LineDict) else ())
    if not table:
        check.fail(line, "semirings", "must not be empty")
    check.at_most(len(table), MAX_PARAMS, line, "semirings", "semirings")
    result = []
    for name, spec in table.items():
        key, name_line = f"semirings.{key_text(name)}", line_of(table, name)
        check.identifier(name, key, name_line)
        fields = check.mapping(spec, key, name_line, required=("add", "mul", "zero", "one"), optional=("counting",))
        counting = fields.get("counting", False)
        if not isinstance(counting, bool):
            check.fail(line_of(fields, "counting"), f"{key}.counting", f"expected true or false, got {describe(counting)}")
        zero = _constant(check, fields["zero"], f"{key}.zero", line_of(fields, "zero"))
        one = _constant(check, fields["one"], f"{key}.one", line_of(fields, "one"))
        semiring = Semiring(name, fields["add"], fields["mul"], zero, one, counting)
        try:
            semiring.validate()
        except ValueError as exc:
            field, _, reason = str(exc).partition(": ")
            check.fail(line_of(fields, field), f"{key}.{field}", reason)
        if not any(semiring.supports(d) for d in DTYPES.values()):
            check.fail(name_line, key, f"operations {semiring.add}/{semiring.mul} fit no dtype")
        result.append(semiring)
    return tuple(result)
