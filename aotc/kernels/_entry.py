"""A declared family's entry and call plans, generated per signature, as Triton generates its launchers.

``Family`` binds arguments by the declaration at run time, for any signature;
that costs some microseconds a call (benchmarks/RESULTS.md, "Declared
families"). For NumPy arrays on a host-memory backend (the emulator, the noop
backend), a repeat call with arrays alike in shape, strides and dtype needs
none of it: the kernel, its dimensions and its grid follow from those alone.
So each family gets two functions written as Python source from its
signature and compiled once:

- the **entry**, ``softmax(x, *, y=None, stream=None, **axes)``, with the
  family's own parameter names: it builds the plan key from its NumPy
  arguments in straight-line code and runs the plan, else hands the call to
  ``Family.full`` (which decides everything, raises the one-line errors, and
  leaves a plan where one fits);
- the **plan factory**: a closure per key that reads each array's data
  pointer where NumPy keeps it (``aotc.arrays.operands.data_pointers``),
  checks what belongs to the objects (written arrays writable, clear of the
  others' bytes), allocates the out arrays not given, packs the arguments in
  declared order with the dimensions fixed, and launches.

A plan that finds anything it cannot vouch for returns None, and the call
takes the full path. Parameter names are C identifiers from a validated
index; a name Python reserves (``lambda``) or that could shadow the
generated code's own (``_aotc...``) gets no generated entry: the family is
then called through ``Family.__call__``.
"""

from __future__ import annotations

import keyword
import sys

from aotc.arrays.memory import on_host_memory
from aotc.arrays.operands import as_operand, data_pointers, direct_pointer, meets, span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._family import Family

__all__ = ["INT_RANGES", "MAX_PLANS", "enable_tensors", "entry_for", "make_plan", "plan_key"]

MAX_PLANS = 256  # per family; a job that sees more shapes than this starts over
# The integer scalars' ranges: what a dimension or a caller's argument must fit (Family checks them too).
INT_RANGES = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1)}


def _generatable(family: Family) -> bool:
    """Whether every name the source would hold is one Python takes and ours do not shadow."""
    names = [family.name, *(p.name for p in family.params), *family.axes]
    return not any(keyword.iskeyword(n) or n.startswith("_aotc") or n == "stream" for n in names)


def entry_for(family: Family) -> Any:
    """The family's generated entry, or None where its names rule one out."""
    numpy = sys.modules.get("numpy")
    if numpy is None or not _generatable(family) or not direct_pointer() or sys.maxsize < 2**32:
        return None
    given, outs, open_axes = family.given, family.outs, family.open_axes
    positional = ", ".join(family.positional)
    # The axes a call may choose are keywords of their own, so a call that
    # names one still finds its plan: their values end the key.
    chosen = "".join(f", {axis}={axis}" for axis in open_axes)
    guard = " and ".join(
        ["stream is None", "not _aotc_axes"]
        + [f"type({name}) is _aotc_ndarray" for name in given]
        + [f"({name} is None or type({name}) is _aotc_ndarray)" for name in outs]
    )
    key = ", ".join(
        [f"{name}.shape, {name}.strides, {name}.dtype" for name in given]
        + [f"None if {name} is None else ({name}.shape, {name}.strides, {name}.dtype)" for name in outs]
        + list(open_axes)
    )
    call = ", ".join([*given, *outs, *family.arguments])
    given_outs = ", ".join(f"{name!r}: {name}" for name in outs)
    lines = [
        f"def {family.name}({positional}, *, {''.join(f'{name}=None, ' for name in (*outs, *open_axes))}stream=None, **_aotc_axes):",
        f"    if {guard}:",
        f"        _aotc_plan = _aotc_plans.get(({key},))",
        "        if _aotc_plan is not None:",
        f"            _aotc_result = _aotc_plan({call})",
        "            if _aotc_result is not None:",
        "                return _aotc_result",
    ]
    # Tensors, once the op is known (``enable_tensors``): straight to it, as _torch_route would send them.
    tensors = " and ".join(
        [f"type({name}) is _aotc_tensor" for name in given] + ["stream is None", "not _aotc_axes"] + [f"{name} is None" for name in outs]
    )
    # Where autograd records nothing and nothing else would see the op
    # (aotc.arrays.torch_direct), its kernel runs without the dispatcher.
    records = " or ".join(f"{name}.requires_grad" for name in given)
    # There, a repeat call takes the kernel's tensor plan itself, by the key
    # the kernel would build (_tensor_plan.tensor_key of these keywords).
    tensor_key = ", ".join([f"({', '.join(f'({axis!r}, {axis})' for axis in open_axes)}{',' if len(open_axes) == 1 else ''})"] + [
        f"{name}.shape, {name}.stride(), {name}.dtype, {name}.device" for name in given
    ])  # fmt: skip
    scalars = ", ".join(f"{name!r}: {name}" for name in family.arguments)
    inouts = [name for name in family.results if name not in outs]
    lines += [
        f"    elif {tensors}:",
        f"        if not (_aotc_grad() and ({records})) and _aotc_direct(({', '.join(given)},)):",
        f"            _aotc_tp = _aotc_tensor_plans.get(({tensor_key}))",
        "            if _aotc_tp is not None:",
        f"                _aotc_o = _aotc_tp(({', '.join(given)},), {{{scalars}}})",
        "                if _aotc_o is not None:",
        *[f"                    _aotc_bump({name})" for name in inouts],
        f"                    return {_results(family, '_aotc_o', planned=True)}",
        f"            _aotc_r = _aotc_kernel({positional}{chosen})",
        "        else:",
        f"            _aotc_r = _aotc_op({positional}{chosen})",
        f"        return {_results(family, '_aotc_r')}",
    ]
    for axis in open_axes:
        lines += [f"    if {axis} is not None:", f"        _aotc_axes[{axis!r}] = {axis}"]
    lines += [f"    return _aotc_full(({positional},), {{{given_outs}}}, stream, _aotc_axes)", ""]
    source = "\n".join(lines)
    namespace = {
        "_aotc_ndarray": numpy.ndarray, "_aotc_plans": family.numpy_plans, "_aotc_full": family.full,
        "_aotc_tensor": _NoTensor, "_aotc_op": None, "_aotc_kernel": None, "_aotc_grad": None, "_aotc_direct": None,
        "_aotc_tensor_plans": family.tensor_plans, "_aotc_bump": None,
    }  # fmt: skip
    # The source holds only the index's validated identifiers (no keyword, none of ours) and our own text.
    exec(compile(source, f"<aotc entry {family.library.name}.{family.name}>", "exec"), namespace)
    entry = namespace[family.name]
    entry.family = family
    entry.__doc__ = f"{family!r}: generated from its declared signature (aotc.kernels._entry)."
    return entry


