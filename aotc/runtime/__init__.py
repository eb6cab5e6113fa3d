"""The run-time half of aotc: choosing, loading and launching kernel images.

Importing this package imports no backend and nothing heavy; each submodule
loads on first use.
"""

from __future__ import annotations

__all__: list[str] = []
