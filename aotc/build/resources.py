"""The ptxas resource report: registers, spills and shared memory per architecture.

nvcc prints it with ``--resource-usage``; the build keeps it beside each
kernel's object and the index carries the numbers, so a spill shows up in
``aotc inspect`` and in tests rather than only in a scrolled-away build log.
"""

from __future__ import annotations

import re

__all__ = ["parse_resource_report"]

_ENTRY = re.compile(r"Compiling entry function '(?P<symbol>[^']+)' for '(?P<target>sm_\w+)'")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads")
_USED = re.compile(r"Used (?P<registers>\d+) registers(?:.*?(?P<smem>\d+) bytes smem)?")


def parse_resource_report(text: str, symbol: str) -> dict[str, dict[str, int]]:
    """Per SASS architecture (``"90"``), the resources ``symbol`` uses."""
    report: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        if entry := _ENTRY.search(line):
            current = None
            if entry["symbol"] == symbol:
                current = report.setdefault(entry["target"].removeprefix("sm_"), {})
        elif current is not None and (frame := _FRAME.search(line)):
            current.update(stack_bytes=int(frame["stack"]), spill_stores=int(frame["stores"]), spill_loads=int(frame["loads"]))
        elif current is not None and (used := _USED.search(line)):
            current.update(registers=int(used["registers"]), shared_bytes=int(used["smem"] or 0))
    return report
