"""Call plans for tensors inside a declared family's op: a repeat op call as a key lookup and a launch.

The op's kernel (``_torch_ops``) receives tensors and runs ``Family.launch``,
which reads every argument, decides the kernel, dimensions and out arrays,
and launches. For tensors alike in shape, strides, dtype and device, all of
that but the data pointers and the new out tensors is the same every call,
so the first call leaves a plan under that key, and a repeat reads the
pointers, allocates the out tensors and launches on the stream the full path
would use: the current stream of the tensors' device (0 for CPU tensors on the
emulator, which is then waited for, as host memory must be).

A plan is made only where the full path used every tensor in place (no
copy of a strided input), and where the tensors' memory is the backend's own
(CPU tensors on a host-memory backend, CUDA tensors on a GPU backend). An
inout tensor is checked every call against the others' bytes, from spans
the key fixes, as ``placement.output`` checks it: where they meet the plan
returns None and the full path names the overlap. The first call on a
device loads the kernel; a plan never does.
"""

from __future__ import annotations

import struct
import sys

from aotc.arrays.memory import on_host_memory
from aotc.arrays.operands import as_operand, meets, span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._family import Family

__all__ = ["MAX_PLANS", "make_tensor_plan", "tensor_key"]

MAX_PLANS = 256  # per family, as the NumPy plans


def tensor_key(tensors: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """What a plan is found by: each given tensor's shape, strides, dtype and device, and the axes given."""
    key: list[Any] = [tuple(kwargs.items())]
    for tensor in tensors:
        key += [tensor.shape, tensor.stride(), tensor.dtype, tensor.device]
    return tuple(key)


def make_tensor_plan(
    family: Family, values: dict[str, Any], arrays: dict[str, Any], launcher: Any, arguments: list[Any], backend: Any, *, outs_given: bool = False
) -> Any:
    """The plan for the op call that just launched with ``arguments``, or None
    where none fits. ``outs_given``: the ``.out`` overload's, whose plan takes
    the out tensors after the given ones, checks them as it checks inout ones,
    and returns them."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    first = values[family.given[0]]
    names = family.given + (family.outs if outs_given else ())
    if any(arrays[name] is not values[name] for name in names):
        return None  # a strided input was copied: each call must copy again
    host = on_host_memory(backend)
    if host != (first.device.type == "cpu"):
        return None  # staged or unreachable memory: the full path's business
    device = first.device
    layout = [(i, param.name) for i, param in enumerate(family.params) if not param.scalar]
    given = {name: i for i, name in layout if name in names}
    outs = [] if outs_given else [(i, arrays[name].shape, arrays[name].dtype) for i, name in layout if name in family.outs]
    returned = [names.index(name) for name in family.outs] if outs_given else None
    scalars = [(i, param.name) for i, param in enumerate(family.params) if param.scalar and not param.dim]
    template = list(arguments)
    # Each written tensor (inout, or an out one given; by its place among the
    # tensors) against every other: the bounds of the pointer difference at
    # which their bytes meet.
    spans = {name: span(as_operand(arrays[name], name), arrays[name].element_size()) for name in names}
    apart = [
        (i, j, *meets(spans[other], spans[name]))
        for i, name in enumerate(names)
        if name in family.results
        for j, other in enumerate(names)
        if other != name and 0 not in arrays[name].shape and 0 not in arrays[other].shape
    ]
    empty = torch.empty
    # The grid follows from the key's shapes: bound once, as the NumPy plans' is
    # (an empty grid has none: the launcher's own call then skips the launch).
    bound = launcher.bind(arguments, len(arguments))
    if bound is None:
        return None
    pack, launch, function, geometry = bound.pack_head, bound.launch, bound.function, bound.shape
    if host:
        wait = backend.stream_synchronize
        current = None
    else:
        wait = None
        current = torch.cuda.current_stream

    def plan(tensors: tuple[Any, ...], scalar_values: dict[str, Any]) -> tuple[Any, ...] | None:
        args = template.copy()
        for name, tensor in zip(names, tensors):
            args[given[name]] = tensor.data_ptr()
        for i, j, low, high in apart:
            if low < args[given[names[i]]] - args[given[names[j]]] < high:
                return None  # an inout tensor meets another's bytes: the full path says so
        results = []
        for i, shape, dtype in outs:
            out = empty(shape, dtype=dtype, device=device)
            args[i] = out.data_ptr()
            results.append(out)
        for i, name in scalars:
            args[i] = scalar_values[name]
        try:
            params = pack(*args)
        except (struct.error, TypeError, OverflowError):
            return None  # a scalar the kernel cannot take: the full path names it
        stream = 0 if current is None else current(device).cuda_stream
        launch(function, geometry, stream, params)
        if wait is not None:
            wait(stream)  # host memory: the results are read once this returns
        return tuple(results) if returned is None else tuple(tensors[k] for k in returned)

    return plan
