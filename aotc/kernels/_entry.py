"""A layout's entry and its guards, generated per signature, as Triton generates its launchers.

The call path, from the public function to the launch:

```
entry(x, ..., *, y=None, <axes>=None, stream=None)          generated per layout (here)
  -> guard of type(x)       kept in the layout's store; per kind of array, its texts (aotc.arrays.kinds)
       key (_keys) -> plan   made from a full call's decision (_replay), replayed; None: cannot vouch
  -> Layout.full            the full path: bind, route (direct, the torch op, JAX), _launch.launch
       read -> decide (_decision) -> place, allocate, fill -> launch -> the plan, kept under the key
```

- The **entry**, ``softmax(x, *, y=None, axis=None, stream=None, **axes)``,
  has the layout's own binding names. It finds the guard of its first
  array's type (``add_guard``) and returns what the guard returns; a call no guard answers (None) goes to
  ``Layout.full``, which decides everything and raises the one-line errors,
  makes the guard of that type and keeps the plan its launch becomes. The
  guards are ``entry.guards``; a guard's parameters after the arrays default
  to None, so a public function over the entry (``aotc.tropical.matmul``)
  may ask the guard itself, by keyword, a call level less.
- A **guard** (``direct_guard`` here; ``_torch_guard.guard`` for tensors)
  checks that every array is of its type, builds the plan key in
  straight-line code from the kinds' texts (``_keys.plan_key_text``: the
  same text the full path's key function is compiled from) and runs the
  plan. A direct guard serves NumPy arrays, CUDA arrays and DLPack arrays:
  a kind whose texts are its own (NumPy) reads the arrays themselves; any
  other is read as Operands first (``ArrayKind.plan_operands``).

Binding names are identifiers from a validated index that are no Python
keyword and do not start with ``_aotc``; a layout whose names would not fit
(an axis named like a keyword) gets no entry and is called through
``Layout.__call__``. Every source is registered with ``linecache``
(``_generated``): a traceback shows the entry's and the guard's lines.
"""

from __future__ import annotations

import keyword

from aotc.errors import AotcError, ArgumentError, ArgumentTypeError, called
from aotc._generated import compiled
from aotc.kernels._keys import generated_key, plan_key_text
from aotc.kernels._plans import GENERATED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._binding import Layout

__all__ = ["add_guard", "direct_guard", "entry_for", "guard_parameters", "guard_signature", "has_guard", "results_text"]


def _generatable(layout: Layout) -> bool:
    """Whether every name the source would hold is one Python takes and ours do not shadow."""
    names = [layout.name, *layout.positional, *layout.outs, *layout.open_axes, *layout.lengths]
    return not any(keyword.iskeyword(n) or n.startswith("_aotc") or n == "stream" or not n.isidentifier() for n in names)


def guard_parameters(layout: Layout) -> tuple[str, ...]:
    """A guard's parameters: the entry's, less ``**axes``."""
    return (*layout.positional, *layout.outs, *layout.open_axes, *layout.lengths, "stream")


def guard_signature(layout: Layout) -> str:
    """A guard's ``def`` line: the entry passes every parameter in order; a
    public function over the entry (``aotc.tropical``) names those it sets."""
    optional = guard_parameters(layout)[len(layout.positional) :]
    return f"def _aotc_guard({', '.join((*layout.positional, *(f'{name}=None' for name in optional)))}):"


def entry_for(layout: Layout) -> Any:
    """The layout's generated entry, or None where its names rule one out."""
    if not _generatable(layout):
        return None
    outs, open_axes, lengths = layout.outs, layout.open_axes, layout.lengths
    positional = ", ".join(layout.positional)
    keywords = "".join(f"{name}=None, " for name in (*outs, *open_axes, *lengths))
    parameters = ", ".join(guard_parameters(layout))
    lines = [
        f"def {layout.name}({positional}, *, {keywords}stream=None, **_aotc_axes):",
        "    if not _aotc_axes:",
        f"        _aotc_guard = _aotc_guards.get(id(type({layout.given[0]})))",
        "        if _aotc_guard is not None:",
        f"            _aotc_result = _aotc_guard({parameters})",
        "            if _aotc_result is not None:",
        "                return _aotc_result",
    ]
    for axis in (*open_axes, *lengths):
        lines += [f"    if {axis} is not None:", f"        _aotc_axes[{axis!r}] = {axis}"]
    given_outs = ", ".join(f"{name!r}: {name}" for name in outs)
    lines += [f"    return _aotc_layout.full(({positional},), {{{given_outs}}}, stream, _aotc_axes)"]
    # The entry is the function its caller called: its refusals name it, unless a call over it did.
    lines = [
        lines[0], "    try:", *(f"    {line}" for line in lines[1:]),
        "    except _aotc_refusals as _aotc_refusal:", f"        _aotc_called(_aotc_refusal, {layout.name!r})", "        raise", "",
    ]  # fmt: skip
    # The guards by array type: made by the full path at a type's first call (add_guard).
    namespace: dict[str, Any] = {"_aotc_guards": {}, "_aotc_layout": layout, "_aotc_refusals": (ArgumentError, ArgumentTypeError), "_aotc_called": called}
    entry = compiled("\n".join(lines), layout.name, f"entry {layout.library.name}.{layout.name}", namespace)
    entry.layout, entry.guards = layout, namespace["_aotc_guards"]
    entry.__doc__ = f"{layout!r}: generated from its declared signature (aotc.kernels._entry)."
    return entry


