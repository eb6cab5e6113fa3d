"""The manifest's sections, each parsed and validated on its own: archs,
semirings, tiles, matrix blocks and excludes.

The family expansion in :mod:`aotc.build.manifest` combines them; nothing here
knows about templates or kernels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aotc.archs import DEFAULT_SASS, arch_sort_key, parse_arch
from aotc.build._checks import MAX_PARAMS, Checker, describe, line_of, listing
from aotc.build._yaml import LineDict, LineList, key_text
from aotc.build.abi import PASSES, TEMPLATE_STAGES, VARIANTS, Tile
from aotc.errors import ArchError, echo
from aotc.semiring import CONSTANTS, DTYPES, Semiring

__all__ = ["MATRIX_AXES", "Matrix", "parse_archs", "parse_excludes", "parse_matrices", "parse_semirings", "parse_tiles"]

MATRIX_AXES = ("semiring", "dtype", "pass", "variant")
_MAX_THREADS = 1024


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


def _parse_tile(check: Checker, value: Any, key: str, line: int) -> Tile:
    fields = check.mapping(
        value, key, line, required=("block_m", "block_n", "block_k", "thread_m", "thread_n"), optional=("stages",)
    )
    sizes = {name: check.positive_int(v, f"{key}.{name}", line_of(fields, name)) for name, v in fields.items()}
    tile = Tile(**sizes)
    if tile.stages not in TEMPLATE_STAGES:
        supported = " or ".join(map(str, TEMPLATE_STAGES))
        reason = f"expected {supported} (the pipeline depths the templates implement), got {tile.stages}"
        check.fail(line_of(fields, "stages"), f"{key}.stages", reason)
    for block, thread in (("block_m", "thread_m"), ("block_n", "thread_n")):
        if sizes[block] % sizes[thread]:
            check.fail(line, key, f"{block}={sizes[block]} is not a multiple of {thread}={sizes[thread]}")
    if tile.threads > _MAX_THREADS:
        check.fail(line, key, f"{tile.threads} threads per block exceed {_MAX_THREADS}")
    for block in ("block_m", "block_n"):
        if (sizes[block] * tile.block_k) % tile.threads:
            check.fail(line, key, f"{block}*block_k={sizes[block] * tile.block_k} is not a multiple of {tile.threads} threads")
    return tile


def _names(check: Checker, value: Any, key: str, line: int) -> tuple[str, ...]:
    """An exclude's axis: one name or a list of names."""
    if isinstance(value, str):
        return (value,)
    items = check.sequence(value, key, line)
    for item, item_line in zip(items, items.item_lines):
        if not isinstance(item, str):
            check.fail(item_line, key, f"expected a name, got {describe(item)}")
    return tuple(items)


@dataclass(frozen=True)
class Matrix:
    axes: dict[str, tuple[str, ...]]
    line: int
    tiles: dict[str, Tile]


def parse_matrices(
    check: Checker, value: Any, key: str, line: int, semirings: Mapping[str, Semiring], dtypes: tuple[str, ...]
) -> list[Matrix]:
    known = {"semiring": tuple(semirings), "dtype": dtypes, "pass": PASSES, "variant": VARIANTS}
    blocks = list(zip(value, value.item_lines)) if isinstance(value, LineList) else [(value, line)]
    if isinstance(value, LineList) and not value:
        check.fail(line, key, "must not be empty")
    matrices = []
    for index, (block, block_line) in enumerate(blocks):
        block_key = f"{key}[{index}]" if isinstance(value, LineList) else key
        fields = check.mapping(
            block, block_key, block_line, required=("semiring", "dtype", "pass"), optional=("variant", "tiles")
        )
        axes = {
            axis: check.choices(fields[axis], f"{block_key}.{axis}", line_of(fields, axis), known[axis], axis)
            for axis in MATRIX_AXES
            if axis in fields
        }
        axes.setdefault("variant", ("single",))
        tiles = {}
        if "tiles" in fields:
            tiles = parse_tiles(check, fields["tiles"], f"{block_key}.tiles", line_of(fields, "tiles"), dtypes)
        matrices.append(Matrix(axes, block_line, tiles))
    return matrices


def parse_tiles(check: Checker, value: Any, key: str, line: int, dtypes: tuple[str, ...]) -> dict[str, Tile]:
    """Tile sizes per dtype, or under ``default``."""
    tiles = check.mapping(value, key, line, optional=(*dtypes, "default"))
    return {dt: _parse_tile(check, v, f"{key}.{dt}", line_of(tiles, dt)) for dt, v in tiles.items()}


def parse_excludes(check: Checker, value: Any, key: str, line: int, matrices: list[Matrix]) -> list[dict[str, frozenset[str]]]:
    items = check.sequence(value, key, line)
    excludes = []
    for index, (item, item_line) in enumerate(zip(items, items.item_lines)):
        item_key = f"{key}[{index}]"
        fields = check.mapping(item, item_key, item_line, optional=MATRIX_AXES)
        if not fields:
            check.fail(item_line, item_key, "an exclude must name at least one of semiring, dtype, pass, variant")
        rule = {}
        for axis, raw_names in fields.items():
            names = _names(check, raw_names, f"{item_key}.{axis}", line_of(fields, axis))
            used = {n for m in matrices for n in m.axes[axis]}
            for name in names:
                if name not in used:
                    check.fail(line_of(fields, axis), f"{item_key}.{axis}", f"{echo(name)} is not in this family's matrix")
            rule[axis] = frozenset(names)
        excludes.append(rule)
    return excludes
