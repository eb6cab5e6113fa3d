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
from aotc.kernels._arguments import CONVERTED, F32_FINITE_PAST, scalar_argument

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
    if torch is None or len(decision.launches) != 1:
        return None  # a grid launched in parts, or not at all, takes the full path every call
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
    # The out tensors a plan makes (in the signature's order), or, for the
    # .out overload, those it fills and returns.
    made = [] if outs_given else [(name, tuple(arrays[name].shape), arrays[name].dtype, decision.fills.get(name)) for _, name in layout_of_params if name in layout.outs]
    fills = decision.fills if outs_given else {}
    returned = tuple(names.index(name) for name in layout.outs) if outs_given else None
    scalars = [(i, p.arg) for i, p in enumerate(signature) if p.scalar and not p.dim and not p.extent]
    # Each written tensor against every other: the bounds of the pointer
    # difference at which their bytes meet.
    spans = {name: span(as_operand(arrays[name], name), arrays[name].element_size()) for name in names}
    apart = [
        (name, other, *meets(spans[other], spans[name]))
        for name in names
        if name in layout.results
        for other in names
        if other != name and 0 not in arrays[name].shape and 0 not in arrays[other].shape
    ]
    # Pointers first and every other parameter fixed by the key: only the
    # pointers are packed per call (as the NumPy plans do); else all of it.
    lead = next((i for i, p in enumerate(signature) if p.scalar), len(signature))
    split = not scalars and lead == len(layout_of_params)
    # The grid follows from the key's shapes: bound once, as the NumPy plans' is
    # (an empty grid has none: the launcher's own call then skips the launch).
    bound = launcher.bind(arguments, lead if split else len(arguments))
    if bound is None:
        return None
    if host:
        wait, current = backend.stream_synchronize, None
    else:
        from aotc.arrays.kinds.torch import current_stream

        wait, current = None, current_stream(device)
    recipe = tuple(
        ("p", p.arg) if not p.scalar else ("c", i) if p.dim or p.extent else ("v", (p.arg, p.dtype)) if p.dtype in CONVERTED
        else ("f", p.arg) if p.dtype == "f32" else ("a", p.arg)
        for i, p in enumerate(signature[: lead if split else len(signature)])
    )
    factory = _factory(names, recipe, tuple(m[0] for m in made), tuple(fills), returned, tuple((n, o) for n, o, _, _ in apart), current is not None, wait is not None)
    return factory(
        bound, {name: (shape, dtype, device, fill) for name, shape, dtype, fill in made}, fills,
        {(n, o): (low, high) for n, o, low, high in apart}, dict(enumerate(arguments)), torch.empty, torch.full, current, wait,
    )  # fmt: skip


_factories: dict[tuple[Any, ...], Any] = {}


def _factory(names: tuple[str, ...], recipe: tuple[tuple[str, Any], ...], made: tuple[str, ...], filled: tuple[str, ...],
             returned: list[int] | None, apart: tuple[tuple[str, str], ...], streamed: bool, waits: bool) -> Any:  # fmt: skip
    """The plan factory for this shape of plan, generated once: the tensors'
    names, how the parameters are packed, the out tensors it makes, those it
    fills, what it returns, the overlaps it checks and how it picks its stream."""
    key = (names, recipe, made, filled, tuple(returned) if returned is not None else None, apart, streamed, waits)
    found = _factories.get(key)
    if found is None:
        found = _factories[key] = _generate(*key)
    return found


