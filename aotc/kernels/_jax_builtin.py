"""A declared family's kernel through jaxlib's built-in GPU kernel launcher
(``aotc.runtime.jax_route``): the ``triton_kernel_call_ffi`` custom call with
the wheel's own fatbin as its module image. XLA then launches the kernel on
its stream itself: no Python runs per call, and a CUDA graph can hold it.

``aotc.kernels._jax`` asks ``for_call`` while tracing, and puts what it gets
beside the ``buffer_callback`` with ``jax.lax.platform_dependent``: a program
lowered for CUDA launches through jaxlib, one lowered for the CPU keeps the
callback (and the emulator). None keeps the call on ``buffer_callback``
everywhere, as it does wherever the launcher cannot launch the kernel the way
aotc's own launch would:

- a block that is not one-dimensional whole warps: the launcher launches
  ``num_warps * 32`` threads in x and one in y and z. The tropical GEMM
  kernels' 16x16 blocks stay on the callback (docs/design.md, "JAX");
- an array parameter after an out array that is not last: the launcher hands
  XLA's operands (the in and inout arrays), then its results, to the array
  parameters in order;
- no SASS in the library for the device: a kernel the driver or NVRTC would
  have to compile follows aotc's image rules on the callback;
- no CUDA device to read the capability from, or devices of several.
"""

from __future__ import annotations

from typing import Any

import jax

from aotc.arrays.jax_kernel_call import ARRAY, SCALAR_FIELDS, encode_kernel_call
from aotc.kernels._arguments import scalar_argument
from aotc.kernels._keys import jax_key
from aotc.runtime.jax_route import BUILTIN, builtin_launcher
from aotc.runtime.library import kernel_images
from aotc.runtime.select import JitPolicy, Platform, explain_selection

__all__ = ["device_capability", "for_call", "in_use", "unlaunchable"]

# A store lookup's "no entry": a kept None means the launcher cannot launch that call.
_UNKEPT = object()

_decided: dict[str, Any] = {}  # once a process: whether the launcher is in use, and the device's capability


def in_use() -> bool:
    """Whether the installed jax CUDA plugin's launcher takes module images (and AOTC_JAX_LAUNCHER allows it)."""
    if "in_use" not in _decided:
        _decided["in_use"] = builtin_launcher()[0]
    return _decided["in_use"]


def device_capability() -> tuple[int, int] | None:
    """The compute capability of jax's CUDA devices; None without one, or with several."""
    if "capability" not in _decided:
        try:
            found = {device.compute_capability for device in jax.devices("cuda")}
        except RuntimeError:  # no CUDA backend
            found = set()
        _decided["capability"] = tuple(map(int, found.pop().split("."))) if len(found) == 1 else None
    return _decided["capability"]


def unlaunchable(layout: Any, kernel: Any) -> str | None:
    """Why the built-in launcher cannot launch ``kernel`` as aotc would; None where it can."""
    x, y, z = kernel.launch.block
    if y != 1 or z != 1 or x % 32 or not 32 <= x <= 1024:
        return f"its block {kernel.launch.block} is not one-dimensional whole warps"
    arrays = [p.arg for p in kernel.signature if not p.scalar]
    if arrays != [*layout.given, *layout.outs]:
        return f"its arrays ({', '.join(arrays)}) are not its in and inout arrays, then its out arrays"
    if any(p.lanes > 1 or p.pack for p in kernel.signature if not p.scalar):
        return "an array of lanes or packed bits is not one of XLA's dense buffers as aotc binds it"
    kinds = {p.dtype for p in kernel.signature if p.scalar}
    if not kinds <= SCALAR_FIELDS.keys():
        return f"a scalar of kind {sorted(kinds - SCALAR_FIELDS.keys())[0]} has no field in the launcher's protobuf"
    return None


def for_call(layout: Any, decision: Any, scalars: dict[str, Any], given: tuple[Any, ...], results: dict[str, Any]) -> Any:
    """The call as the built-in launcher's custom call, taking ``given`` and
    returning the out and inout arrays (``results``: their shapes and dtypes, by
    name) in declared order; None: the callback's."""
    if not in_use():
        return None
    capability = device_capability()
    if capability is None:
        return None
    shapes = {name: tuple(array.shape) for name, array in zip(layout.given, given)}
    opaque = _opaque(layout, decision, scalars, shapes, capability)
    if opaque is None:
        return None
    # Results: the out arrays, then the inout arrays, each inout aliased to its operand.
    order = [*layout.outs, *layout.inouts]
    aliases = {layout.given.index(name): index for index, name in enumerate(order) if name in layout.given}
    call = jax.ffi.ffi_call(BUILTIN, tuple(results[name] for name in order), input_output_aliases=aliases or None, vmap_method="sequential")
    kernel_name = decision.kernel.name

    def launch(*arrays: Any) -> tuple[Any, ...]:
        outputs = dict(zip(order, call(*arrays, name=kernel_name, opaque=opaque)))
        return tuple(outputs[name] for name in layout.results)

    return launch


def _opaque(layout: Any, decision: Any, scalars: dict[str, Any], shapes: dict[str, tuple[int, ...]], capability: tuple[int, int]) -> bytes | None:
    """The launcher's call for this decision and these scalars, made once; None where it cannot launch it."""
    kernel = decision.kernel
    key = jax_key("builtin", kernel.name, tuple(decision.dims.items()), tuple(shapes.items()), capability, axes={}, scalars=scalars)
    # One read, not `in` then a subscript: another thread may clear the store (at its bound) between the two.
    kept = layout.plans.plans.get(key, _UNKEPT)
    if kept is not _UNKEPT:
        return kept
    opaque = None
    choice = explain_selection(kernel_images(layout.library.index, kernel.name), Platform(capability, (99, 0)), JitPolicy.OFF)
    if unlaunchable(layout, kernel) is None and choice.available:
        every_shape = {**shapes, **decision.out_shapes}
        strides = {s: (p.arg, len(p.shape), i) for p in kernel.signature if not p.scalar for i, s in enumerate(p.strides) if type(s) is str}
        params = []
        for param in kernel.signature:
            if not param.scalar:
                params.append((ARRAY, None))
                continue
            if param.name in strides:
                value = _dense_stride(every_shape, *strides[param.name])
            elif param.split:
                value = 0  # one launch (below): its parts start at 0
            elif param.dim or param.extent:
                value = decision.dims[param.name]
            else:
                value = scalar_argument(scalars[param.arg], param.arg, param.dtype)
            params.append((param.dtype, value))
        grid = decision.grid
        if len(decision.launches) == 1:  # none, or a grid in parts: the callback's launch makes them
            opaque = encode_kernel_call(
                name=kernel.name,
                symbol=kernel.symbol,
                num_warps=kernel.launch.block[0] // 32,
                shared_bytes=kernel.launch.shared_bytes_dynamic,
                capability=capability,
                image=layout.library.index.read_verified(kernel, "fatbin"),
                image_sha256=kernel.fatbin.sha256,
                grid=grid,
                params=params,
            )
    return layout.plans.keep(key, opaque)


def _dense_stride(shapes: dict[str, tuple[int, ...]], name: str, rank: int, i: int) -> int:
    """A declared stride of a JAX array, which XLA lays out dense and row-major:
    0 for a dimension the array leaves out (broadcast), as aotc's own launch binds it."""
    shape = shapes[name]
    left_out = rank - len(shape)
    if i < left_out:
        return 0
    stride = 1
    for extent in shape[i - left_out + 1 :]:
        stride *= extent
    return stride
