"""A layout's entry and call plans, generated per signature, as Triton generates its launchers.

``Layout`` binds arguments by the declaration at run time, for any
signature; that costs some microseconds a call. A repeat call with arrays
alike in shape, strides and dtype needs none of it: the kernel, its
dimensions and its grid follow from those alone. So each layout gets
functions written as Python source from its signature and compiled once:

- the **entry**, ``softmax(x, *, y=None, dtype=None, stream=None, **axes)``,
  with the layout's own binding names: for NumPy arrays on a host-memory
  backend it builds the plan key in straight-line code and runs the plan; for
  plain PyTorch tensors (bound when torch is imported, ``bind_arrays``) that
  autograd does not record and nothing else would see, the tensor plan the
  op's kernel left (``_tensor_plan``); anything else, and any call no plan
  answers, goes to ``Layout.full`` or the PyTorch route, which decide
  everything and raise the one-line errors;
- the **keys** (``_keys``): the same expressions, compiled as functions, with
  which plans are stored, so store and lookup cannot disagree;
- the **NumPy plan factory**: a closure per key that reads each array's data
  pointer where NumPy keeps it, checks what belongs to the objects (written
  arrays writable, clear of the others' bytes; scalars' types), allocates
  the out arrays not given (filled where declared), packs the arguments in
  the kernel's order with the dimensions fixed, and launches.

Binding names are identifiers from a validated index that are no Python
keyword and do not start with ``_aotc``; a layout whose names would not fit
(an axis named like a keyword) gets no entry and is called through
``Layout.__call__``.
"""

from __future__ import annotations

import keyword
import sys

from aotc.arrays.memory import on_host_memory
from aotc.arrays.kinds import as_operand
from aotc.arrays.eager_checks import EAGER_TEXT
from aotc.arrays.operands import data_pointers, direct_pointer, meets, span
from aotc.errors import ArgumentError, ArgumentTypeError, called
from aotc.kernels._arguments import CONVERTED, F32_FINITE_PAST, scalar_argument
from aotc.kernels._keys import numpy_key, numpy_key_text, tensor_key_text
from aotc.kernels._shapes import INT_RANGES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._layout import Layout
    from aotc.kernels._shapes import Decision

__all__ = ["bind_arrays", "entry_for", "make_plan"]


def _generatable(layout: Layout) -> bool:
    """Whether every name the source would hold is one Python takes and ours do not shadow."""
    names = [layout.name, *layout.positional, *layout.outs, *layout.open_axes, *layout.lengths]
    return not any(keyword.iskeyword(n) or n.startswith("_aotc") or n == "stream" or not n.isidentifier() for n in names)


class _NoTensor:
    """The array type of a library not imported yet: no argument has it, so the
    entry's branch for that library is not taken until ``bind_arrays`` binds it."""


