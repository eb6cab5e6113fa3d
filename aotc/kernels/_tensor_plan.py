"""Call plans for tensors inside a layout's op: a repeat op call as a key lookup and a launch.

The op's kernel (``_torch_ops``) receives tensors and runs the layout's
launch, which reads every argument, decides the kernel, dimensions and out
arrays, and launches. For tensors alike in shape, strides, dtype and device,
all of that but the data pointers and the new out tensors is the same every
call, so the first call leaves a plan under that key (``_keys``), and a
repeat reads the pointers, allocates the out tensors (filled where declared)
and launches on the stream the full path would use: the current stream of
the tensors' device (0 for CPU tensors on the emulator, which is then waited
for, as host memory must be).

A plan is made only where the full path used every tensor in place (no copy
of a strided input), and where the tensors' memory is the backend's own (CPU
tensors on a host-memory backend, CUDA tensors on a GPU backend). A written
tensor (inout, or an out tensor given) is checked every call against the
others' bytes, from spans the key fixes, as ``placement.output`` checks it:
where they meet the plan returns None and the full path names the overlap.
The first call on a device loads the kernel; a plan never does.
"""

from __future__ import annotations

import struct
import sys

from aotc.arrays.memory import on_host_memory
from aotc.arrays.kinds import as_operand
from aotc.arrays.operands import meets, span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._layout import Layout
    from aotc.kernels._shapes import Decision

__all__ = ["make_tensor_plan"]


def make_tensor_plan(
    layout: Layout, values: dict[str, Any], arrays: dict[str, Any], launcher: Any, arguments: list[Any], backend: Any,
    decision: Decision, *, outs_given: bool = False,
) -> Any:  # fmt: skip
    """The plan for the op call that just launched with ``arguments``, or None
    where none fits. ``outs_given``: the ``.out`` overload's, whose plan takes
    the out tensors after the given ones, checks them as it checks inout ones,
    fills them where declared, and returns them."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    first = values[layout.given[0]]
    names = layout.given + (layout.outs if outs_given else ())
    if any(arrays[name] is not values[name] for name in names):
        return None  # a strided input was copied: each call must copy again
    host = on_host_memory(backend)
    if host != (first.device.type == "cpu"):
        return None  # staged or unreachable memory: the full path's business
    device = first.device
    signature = decision.kernel.signature or ()
    layout_of_params = [(i, p.arg) for i, p in enumerate(signature) if not p.scalar]
    given = {name: i for i, name in layout_of_params if name in names}
    outs = [] if outs_given else [(i, arrays[name].shape, arrays[name].dtype, decision.fills.get(name)) for i, name in layout_of_params if name in layout.outs]
    fills = [(names.index(name), value) for name, value in decision.fills.items()] if outs_given else []
    returned = [names.index(name) for name in layout.outs] if outs_given else None
    scalars = [(i, p.arg) for i, p in enumerate(signature) if p.scalar and not p.dim and not p.extent]
    template = list(arguments)
    # Each written tensor against every other: the bounds of the pointer
    # difference at which their bytes meet.
    spans = {name: span(as_operand(arrays[name], name), arrays[name].element_size()) for name in names}
    apart = [
        (i, j, *meets(spans[other], spans[name]))
        for i, name in enumerate(names)
        if name in layout.results
        for j, other in enumerate(names)
        if other != name and 0 not in arrays[name].shape and 0 not in arrays[other].shape
    ]
    empty, full = torch.empty, torch.full
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
        from aotc.arrays.kinds.torch import current_stream

        wait = None
        current = current_stream(device)

    def plan(tensors: tuple[Any, ...], scalar_values: dict[str, Any]) -> tuple[Any, ...] | None:
        args = template.copy()
        try:
            for name, tensor in zip(names, tensors):
                args[given[name]] = tensor.data_ptr()
        except RuntimeError:
            return None  # no storage (a functorch wrapper that left its transform): the full path decides
        for i, j, low, high in apart:
            if low < args[given[names[i]]] - args[given[names[j]]] < high:
                return None  # a written tensor meets another's bytes: the full path says so
        results = []
        for i, shape, dtype, fill in outs:
            out = empty(shape, dtype=dtype, device=device) if fill is None else full(shape, fill, dtype=dtype, device=device)
            args[i] = out.data_ptr()
            results.append(out)
        for index, value in fills:
            tensors[index].fill_(value)
        for i, name in scalars:
            args[i] = scalar_values[name]
        try:
            params = pack(*args)
        except (struct.error, TypeError, OverflowError):
            return None  # a scalar the kernel cannot take: the full path names it
        stream = 0 if current is None else current()
        launch(function, geometry, stream, params)
        if wait is not None:
            wait(stream)  # host memory: the results are read once this returns
        return tuple(results) if returned is None else tuple(tensors[k] for k in returned)

    return plan