def _results(family: Family, got: str, *, planned: bool = False) -> str:
    """What the entry returns: the out and inout arrays in declared order, the
    out arrays from ``got``: what the op returned (none, one, or a tuple), or
    what a tensor plan did (``planned``: a tuple always)."""
    outs = family.outs
    parts = [name if name not in outs else got if len(outs) == 1 and not planned else f"{got}[{outs.index(name)}]" for name in family.results]
    if len(parts) == 1:
        return parts[0]
    return f"({', '.join(parts)})" if parts else "()"


class _NoTensor:
    """The tensor type until the family's op is known: no argument has it."""


def enable_tensors(family: Family, tensor: type, op: Any, kernel: Any, grad_enabled: Any, direct: Any, bump: Any) -> None:
    """Send the entry's plain-tensor calls to ``op`` from now on, or straight to
    its ``kernel`` (or the kernel's plan) where autograd (``grad_enabled``)
    would record nothing and ``direct`` says nothing else would see the op;
    ``bump`` marks an inout tensor changed, as the kernel does."""
    if family.entry is not None and "_aotc_op" in family.entry.__globals__:
        family.entry.__globals__.update(_aotc_op=op, _aotc_kernel=kernel, _aotc_grad=grad_enabled, _aotc_direct=direct, _aotc_bump=bump)
        family.entry.__globals__["_aotc_tensor"] = tensor  # last: the branch is taken only once all are set


def plan_key(family: Family, values: dict[str, Any], axes: dict[str, Any]) -> tuple[Any, ...]:
    """The key the generated entry builds, from the same arguments and axes."""
    parts: list[Any] = []
    for name in family.given:
        array = values[name]
        parts += [array.shape, array.strides, array.dtype]
    for name in family.outs:
        out = values.get(name)
        parts.append(None if out is None else (out.shape, out.strides, out.dtype))
    parts += [axes.get(axis) for axis in family.open_axes]
    return tuple(parts)