def entry_for(layout: Layout) -> Any:
    """The layout's generated entry, or None where its names rule one out."""
    if not _generatable(layout):
        return None
    given, outs, open_axes, lengths = layout.given, layout.outs, layout.open_axes, layout.lengths
    positional = ", ".join(layout.positional)
    # The keywords other than out arrays: the open axes, and the lengths of packed dimensions.
    chosen = ", ".join(f"{name!r}: {name}" for name in (*open_axes, *lengths))
    guard = " and ".join(
        ["stream is None", "not _aotc_axes"]
        + [f"type({name}) is _aotc_ndarray" for name in given]
        + [f"({name} is None or type({name}) is _aotc_ndarray)" for name in outs]
    )
    call = ", ".join([*given, *outs, *layout.arguments])
    given_outs = ", ".join(f"{name!r}: {name}" for name in outs)
    lines = [
        f"def {layout.name}({positional}, *, {''.join(f'{name}=None, ' for name in (*outs, *open_axes, *lengths))}stream=None, **_aotc_axes):",
        f"    if {guard}:",
        "        try:",
        f"            _aotc_plan = _aotc_plans.get({numpy_key_text(layout)})",
        "        except TypeError:  # an unhashable axis value or extent: the full path names it",
        "            _aotc_plan = None",
        "        if _aotc_plan is not None:",
        f"            _aotc_result = _aotc_plan({call})",
        "            if _aotc_result is not None:",
        "                return _aotc_result",
    ]
    tensors = " and ".join([f"type({name}) is _aotc_tensor" for name in given] + ["stream is None", "not _aotc_axes"] + [f"{name} is None" for name in outs])
    records = " or ".join(f"{name}.requires_grad" for name in given)
    scalars = ", ".join(f"{name!r}: {name}" for name in layout.arguments)
    plain = " or ".join(f"{name}.is_meta or _aotc_wrapped({name})" for name in given)
    lines += [
        f"    elif {tensors}:",
        # Where autograd records nothing and nothing else would see the op
        # (aotc.arrays.torch_direct, its checks inlined), a repeat call takes
        # the op kernel's plan itself. A plan is made only for a real device's
        # tensors (its key holds the device), and fails on one without storage.
        f"        if {EAGER_TEXT}:",
        f"            _aotc_key = {tensor_key_text(layout)}",
        f"            if not (_aotc_grad() and ({records})):",
        "                try:",
        "                    _aotc_tp = _aotc_tensor_plans.get(_aotc_key)",
        "                except TypeError:",
        "                    _aotc_tp = None",
        "                if _aotc_tp is not None:",
        f"                    _aotc_o = _aotc_tp(({', '.join(given)},), {{{scalars}}})",
        "                    if _aotc_o is not None:",
        *[f"                        _aotc_bump({name})" for name in layout.inouts],
        f"                        return {_results(layout, '_aotc_o')}",
        # No plan yet: the op's kernel itself, which leaves one.
        f"                if not ({plain}):",
        f"                    return _aotc_tensors(_aotc_layout, ({positional},), {{{chosen}}}, True)",
        # Recorded: past the dispatcher as an autograd.Function (_torch_eager),
        # where an alike call already worked out how.
        "            else:",
        "                try:",
        "                    _aotc_rec = _aotc_recordings.get(_aotc_key)",
        "                except TypeError:",
        "                    _aotc_rec = None",
        f"                if _aotc_rec is not None and not ({plain}):",
        f"                    _aotc_o = _aotc_rec.apply(({', '.join(given)},), {{{scalars}}})",
        f"                    return {_results(layout, '_aotc_o')}",
        f"        return _aotc_tensors(_aotc_layout, ({positional},), {{{chosen}}}, False)",
    ]
    if outs:
        # Every out tensor given (out=): the .out overload's plan, and the
        # version bumps its kernel makes; autograd must record nothing (out=
        # takes no gradient), else the full path refuses it in one line.
        every = [*given, *outs]
        lines += [
            f"    elif {' and '.join(f'type({name}) is _aotc_tensor' for name in every)} and stream is None and not _aotc_axes:",
            f"        if {EAGER_TEXT} and not (_aotc_grad() and ({' or '.join(f'{name}.requires_grad' for name in every)})):",
            "            try:",
            f"                _aotc_tp = _aotc_tensor_plans.get({tensor_key_text(layout, outs=True)})",
            "            except TypeError:",
            "                _aotc_tp = None",
            f"            if _aotc_tp is not None and _aotc_tp(({', '.join(every)},), {{{scalars}}}) is not None:",
            *[f"                _aotc_bump({name})" for name in layout.results],
            f"                return {layout.results[0] if len(layout.results) == 1 else '(' + ''.join(f'{n}, ' for n in layout.results) + ')'}",
        ]
    for axis in (*open_axes, *lengths):
        lines += [f"    if {axis} is not None:", f"        _aotc_axes[{axis!r}] = {axis}"]
    lines += [f"    return _aotc_layout.full(({positional},), {{{given_outs}}}, stream, _aotc_axes)"]
    # The entry is the function its caller called: its refusals name it, unless a call over it did.
    lines = [
        lines[0], "    try:", *(f"    {line}" for line in lines[1:]),
        "    except _aotc_refusals as _aotc_refusal:", f"        _aotc_called(_aotc_refusal, {layout.name!r})", "        raise", "",
    ]  # fmt: skip
    from aotc.kernels._torch_route import call_tensors

    namespace: dict[str, Any] = {
        "_aotc_ndarray": _NoTensor, "_aotc_plans": layout.numpy_plans.plans, "_aotc_layout": layout,
        "_aotc_tensor": _NoTensor, "_aotc_tensor_plans": layout.tensor_plans.plans, "_aotc_tensors": call_tensors,
        "_aotc_recordings": layout.recordings.plans, "_aotc_refusals": (ArgumentError, ArgumentTypeError), "_aotc_called": called,
    }  # fmt: skip
    # NumPy or PyTorch may still be imported: Layout.full binds it then.
    namespace["_aotc_unbound"] = bind_arrays(namespace)
    # The source holds only the index's validated identifiers (no keyword, none of ours) and our own text.
    exec(compile("\n".join(lines), f"<aotc entry {layout.library.name}.{layout.name}>", "exec"), namespace)
    entry = namespace[layout.name]
    entry.layout = layout
    entry.__doc__ = f"{layout!r}: generated from its declared signature (aotc.kernels._entry)."
    return entry


