"""How ``aotc warm`` reports each kernel: a line per kernel, or one progress line on a terminal.

A log (CI, a file, a pipe) gets one line per kernel on stdout, failures on
stderr, so it can be read and grepped afterwards. On a terminal, hundreds of
such lines scroll away the few that matter, so stderr shows one line
rewritten in place, ``[12/84] gemm_maxplus_f32_forward compiled``; failures
still get a line of their own, and the reasons kernels were not needed are
counted once at the end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from aotc.runtime.warm import COMPILED, FAILED, NOT_NEEDED, WarmResult

__all__ = ["LineReport", "ProgressReport", "make_report"]

_ERASE_TO_END = "\x1b[K"  # ANSI: clear the rest of the line, so a shorter line leaves nothing behind


class LineReport:
    """One line per kernel: outcome, name, and the time or the reason."""

    def __init__(self, kernels: Sequence[str], out: TextIO, err: TextIO) -> None:
        self._width = max(map(len, kernels), default=0)
        self._out, self._err = out, err

    def result(self, result: WarmResult) -> None:
        detail = f"{result.seconds:.2f} s" if result.outcome == COMPILED else result.detail
        line = f"  {result.outcome:<10}  {result.kernel:<{self._width}}  {detail}".rstrip()
        print(line, file=self._err if result.outcome == FAILED else self._out, flush=True)

    def finish(self) -> None:
        return None


class ProgressReport:
    """``[done/total] kernel outcome`` rewritten in place on ``err``, a terminal."""

    def __init__(self, kernels: Sequence[str], out: TextIO, err: TextIO) -> None:
        self._total = len(kernels)
        self._done = 0
        self._out, self._err = out, err
        self._not_needed: Counter[str] = Counter()

    def result(self, result: WarmResult) -> None:
        self._done += 1
        if result.outcome == FAILED:
            # Kept on screen: the progress line that follows is written below it.
            self._err.write(f"\r{_ERASE_TO_END}  {FAILED:<10}  {result.kernel}  {result.detail}\n")
        elif result.outcome == NOT_NEEDED:
            self._not_needed[result.detail] += 1
        self._err.write(f"\r[{self._done}/{self._total}] {result.kernel} {result.outcome}{_ERASE_TO_END}")
        self._err.flush()

    def finish(self) -> None:
        if self._done:
            self._err.write(f"\r{_ERASE_TO_END}")  # the summary that follows says it all
            self._err.flush()
        for reason, count in self._not_needed.most_common():
            noun = "kernel" if count == 1 else "kernels"
            print(f"  {NOT_NEEDED:<10}  {count} {noun}: {reason}", file=self._out, flush=True)


def make_report(kernels: Sequence[str], out: TextIO, err: TextIO) -> LineReport | ProgressReport:
    """Progress in place where ``err`` is a terminal, else a line per kernel."""
    isatty = getattr(err, "isatty", None)
    interactive = bool(isatty and isatty())
    return (ProgressReport if interactive else LineReport)(kernels, out, err)
