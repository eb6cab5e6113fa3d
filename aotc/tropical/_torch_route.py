"""Which calls on PyTorch tensors go through the ``aotc::`` custom ops, and
the registry of library keys the ops name their library by.

A ``Tropical`` method given a tensor hands the call to ``aotc.tropical._torch``,
which calls the op; the op's kernel calls the same method back, which must
then run the product itself. ``inside_op`` marks that call back, per thread
(ops run on the caller's thread, or autograd's for a backward pass).

An op's ``library`` argument is a key naming one ``Tropical`` handle. Keys
are handed out when ``over()`` makes a handle, so that a call traced by
``torch.compile`` only reads one (registering takes a lock, which tracing
cannot enter). Both live here, not in ``_torch``, because they run before
anything imports torch.
"""

from __future__ import annotations

import sys
from _thread import _local, allocate_lock

from aotc.errors import ArgumentError, echo

TYPE_CHECKING = False  # no typing, threading or weakref at import: `import aotc.tropical` stays lean
if TYPE_CHECKING:
    from typing import Any

__all__ = ["handle", "inside_op", "library_key", "to_torch_op"]


class _InsideOp(_local):
    # A class default, so every thread reads False until an op sets it: a
    # compiled graph guards on the value, and must not see it appear.
    active = False


inside_op = _InsideOp()
_handles: Any = None  # key -> handle, weakly: made on first use (a WeakValueDictionary)
_lock = allocate_lock()
_KEY_ATTRIBUTE = "_torch_library_key"  # where a handle keeps its key: read on every call


def library_key(api: Any) -> str:
    """The registry key of the Tropical handle ``api``, given on first use: its
    library's name, or ``name#2``... when a live handle over another library
    of that name has it."""
    global _handles  # noqa: PLW0603 - the registry, made on first use under the lock
    key = getattr(api, _KEY_ATTRIBUTE, None)
    if key is None:
        with _lock:
            if _handles is None:
                import weakref

                _handles = weakref.WeakValueDictionary()
            key = getattr(api, _KEY_ATTRIBUTE, None)
            if key is None:
                name, number = str(getattr(api.library, "name", "library")), 1
                key = name
                while _handles.get(key) not in (None, api):
                    number += 1
                    key = f"{name}#{number}"
                _handles[key] = api
                setattr(api, _KEY_ATTRIBUTE, key)
    return key


def handle(key: str) -> Any:
    """The Tropical handle registered as ``key``."""
    api = _handles.get(key) if _handles is not None else None
    if api is None:
        known = ", ".join(_handles or ()) or "none"
        msg = f"library: no live aotc library is registered as {echo(key)} (known: {known})"
        raise ArgumentError(msg)
    return api


def to_torch_op(arrays: tuple[Any, ...], semiring: Any) -> bool:
    """Whether a call goes to ``_torch``: every array a tensor (a None after
    the first is an ``out=`` not given), the semiring a str or a str subclass (anything else
    gets the call path's own error), and not already an op's own call back."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(semiring, str) or inside_op.active:
        return False
    if not isinstance(arrays[0], torch.Tensor):
        return False
    for array in arrays[1:]:
        if array is not None and not isinstance(array, torch.Tensor):
            return False
    return True