def bind_arrays(namespace: dict[str, Any]) -> bool:
    """Bind into an entry's namespace the array types (and PyTorch's checks) of
    NumPy and PyTorch where each is imported and not yet bound; returns whether
    one may still come. Until then the entry's branch for that library is never
    taken, and ``Layout.full`` calls this again: PyTorch imported after a
    layout's first NumPy call gives every later call, through any reference to
    the entry, the same plans as imported first."""
    if namespace["_aotc_ndarray"] is _NoTensor:
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            # NumPy calls take plans where NumPy's data pointers are read directly (64-bit, the probe passed).
            namespace["_aotc_ndarray"] = numpy.ndarray if sys.maxsize > 2**32 and direct_pointer() else None
    if namespace["_aotc_tensor"] is _NoTensor:
        torch = sys.modules.get("torch")
        if torch is not None:
            from aotc.arrays.torch_direct import EAGER_CHECKS

            namespace.update(EAGER_CHECKS, _aotc_grad=torch.is_grad_enabled, _aotc_bump=torch.autograd.graph.increment_version)
            namespace["_aotc_tensor"] = torch.Tensor  # last: it opens the branch the names above serve
    return namespace["_aotc_ndarray"] is _NoTensor or namespace["_aotc_tensor"] is _NoTensor


def _results(layout: Layout, got: str) -> str:
    """What the entry returns from a tensor plan's tuple ``got`` of out arrays:
    the out and inout arrays in declared order (one: itself)."""
    outs = layout.outs
    parts = [name if name not in outs else f"{got}[{outs.index(name)}]" for name in layout.results]
    if len(parts) == 1:
        return parts[0]
    return f"({', '.join(parts)})" if parts else "()"


def make_plan(
    layout: Layout, values: dict[str, Any], arrays: dict[str, Any], launcher: Any, arguments: list[Any], backend: Any, axes: dict[str, Any],
    decision: Decision,
) -> None:  # fmt: skip
    """Keep, for the generated entry, the plan of a NumPy call that just launched
    with ``arguments`` (the kernel's order), where one fits: every array a NumPy
    array used in place on a host-memory backend, and one launch made (a grid
    launched in parts, or not at all, takes the full path every call)."""
    numpy = sys.modules.get("numpy")
    if len(decision.launches) != 1 or numpy is None or layout.entry is None or not on_host_memory(backend) or any(a not in layout.open_axes for a in axes):
        return
    ndarray = numpy.ndarray
    for name in layout.given:
        if type(values[name]) is not ndarray or arrays[name] is not values[name]:
            return  # a copy was made: each call must copy again
    for name in layout.outs:
        if type(arrays[name]) is not ndarray or (values.get(name) is not None and arrays[name] is not values[name]):
            return
    signature = layout.kernels[launcher.name].signature or ()
    recipe = _recipe(signature)
    lead = sum(1 for _ in _leading_arrays(recipe))
    split = lead == len(layout.given) + len(layout.outs) and not any(part == "a" for part, _ in recipe)
    bound = launcher.bind(arguments, lead if split else len(arguments))
    if bound is None:
        return  # an empty grid launches nothing: the full path handles it
    order = [*layout.given, *layout.outs]
    spans = {name: span(as_operand(arrays[name], name), arrays[name].dtype.itemsize) for name in order}
    # Each written array against every other array: the checks placement.output() makes
    # (an empty array meets none: bounds no pointer difference falls between).
    empty = {name for name in order if arrays[name].size == 0}
    checks = {
        name: tuple((other, (0, 0) if {name, other} & empty else meets(spans[other], spans[name])) for other in order if other != name)
        for name in layout.results
    }
    shapes = {name: (arrays[name].shape, arrays[name].dtype) for name in layout.outs}
    fills = {p.arg: p.fill for p in signature if not p.scalar and p.role == "out" and p.fill is not None}
    constants = {i: arguments[i] for i, (part, _) in enumerate(recipe) if part == "c"}
    factory = _factory(layout, recipe if not split else recipe[:lead])
    plan = factory(data_pointers(), bound, shapes, fills, checks, constants, numpy, backend.stream_synchronize)
    layout.numpy_plans.keep(numpy_key(layout, {**values, **{axis: axes.get(axis) for axis in layout.open_axes}}), plan)


