"""The ptxas resource report: registers, spills and shared memory per architecture.

nvcc prints it with ``--resource-usage``; the build keeps it beside each
kernel's object and the index carries the numbers, so a spill shows up in
``aotc inspect`` and in tests rather than only in a scrolled-away build log.
"""

from __future__ import annotations

import re

from aotc.errors import BuildError

__all__ = ["parse_resource_report"]

_ENTRY = re.compile(r"Compiling entry function '(?P<symbol>[^']+)' for '(?P<target>sm_\w+)'")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads")
_USED = re.compile(r"Used (?P<registers>\d+) registers(?:.*?(?P<smem>\d+) bytes smem)?")


def parse_resource_report(text: str, symbol: str) -> dict[str, dict[str, int]]:
    """Per SASS architecture (``"90"``), the resources ``symbol`` uses.

    A report of entry functions none of which is ``symbol`` is refused: the
    kernel was declared without ``extern "C"``, so its name in the fatbin is
    C++'s mangled one, which the runtime (looking it up by ``symbol``) would
    find on no GPU, while the emulator, which compiles the source as C++,
    would run it."""
    report: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    entries: list[str] = []
    for line in text.splitlines():
        if entry := _ENTRY.search(line):
            entries.append(entry["symbol"])
            current = None
            if entry["symbol"] == symbol:
                current = report.setdefault(entry["target"].removeprefix("sm_"), {})
        elif current is not None and (frame := _FRAME.search(line)):
            current.update(stack_bytes=int(frame["stack"]), spill_stores=int(frame["stores"]), spill_loads=int(frame["loads"]))
        elif current is not None and (used := _USED.search(line)):
            current.update(registers=int(used["registers"]), shared_bytes=int(used["smem"] or 0))
    if entries and symbol not in entries:
        msg = f"kernel {symbol}: its compiled entry function is {entries[0]!r}, not {symbol!r}: declare it extern \"C\" (a C++ name is mangled, and a GPU finds a kernel by its name)"
        raise BuildError(msg)
    return report
