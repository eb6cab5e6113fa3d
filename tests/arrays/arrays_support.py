"""Array stand-ins the tests of several folders share (``from arrays.arrays_support import ...``).

Not a conftest.py (see tests/runtime/runtime_support.py).
"""

from __future__ import annotations

from typing import Any

__all__ = ["DLPackOnly"]


class DLPackOnly:
    """An array that exposes only ``__dlpack__`` and ``__dlpack_device__``, as JAX
    and TensorFlow arrays do, over any array that has both (NumPy, an emulated
    device array)."""

    def __init__(self, array: Any) -> None:
        self._array = array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._array.__dlpack_device__()