def _recipe(signature: Any) -> tuple[tuple[str, Any], ...]:
    """How a plan packs each parameter: ("p", array) a data pointer read per call,
    ("a", argument) the caller's scalar, ("c", index) a constant the key fixes
    (a dimension, a stride, an extent)."""
    recipe = []
    for i, p in enumerate(signature):
        if not p.scalar:
            recipe.append(("p", p.arg))
        elif p.dim or p.extent:
            recipe.append(("c", i))
        else:
            recipe.append(("a", p.arg))
    return tuple(recipe)


def _leading_arrays(recipe: tuple[tuple[str, Any], ...]) -> Any:
    for part, name in recipe:
        if part != "p":
            return
        yield name


_factories: dict[tuple[Any, ...], Any] = {}


def _factory(layout: Layout, recipe: tuple[tuple[str, Any], ...]) -> Any:
    """The plan factory of ``layout``'s binding signature packing per ``recipe``
    (the leading pointers alone where the rest is bound once), made once per such pair."""
    signature = (layout.given, layout.outs, layout.results, tuple(layout.arguments.items()), recipe)
    factory = _factories.get(signature)
    if factory is None:
        factory = _factories[signature] = _generate_factory(layout, recipe)
    return factory


def _generate_factory(layout: Layout, recipe: tuple[tuple[str, Any], ...]) -> Any:
    given, outs, results = layout.given, layout.outs, layout.results
    order = [*given, *outs]
    lines = [
        "def _aotc_factory(_aotc_pointers, _aotc_bound, _aotc_shapes, _aotc_fills, _aotc_checks, _aotc_constants, _aotc_numpy, _aotc_wait):",
        "    _aotc_launch, _aotc_function, _aotc_shape = _aotc_bound.launch, _aotc_bound.function, _aotc_bound.shape",
        "    _aotc_pack, _aotc_tail = _aotc_bound.pack_head, _aotc_bound.tail",
        "    _aotc_empty, _aotc_full = _aotc_numpy.empty, _aotc_numpy.full",
    ]
    lines += [f"    _aotc_c{i} = _aotc_constants[{i}]" for part, i in recipe if part == "c"]
    lines += [f"    _aotc_shape_{name}, _aotc_dtype_{name} = _aotc_shapes[{name!r}]" for name in outs]
    lines += [f"    _aotc_fill_{name} = _aotc_fills.get({name!r})" for name in outs]
    for name in results:
        for i in range(len(order) - 1):
            lines.append(f"    _aotc_from_{name}_{i}, _aotc_to_{name}_{i} = _aotc_checks[{name!r}][{i}][1]")
    lines.append(f"    def plan({', '.join([*given, *outs, *layout.arguments])}):")
    lines += [f"        _aotc_p_{name} = _aotc_pointers[id({name}) >> 3]" for name in given]
    for name in outs:
        lines += [
            f"        _aotc_new_{name} = {name} is None",
            f"        if _aotc_new_{name}:",
            f"            {name} = _aotc_empty(_aotc_shape_{name}, _aotc_dtype_{name}) if _aotc_fill_{name} is None"
            f" else _aotc_full(_aotc_shape_{name}, _aotc_fill_{name}, _aotc_dtype_{name})",
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
        if name in outs:
            lines += [f"{indent}if _aotc_fill_{name} is not None:", f"{indent}    {name}[...] = _aotc_fill_{name}"]
    for name, kind in layout.arguments.items():
        if name in layout.extents:
            continue  # the key holds it
        if kind in INT_RANGES:
            low, high = INT_RANGES[kind]
            lines.append(f"        if type({name}) is not int or not {low} <= {name} <= {high}:")
        else:
            lines.append(f"        if type({name}) is not float and type({name}) is not int:")
        lines.append("            return None")
        if kind in CONVERTED:
            lines.append(f"        {name} = _aotc_scalar({name}, {name!r}, {kind!r})")
        elif kind == "f32":
            lines += [f"        if {F32_FINITE_PAST.format(name)}:", "            return None  # the full path refuses it"]
    packed = ", ".join(f"_aotc_p_{name}" if part == "p" else f"_aotc_c{name}" if part == "c" else name for part, name in recipe)
    lines += [
        f"        _aotc_launch(_aotc_function, _aotc_shape, 0, _aotc_pack({packed}) + _aotc_tail)",
        "        _aotc_wait(0)  # the results are host memory: ready before they are returned",
        f"        return {', '.join(results) if results else '()'}",
        "    return plan",
        "",
    ]
    namespace: dict[str, Any] = {"_aotc_scalar": scalar_argument}
    # As the entry's: validated identifiers and our own text.
    exec(compile("\n".join(lines), f"<aotc plan {layout.library.name}.{layout.name}>", "exec"), namespace)
    return namespace["_aotc_factory"]
