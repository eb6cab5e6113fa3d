"""One adapter per kind of array a call may be given, chosen once per type.

tvm-ffi converts each argument with a setter chosen once per Python type;
aotc does the same for arrays. ``kind_of(obj)`` finds the adapter of
``obj``'s library (learnt on the first sight of its type), and the adapter
answers every question a call asks of such an array (``ArrayKind``): read it
as an ``Operand``, copy it row-major, allocate a result like it (filled or
not) on a stream, whether it may be written, its framework's current stream,
and how to keep it alive until a stream is done. No other module switches on
what library made an array.

| kind | module | route |
| --- | --- | --- |
| NumPy arrays, and lists and ``__array_interface__`` objects NumPy reads | ``numpy`` | direct |
| PyTorch tensors | ``torch`` | the library's custom ops |
| ``__cuda_array_interface__`` (CuPy, pycuda, Numba) | ``cuda_array`` | direct |
| DLPack-only arrays (TensorFlow) | ``dlpack`` | direct |
| JAX arrays | ``jax`` | ``buffer_callback`` / jaxlib's launcher |

Each module is imported with the first array of its kind: importing aotc
imports none of NumPy, PyTorch or JAX.
"""

from __future__ import annotations

import sys

from aotc.arrays.kinds._base import ArrayKind
from aotc.errors import ArgumentTypeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.arrays.operands import Operand

__all__ = ["ArrayKind", "as_operand", "current_streams", "kind_of"]

# An array type's id -> its adapter, learnt on first sight. Keyed by the id
# (the type is kept in _SEEN, so its id is not reused): torch.compile guards a
# dict its trace reads by its keys, and cannot where a key is a class (the
# tensor types AOTAutograd meets are learnt during a compile).
_KINDS: dict[int, ArrayKind] = {}
_SEEN: list[type] = []


def kind_of(obj: Any, name: str) -> ArrayKind:
    """The adapter of ``obj``'s kind; one line naming ``name`` where it is no array aotc reads."""
    kind = _KINDS.get(id(type(obj)))
    if kind is None:
        kind = _probe(obj)
        if kind is None:
            msg = f"{name}: expected a NumPy array, a PyTorch tensor, a CUDA array or a DLPack array, got {type(obj).__name__}"
            raise ArgumentTypeError(msg)
        if kind.per_type:
            _SEEN.append(type(obj))
            _KINDS[id(type(obj))] = kind
    return kind


def as_operand(obj: Any, name: str) -> Operand:
    """The operand view of ``obj``; ``name`` is the argument's name for errors."""
    return kind_of(obj, name).read(obj, name)


def current_streams(device: int) -> tuple[int, ...]:
    """The current CUDA streams on ``device`` of the frameworks in use that keep
    one (PyTorch once it has initialised CUDA, CuPy): where a CUDA graph
    capture may be running (``streams.capture_candidates``)."""
    found = []
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    if cuda is not None and cuda.is_initialized():
        from aotc.arrays.kinds.torch import current_stream

        found.append(int(current_stream(torch.device("cuda", device))()))
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        from aotc.arrays.kinds.cuda_array import cupy_current_stream

        found.append(cupy_current_stream(cupy, device))
    return tuple(found)


def _probe(obj: Any) -> ArrayKind | None:
    module = type(obj).__module__.partition(".")[0]
    if module == "numpy" and hasattr(obj, "shape") and hasattr(obj, "__array_interface__"):
        from aotc.arrays.kinds.numpy import NUMPY

        return NUMPY
    torch = sys.modules.get("torch")  # a tensor cannot exist before torch is imported
    if torch is not None and isinstance(obj, torch.Tensor):  # subclasses too: the dispatcher must see them
        from aotc.arrays.kinds.torch import TORCH

        return TORCH
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(obj, getattr(jax, "Array", ())):
        from aotc.arrays.kinds.jax import JAX

        return JAX
    if hasattr(obj, "__cuda_array_interface__"):
        from aotc.arrays.kinds.cuda_array import cuda_array_kind

        return cuda_array_kind(obj)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        from aotc.arrays.kinds.dlpack import DLPACK

        return DLPACK
    if hasattr(obj, "__array_interface__") or isinstance(obj, (list, tuple)):
        from aotc.arrays.kinds.numpy import CONVERTED

        return CONVERTED
    return None
