"""The launch: one call's arrays read, placed, checked, allocated, staged and launched.

Every route ends here: the generated entry's full path, the PyTorch ops'
kernels, the JAX callbacks, the gradients. For arguments bound by name:

1. read each in and inout array once (``aotc.arrays``), on one device;
2. the call's stream: the one given, or the first array's library's current one;
3. decide (``_decision``): the kernel, dimensions, out arrays and grid, each
   refusal one line, before anything is copied or allocated;
4. arrays the backend cannot reach are refused; an in array is used where it
   lies where the kernel reads it so (row-major, or by its declared strides),
   else copied by its library; inout and given out arrays are checked
   (writable, row-major, clear of every other array's bytes); the other out
   arrays are allocated like the first array, on the call's stream, filled
   where the manifest says;
5. the call's stream waits for the arrays' producers; host arrays are used in
   place on the emulator and staged on a GPU (``aotc.arrays.memory``);
6. the decision's launches, with the parameters in the kernel's order: one,
   or one a part of a grid past CUDA's limits (each with its split offsets),
   or none for a grid with an extent of 0 (the out arrays made and filled);
7. where the caller gives the key of its route's plan, the launch made
   becomes that plan (``_replay``), kept in the layout's store.
"""

from __future__ import annotations

from aotc.arrays.memory import Memory, on_host_memory
from aotc.arrays.kinds import as_operand
from aotc.arrays.operands import is_row_major
from aotc.arrays.placement import device_of, output, stream_handle
from aotc.arrays.streams import hold_until_done, wait_for_producers
from aotc.errors import ArgumentError, ArgumentTypeError, BackendError, called, echo
from aotc.kernels._arguments import scalar_argument
from aotc.kernels._decision import decided
from aotc.kernels._replay import Launched, plan_from

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.arrays.operands import Operand
    from aotc.index import DeclaredParam
    from aotc.kernels._decision import Decision

__all__ = ["decision_for", "launch"]


# Called with the layout at every launch the full path makes (tests count plans' misses with it).
FULL_PATH_HOOKS: list[Any] = []


def launch(layout: Any, values: dict[str, Any], axes: dict[str, Any], stream: Any, key: Any = None) -> dict[str, Any]:
    """The launch of ``layout`` on arguments bound by binding name; returns every
    array by name (the out arrays made or given, the inout arrays written).
    Where ``key`` is given, the launch made becomes the plan kept under it.
    A refusal names the layout as the function called, unless a call over it
    (the entry, an API) named one."""
    for hook in FULL_PATH_HOOKS:
        hook(layout)
    try:
        return _launch(layout, values, axes, stream, key)
    except (ArgumentError, ArgumentTypeError) as exc:
        called(exc, layout.name)
        raise
    except BackendError as exc:
        refusal = _no_such_stream(stream, exc)
        if refusal is None:
            raise
        raise called(refusal, layout.name) from None


def _no_such_stream(stream: Any, error: BackendError) -> ArgumentError | None:
    """The caller's ``stream=`` refused in one line naming it, where ``error`` is the
    backend's refusal of its handle (an int that names no stream on the call's
    device: the emulator's and the driver's CUDA_ERROR_INVALID_HANDLE); else None.
    Only the backend can tell a handle from any other int, and only when it is used."""
    if stream is None or error.cuda_error != "CUDA_ERROR_INVALID_HANDLE":
        return None
    return ArgumentError(f"stream: {echo(stream)} is no stream of the call's device ({error})")