def _generate(names: tuple[str, ...], recipe: tuple[tuple[str, Any], ...], made: tuple[str, ...], filled: tuple[str, ...],
              returned: tuple[int, ...] | None, apart: tuple[tuple[str, str], ...], streamed: bool, waits: bool) -> Any:  # fmt: skip
    """The source of a plan factory, compiled. Its names are the layout's validated
    binding names, prefixed, and our own text (as ``_entry``'s)."""
    lines = [
        "def _aotc_factory(_aotc_bound, _aotc_made, _aotc_fills, _aotc_apart, _aotc_constants, _aotc_empty, _aotc_full, _aotc_current, _aotc_wait):",
        "    _aotc_launch, _aotc_function, _aotc_shape = _aotc_bound.launch, _aotc_bound.function, _aotc_bound.shape",
        "    _aotc_pack, _aotc_tail = _aotc_bound.pack_head, _aotc_bound.tail",
    ]
    lines += [f"    _aotc_c{i} = _aotc_constants[{i}]" for part, i in recipe if part == "c"]
    lines += [f"    _aotc_shape_{n}, _aotc_dtype_{n}, _aotc_device_{n}, _aotc_fill_{n} = _aotc_made[{n!r}]" for n in made]
    lines += [f"    _aotc_value_{n} = _aotc_fills[{n!r}]" for n in filled]
    lines += [f"    _aotc_low_{n}_{o}, _aotc_high_{n}_{o} = _aotc_apart[({n!r}, {o!r})]" for n, o in apart]
    lines += [
        "    def plan(_aotc_tensors, _aotc_scalars):",
        f"        {''.join(f'{n}, ' for n in names)}= _aotc_tensors",
        "        try:",
        *[f"            _aotc_p_{n} = {n}.data_ptr()" for n in names],
        "        except RuntimeError:",
        "            return None  # no storage (a functorch wrapper that left its transform): the full path decides",
    ]
    for n, o in apart:  # a written tensor that meets another's bytes: the full path says so
        lines += [f"        if _aotc_low_{n}_{o} < _aotc_p_{n} - _aotc_p_{o} < _aotc_high_{n}_{o}:", "            return None"]
    for n in made:
        lines += [
            f"        if _aotc_fill_{n} is None:",
            f"            {n} = _aotc_empty(*_aotc_shape_{n}, dtype=_aotc_dtype_{n}, device=_aotc_device_{n})",
            "        else:",
            f"            {n} = _aotc_full(_aotc_shape_{n}, _aotc_fill_{n}, dtype=_aotc_dtype_{n}, device=_aotc_device_{n})",
            f"        _aotc_p_{n} = {n}.data_ptr()",
        ]
    lines += [f"        {n}.fill_(_aotc_value_{n})" for n in filled]
    packed = ", ".join(_packed(part, name) for part, name in recipe)
    lines += [
        "        try:",
        *[f"            if {F32_FINITE_PAST.format(f'_aotc_scalars[{name!r}]')}:\n                return None  # the full path refuses it" for part, name in recipe if part == "f"],
        f"            _aotc_params = _aotc_pack({packed}) + _aotc_tail",
        "        except (struct.error, TypeError, OverflowError):",
        "            return None  # a scalar the kernel cannot take: the full path names it",
        f"        _aotc_stream = {'_aotc_current()' if streamed else '0'}",
        "        _aotc_launch(_aotc_function, _aotc_shape, _aotc_stream, _aotc_params)",
    ]
    if waits:
        lines.append("        _aotc_wait(_aotc_stream)  # host memory: the results are read once this returns")
    results = made if returned is None else tuple(names[k] for k in returned)
    lines += [f"        return ({''.join(f'{n}, ' for n in results)})", "    return plan", ""]
    namespace: dict[str, Any] = {"struct": struct, "_aotc_scalar": scalar_argument}
    exec(compile("\n".join(lines), "<aotc tensor plan>", "exec"), namespace)
    return namespace["_aotc_factory"]


def _packed(part: str, name: Any) -> str:
    """The expression a plan packs for one parameter of its recipe: a pointer, a
    constant, the caller's scalar, or ("v") one converted as the full path does."""
    if part == "p":
        return f"_aotc_p_{name}"
    if part == "c":
        return f"_aotc_c{name}"
    if part == "v":
        arg, kind = name
        return f"_aotc_scalar(_aotc_scalars[{arg!r}], {arg!r}, {kind!r})"
    return f"_aotc_scalars[{name!r}]"  # "a", and "f" (an f32, checked before the packing)
