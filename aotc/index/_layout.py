"""The build's layout of ``index.json``, written: what ``aotc.index._lines`` reads part by part.

The layout puts what a load, a family's first use and a kernel's first use
each need where they can read it alone::

    {
     "schema": 3,
     ...the rest of the top level, indented...,
     "kernel_index": {"kernels": 2, "families": [20, 900], "directory": [942, 1010], "table": [1026, 5100]}
    ,"kernel_families": {
    "softmax": {"axes": {"dtype": ["f32", "f64"]}, "forms": [...], "kernels": 2}
     },
     "kernel_lines": {"softmax_f32":[0,"softmax",["f32"],0],"softmax_f64":[2042,"softmax",["f64"],1]},
     "kernels": {
    "softmax_f32": {"family": "softmax", "symbol": ..., "axes": {...}, ...},
    "softmax_f64": {"family": "softmax", ...}
     }
    }

- ``kernel_index`` (one line, the top level's last key) says where the rest
  lies, in bytes from the end of its line: the family lines, the directory
  and the kernel lines. ``aotc.load`` reads the top level and this line,
  nothing else.
- ``kernel_families``: each family's catalog on its own line: its axes (each
  axis's values, in index order) and its forms, the signatures (with their
  params) its kernels are bound by, each once, with the values each axis
  takes among that form's kernels and the first kernel that has it. A
  family's first use reads its catalog, not its kernels.
- ``kernel_lines``, the directory: each kernel's line (its offset from the
  kernels table's opening brace, at the newline before it), its family, its
  axis values in the order of its family's ``axes``, and its form. A call's
  kernel is found here by its family, axis values and form (a ``bytes.find``).
- ``kernels``: one kernel a line, each opening with its family.

JSON strings hold no raw newline, so every newline is whitespace between
values, and each line of a table is one entry. The catalogs and the directory
are derived from the kernels (``derived``); a reader that checks the whole
index recomputes them here and holds the file to them.
"""

from __future__ import annotations

import json

from aotc.index.schema import (
    LAYOUT_CLOSE,
    LAYOUT_DIRECTORY,
    LAYOUT_FAMILIES,
    LAYOUT_INDEX,
    LAYOUT_KEYS,
    LAYOUT_TABLE,
    canonical_json,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

__all__ = ["derived", "directory_text", "point_text", "render"]

def derived(kernels: Iterable[tuple[str, Mapping[str, Any]]]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Each family's catalog (by family, in index order) and each kernel's
    directory row without its line offset (``[family, axis values, form]``),
    from the kernels' (name, entry) pairs, in index order. Entries are read as
    they are: a malformed one gives a catalog the reader refuses in the same
    words as the entry."""
    catalogs: dict[Any, dict[str, Any]] = {}
    forms: dict[Any, dict[bytes, tuple[int, dict[str, Any]]]] = {}  # family -> form's text -> (its index, the form)
    axes_of: dict[Any, dict[str, dict[Any, None]]] = {}
    placed: list[tuple[str, Any, Mapping[str, Any], int]] = []
    for name, entry in kernels:
        family = entry.get("family")
        if family not in catalogs:
            catalogs[family], forms[family], axes_of[family] = {"axes": {}, "forms": [], "kernels": 0}, {}, {}
        axes = entry.get("axes")
        axes = axes if isinstance(axes, dict) else {}
        key = canonical_json([entry.get("signature"), entry.get("params")])
        found = forms[family].get(key)
        if found is None:
            form = {"kernel": name, "signature": entry.get("signature"), "params": entry.get("params"), "axes": {}, "kernels": 0}
            found = forms[family][key] = (len(catalogs[family]["forms"]), form)
            catalogs[family]["forms"].append(form)
        number, form = found
        for axis, value in axes.items():
            # Ordered sets (dicts): a family of many kernels is read in linear time.
            axes_of[family].setdefault(axis, {})[value] = None
            form["axes"].setdefault(axis, {})[value] = None
        form["kernels"] += 1
        catalogs[family]["kernels"] += 1
        placed.append((name, family, axes, number))
    for family, catalog in catalogs.items():
        catalog["axes"] = {axis: list(values) for axis, values in axes_of[family].items()}
        for form in catalog["forms"]:
            form["axes"] = {axis: list(values) for axis, values in form["axes"].items()}
    rows = {name: [family, [axes.get(axis) for axis in catalogs[family]["axes"]], form] for name, family, axes, form in placed}
    return catalogs, rows


def point_text(values: list[Any]) -> str:
    """A kernel's axis values as the directory writes them: ``["maxplus",4]``."""
    return json.dumps(values, separators=(",", ":"))


def directory_text(rows: Mapping[str, list[Any]], offsets: Mapping[str, int]) -> str:
    """The directory's one line: each kernel's line offset, family, axis values and form."""
    parts = [f'"{name}":[{offsets.get(name, 0)},{json.dumps(family)},{point_text(point)},{form}]' for name, (family, point, form) in rows.items()]
    return "{" + ",".join(parts) + "}"


def render(index: Mapping[str, Any]) -> bytes:
    """The bytes of ``index`` (a whole document; any layout keys it holds are
    written anew) in the layout above; an index of no kernels as plain JSON."""
    kernels = index.get("kernels", {})
    top = {key: value for key, value in index.items() if key != "kernels" and key not in LAYOUT_KEYS}
    if not kernels:
        return (json.dumps({**top, "kernels": kernels}, indent=1) + "\n").encode("utf-8")
    catalogs, rows = derived(kernels.items())
    families = "\n" + ",\n".join(f"{json.dumps(str(family))}: {json.dumps(catalog)}" for family, catalog in catalogs.items())
    lines, offsets, offset = [], {}, 0
    for name, entry in kernels.items():
        # A kernel is found by its family: its line opens with it.
        ordered = {"family": entry["family"]} if "family" in entry else {}
        ordered.update((key, value) for key, value in entry.items() if key not in ordered)
        line = f"{json.dumps(name)}: {json.dumps(ordered)}"  # ASCII: json escapes the rest
        offsets[name] = offset  # at the newline before the line, from the table's opening brace
        lines.append(line)
        offset += len(line) + 2  # that newline, and the comma after the line
    table = "\n" + ",\n".join(lines)
    directory = directory_text(rows, offsets)
    start = len(LAYOUT_FAMILIES)
    spans = {"families": [start, start + len(families)]}
    start = spans["families"][1] + len("\n }") + len(LAYOUT_DIRECTORY)
    spans["directory"] = [start, start + len(directory)]
    start = spans["directory"][1] + len(LAYOUT_TABLE)
    spans["table"] = [start, start + len(table)]
    layout = json.dumps({"kernels": len(kernels), **spans}, separators=(",", ":"))
    head = json.dumps(top, indent=1)[: -len("\n}")]
    text = head + LAYOUT_INDEX + layout + "\n" + LAYOUT_FAMILIES + families + "\n }" + LAYOUT_DIRECTORY + directory + LAYOUT_TABLE + table + LAYOUT_CLOSE
    return text.encode("utf-8")