def _launch(layout: Any, values: dict[str, Any], axes: dict[str, Any], stream: Any, key: Any) -> dict[str, Any]:
    library = layout.library
    ops = {name: as_operand(values[name], name) for name in layout.given}
    first_name = layout.given[0]
    first = ops[first_name]
    device = device_of(first, first_name, library)
    for name, op in ops.items():
        if op.device != first.device and device_of(op, name, library) != device:
            msg = f"{name}: on {op.device}, but {first_name} is on {first.device}"
            raise ArgumentError(msg)
    given_stream, handle = stream, stream_handle(stream, first)
    decision = decision_for(layout, ops, values, axes)
    params = decision.params
    backend = library.backend_on(device)
    host_memory = on_host_memory(backend)
    memory = Memory(backend, host_memory, handle)
    for name, op in ops.items():
        memory.check(op, name)  # an array this backend cannot reach, before any copy
    # The kernel is loaded before any copy or allocation: a load that fails
    # (or that a stream capture refuses) leaves nothing behind.
    launcher = library.kernel(decision.kernel.name, device, handle)
    inputs: list[tuple[Operand, str]] = []
    copied = []
    for name in layout.given:
        op, declared = ops[name], params[name]
        if declared.role == "inout":
            op = output(values[name], name, first, op.shape, op.dtype, tuple(inputs), library, handle, like_name=first_name)
        elif not _in_place(op, declared, host_memory):
            op = op.kind.contiguous(op, name)
            copied.append(name)
        ops[name] = op
        inputs.append((op, name))
    for name in layout.outs:
        given, fill = values.get(name), decision.fills.get(name)
        op = output(given, name, first, decision.out_shapes[name], decision.out_dtypes[name], tuple(inputs), library, handle, fill, first_name)
        if given is not None and fill is not None:
            op.kind.fill(op, fill, handle, backend)
        ops[name] = op
        inputs.append((op, name))
    wait_for_producers(backend, handle, tuple(ops.values()))
    if given_stream is not None:
        hold_until_done(tuple(ops.values()), handle)
    strides = _strides(decision, ops)
    try:
        arguments: list[Any] = []
        offsets = {}  # each split offset's place among the arguments, set per launch
        for i, p in enumerate(decision.kernel.signature or ()):
            if not p.scalar:
                role = p.role
                # An out array with a fill starts from it: staged, it is copied in like an inout one.
                arguments.append(memory.pointer(ops[p.arg], p.arg, result=role != "in", inout=role == "inout" or p.fill is not None))
            elif p.split:
                offsets[p.name] = i
                arguments.append(0)
            elif p.dim or p.extent:
                arguments.append(strides[p.name] if p.name in strides else decision.dims[p.name])
            else:
                arguments.append(scalar_argument(values[p.arg], p.arg, p.dtype))
        for grid, starts in decision.launches:
            for name, start in starts:
                arguments[offsets[name]] = start
            launcher.launch_at(grid, arguments, stream=handle)
    finally:
        memory.finish()
    for name in layout.results:
        if name in layout.given or values.get(name) is not None:
            ops[name].kind.wrote(ops[name])  # a tensor's version bump, where it was the caller's
    if key is not None:
        made = Launched(layout, values, ops, tuple(copied), decision, launcher, arguments, handle, given_stream is not None, backend, bool(memory.staged), memory.host_used)
        plan = plan_from(made)
        if plan is not None:
            layout.plans.keep(key, plan)
    return {name: op.obj for name, op in ops.items()}


def decision_for(layout: Any, ops: dict[str, Operand], values: dict[str, Any], axes: dict[str, Any]) -> Decision:
    """The decision for these operands (in and inout, by name) and these values'
    out arrays and extents (``_decision.decided``)."""
    outs = {name: as_operand(values[name], name) for name in layout.outs if values.get(name) is not None}
    dtypes = {name: op.dtype for name, op in ops.items()}
    dtypes.update((name, op.dtype) for name, op in outs.items())
    shapes = {name: op.shape for name, op in ops.items()}
    extents = {name: values.get(name) for name in layout.sizes}
    return decided(layout, shapes, dtypes, axes, extents, {name: op.shape for name, op in outs.items()})


def _in_place(op: Operand, declared: DeclaredParam, host_memory: bool) -> bool:
    """Whether the kernel reads ``op`` where it lies: row-major, or by its declared
    strides, each dimension declared dense being so (a host array bound for a
    GPU is staged byte for byte, so it must be row-major)."""
    lanes = declared.lanes
    if lanes > 1 and (op.strides[-1] != 1 or any(s % lanes for s in op.strides[:-1])):
        return False  # the lanes of an element must be adjacent, and elements whole
    if is_row_major(op):
        return True
    if not declared.strides or (op.on_host and not host_memory):
        return False
    core = len(op.shape) - (lanes > 1)
    dense = declared.strides[len(declared.shape) - core :]
    return all(stride == 1 or extent <= 1 for want, stride, extent in zip(dense, op.strides, op.shape) if want == 1)


def _strides(decision: Decision, ops: dict[str, Operand]) -> dict[str, int]:
    """Each declared stride scalar, in elements of its array, from where the array
    lies: 0 along a dimension the array leaves out (broadcast, or written to one element)."""
    strides = {}
    for name, declared in decision.params.items():
        if declared.scalar or not declared.strides:
            continue
        op, lanes = ops[name], declared.lanes
        core = len(op.shape) - (lanes > 1)
        left_out = len(declared.shape) - core
        for i, stride in enumerate(declared.strides):
            if type(stride) is str:
                strides[stride] = 0 if i < left_out else op.strides[i - left_out] // lanes
    return strides