def make_plan(family: Family, values: dict[str, Any], arrays: dict[str, Any], launcher: Any, arguments: list[Any], backend: Any) -> Any:
    """The plan for a call that just launched with ``arguments`` (declared order),
    or None where none fits: not every array a NumPy array used in place on a
    host-memory backend, or nothing launched."""
    numpy = sys.modules.get("numpy")
    if numpy is None or not on_host_memory(backend) or family.entry is None:
        return None
    ndarray = numpy.ndarray
    for name in family.given:
        if type(values[name]) is not ndarray or arrays[name] is not values[name]:
            return None  # a copy was made: each call must copy again
    for name in family.outs:
        if type(arrays[name]) is not ndarray or (values.get(name) is not None and arrays[name] is not values[name]):
            return None
    bound = launcher.bind(arguments, len(arguments))
    if bound is None:
        return None  # an empty grid launches nothing: the full path handles it
    order = [*family.given, *family.outs]
    spans = {name: span(as_operand(arrays[name], name), arrays[name].dtype.itemsize) for name in order}
    # Each written array against every other array: the checks placement.output() makes.
    checks = {name: tuple((other, meets(spans[other], spans[name])) for other in order if other != name) for name in family.results}
    shapes = {name: (arrays[name].shape, arrays[name].dtype) for name in family.outs}
    dims = {p.name: value for p, value in zip(family.params, arguments) if p.scalar and p.dim}
    return _factory(family)(data_pointers(), bound, dims, shapes, checks, numpy.empty, backend.stream_synchronize)


_factories: dict[tuple[Any, ...], Any] = {}


def _factory(family: Family) -> Any:
    """The plan factory of ``family``'s signature, generated once per signature."""
    signature = (family.given, family.outs, family.results, tuple((p.name, p.scalar, p.dim, p.dtype) for p in family.params))
    factory = _factories.get(signature)
    if factory is None:
        factory = _factories[signature] = _generate_factory(family)
    return factory


def _generate_factory(family: Family) -> Any:
    given, outs, results = family.given, family.outs, family.results
    order = [*given, *outs]
    lines = [
        "def _aotc_factory(_aotc_pointers, _aotc_bound, _aotc_dims, _aotc_shapes, _aotc_checks, _aotc_empty, _aotc_wait):",
        "    _aotc_launch, _aotc_function, _aotc_shape = _aotc_bound.launch, _aotc_bound.function, _aotc_bound.shape",
        "    _aotc_pack = _aotc_bound.pack_head",
    ]
    lines += [f"    {p.name} = _aotc_dims[{p.name!r}]" for p in family.params if p.scalar and p.dim]
    lines += [f"    _aotc_shape_{name}, _aotc_dtype_{name} = _aotc_shapes[{name!r}]" for name in outs]
    for name in results:
        for i in range(len(order) - 1):
            lines.append(f"    _aotc_from_{name}_{i}, _aotc_to_{name}_{i} = _aotc_checks[{name!r}][{i}][1]")
    lines.append(f"    def plan({', '.join([*given, *outs, *family.arguments])}):")
    lines += [f"        _aotc_p_{name} = _aotc_pointers[id({name}) >> 3]" for name in given]
    for name in outs:
        lines += [
            f"        _aotc_new_{name} = {name} is None",
            f"        if _aotc_new_{name}:",
            f"            {name} = _aotc_empty(_aotc_shape_{name}, _aotc_dtype_{name})",
            f"        _aotc_p_{name} = _aotc_pointers[id({name}) >> 3]",
        ]
    for name in results:
        # A written array must be writable now and clear of every other array's bytes;
        # an out array made here is both.
        indent = "        "
        if name in outs:
            lines.append(f"        if not _aotc_new_{name}:")
            indent = "            "
        lines += [f"{indent}if not {name}.flags.writeable:", f"{indent}    return None"]
        for i, other in enumerate(o for o in order if o != name):
            lines += [f"{indent}if _aotc_from_{name}_{i} < _aotc_p_{name} - _aotc_p_{other} < _aotc_to_{name}_{i}:", f"{indent}    return None"]
    for p in family.params:
        if p.scalar and not p.dim:
            if p.dtype in INT_RANGES:
                low, high = INT_RANGES[p.dtype]
                lines.append(f"        if type({p.name}) is not int or not {low} <= {p.name} <= {high}:")
            else:
                lines.append(f"        if type({p.name}) is not float and type({p.name}) is not int:")
            lines.append("            return None")
    packed = ", ".join(p.name if p.scalar else f"_aotc_p_{p.name}" for p in family.params)
    lines += [
        f"        _aotc_launch(_aotc_function, _aotc_shape, 0, _aotc_pack({packed}))",
        "        _aotc_wait(0)  # the results are host memory: ready before they are returned",
        f"        return {', '.join(results)}",
        "    return plan",
        "",
    ]
    namespace: dict[str, Any] = {}
    # As the entry's: validated identifiers and our own text.
    exec(compile("\n".join(lines), f"<aotc plan {family.library.name}.{family.name}>", "exec"), namespace)
    return namespace["_aotc_factory"]
