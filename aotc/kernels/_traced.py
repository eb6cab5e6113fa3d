"""What ``torch.compile`` runs, not traces: a binding's first-use work.

A call's first use loads an index entry, checks its kernels, makes the
layouts and registers the PyTorch ops: file reads, ``bytes.find``, a
``torch.library.Library``. Dynamo can trace none of it, and with
``fullgraph=True`` a compiled function whose first use is a traced call
would fail. So the function that does that work is one
``torch.compiler.assume_constant_result`` takes: dynamo calls it while
tracing, with its arguments as they are (guarded on their identity), and
keeps its result. That result is a str, the key of what was made (the
binding, the op) in ``MADE``, a module of its own, which dynamo then reads
as it reads any module's attribute, live: a constant result may not be an
object dynamo would have to guard, and a dict dynamo has read once in a
trace it would not read again.

``constant_when_traced`` marks a function the way that decorator does
(``tests/kernels/test_traced.py`` holds the two to the same mark), without
importing torch: aotc imports torch only once a tensor is seen.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MADE", "constant_when_traced", "keep", "made"]

# What torch._dynamo.assume_constant_result sets on a function (torch 2.4 and later).
MARK = "_dynamo_marked_constant"


def constant_when_traced(function: Any) -> Any:
    """Mark ``function`` as ``torch.compiler.assume_constant_result`` does; returns it."""
    setattr(function, MARK, True)
    return function


# What the marked functions made, by key.
MADE = type(sys)("aotc.kernels._traced.MADE")  # a module object; type(sys) spares importing types


def keep(key: str, value: Any) -> str:
    """Keep ``value`` under ``key`` in ``MADE``; returns the key (a marked function's result)."""
    setattr(MADE, key, value)
    return key


def made(key: str) -> Any:
    """What ``keep`` kept under ``key``."""
    return getattr(MADE, key)
