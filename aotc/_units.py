"""Quantities written for a person: byte sizes in the CLI's tables and ``aotc doctor``'s report.

A leaf (standard library only), so that a command printing a size imports
nothing else for it.
"""

from __future__ import annotations

__all__ = ["byte_size"]


def byte_size(n: int) -> str:
    """``n`` bytes for a person: bytes under a KiB, else KiB to one decimal, MiB and GiB to two."""
    if n < 1024:
        return f"{n} B"
    if n < 1024**2:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024**2:.2f} MiB" if n < 1024**3 else f"{n / 1024**3:.2f} GiB"