def has_guard(layout: Layout, array_type: type) -> bool:
    """Whether ``layout``'s entry has a guard for arrays of ``array_type``."""
    return id(array_type) in layout.entry.guards


def add_guard(layout: Layout, array_type: type, guard: Any) -> None:
    """Give ``layout``'s entry ``guard`` for arrays of ``array_type``. A dict
    apart from the plans: it changes once a type, where the store changes at
    every new plan (``torch.compile`` guards on what a trace reads). Keyed by
    the type's id (the guard keeps the type, so the id is not reused): dynamo
    guards a dict's keys, and cannot where a key is a class."""
    layout.entry.guards[id(array_type)] = guard


def results_text(layout: Layout, got: str) -> str:
    """What an entry returns from a plan's tuple ``got`` (the results in declared order): one result itself."""
    return f"{got}[0]" if len(layout.results) == 1 else got


def direct_guard(layout: Layout, kind: Any, guard: type) -> Any:
    """The guard of arrays of type ``guard`` (``kind``'s) on the direct route:
    every array of the type, the stream named as its handle, the key, the plan."""
    operands = kind.plan_operands
    given, outs = layout.given, layout.outs
    variables = {name: f"_aotc_o_{name}" for name in (*given, *outs)} if operands else {}
    tag = "_aotc_tag"
    key = plan_key_text(layout, kind, tag, variables)
    body = []
    if operands:  # each read here by its own kind (the key holds each one's), and handed to the plan read
        body += ["try:"]
        body += [f"    {variables[name]} = _aotc_read({name}, {name!r})" for name in given]
        body += [f"    {variables[name]} = None if {name} is None else _aotc_read({name}, {name!r})" for name in outs]
        body += ["except _aotc_refused:", "    return None  # the full path names it"]
    else:
        body += [f"if {' or '.join(f'type({name}) is not _aotc_type' for name in given[1:]) or 'False'}:", "    return None"]
        for name in outs:
            body += [f"if {name} is not None and type({name}) is not _aotc_type:", "    return None"]
    body += ["_aotc_stream = stream if stream is None or type(stream) is int else _aotc_handle(stream)"]
    body += [
        "try:",
        f"    _aotc_plan = _aotc_plans[{key}]  # a subscript: a method call would cost more than the lookup",
        "except (KeyError, TypeError):  # no plan yet, or an unhashable axis value or size: the full path names it",
        "    return None",
        f"_aotc_result = _aotc_plan({', '.join(variables.get(name, name) for name in (*given, *outs))}{''.join(f', {name}' for name in layout.arguments)})",
        f"return None if _aotc_result is None else {results_text(layout, '_aotc_result')}",
    ]
    source = "\n".join([guard_signature(layout), *(f"    {line}" for line in body), ""])
    factory = GENERATED.plans.get(generated_key("direct guard", source))
    if factory is None:
        wrapped = "def _aotc_factory(_aotc_type, _aotc_tag, _aotc_plans, _aotc_read, _aotc_handle, _aotc_refused):\n"
        wrapped += "".join(f"    {line}\n" for line in source.splitlines()) + "    return _aotc_guard\n"
        factory = GENERATED.keep(generated_key("direct guard", source), compiled(wrapped, "_aotc_factory", f"guard {layout.name}", {}))
    from aotc.arrays.kinds import as_operand
    from aotc.arrays.placement import stream_handle

    tag_value = guard if operands else kind.name
    return factory(guard, tag_value, layout.plans.plans, as_operand, lambda stream: stream_handle(stream, None), AotcError)
