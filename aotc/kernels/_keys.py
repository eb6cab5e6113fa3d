"""Every key the binder keeps anything under, built here and nowhere else.

A layout's store (``_plans.PlanStore``) holds entries of several sorts, and
each key starts with what it keys, so they never meet:

- ``choice_key``: the kernel ``Layout.choose`` picks for dtypes, axes and ranks;
- ``decision_key``: the ``Decision`` of shapes, dtypes, out arrays given, axes
  and extents (``_decision.decided``);
- ``plan_key``: a call plan (``_replay``), under its route's tag (a kind's
  name; the array type where the guard reads Operands), each array's facts
  (its kind's ``plan_key``: shape, strides, dtype, and device where it has
  one), each out array's (a None for each fact where not given), the open
  axes' values, the sizes the caller gives (each number with its type), and
  the stream handle it named (None: the current one), in one flat tuple (a nested one costs a hash and
  a comparison of its own). It is written once as an expression over the
  binding's own names (``plan_key_text``), which the generated guards
  inline, and compiled as a function that the full path stores with: store
  and lookup read one text;
- ``backward_key``: a recorded call's gradient step, by the gradients' strides;
- the JAX route's callbacks, vjps and built-in launcher calls (``jax_key``);
- ``steps_key``: a kernel's gradient steps (``_gradients``);
- ``generated_key``: a generated factory, by the signature it serves
  (``_plans.GENERATED``);
- ``made_key``: what ``_traced.MADE`` holds, a str (dynamo reads it as an attribute).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._binding import Layout

__all__ = [
    "backward_key",
    "choice_key",
    "decision_key",
    "generated_key",
    "jax_key",
    "made_key",
    "plan_key",
    "plan_key_text",
    "steps_key",
]


def _typed(values: dict[str, Any]) -> tuple[Any, ...]:
    """Each value with its type: 3.0 and np.int64(3) equal 3 and hash alike, and
    a first call may refuse one of them where 3 made the entry."""
    return tuple((name, type(value), value) for name, value in values.items())


def choice_key(dtypes: dict[str, str], axes: dict[str, Any], ranks: dict[str, int]) -> tuple[Any, ...]:
    return ("choice", tuple(dtypes.items()), _typed(axes), tuple(ranks.values()))


def decision_key(
    shapes: dict[str, Any], dtypes: dict[str, str], out_given: dict[str, Any], axes: dict[str, Any], extents: dict[str, Any]
) -> tuple[Any, ...]:
    """``shapes`` in the layout's ``given`` order."""
    return (
        "decision",
        tuple((shape, dtypes[name]) for name, shape in shapes.items()),
        tuple((name, shape, dtypes[name]) for name, shape in out_given.items()),
        _typed(axes),
        _typed(extents),
    )


def plan_key_text(layout: Layout, kind: Any, tag: str, variables: dict[str, str] | None = None) -> str:
    """The key of a call plan for arrays of ``kind``, as an expression: ``tag``
    first (an expression too), then the facts. ``variables`` renames arrays
    (where the guard holds each one's Operand under another name); the open
    axes, the sizes and ``_aotc_stream`` (the handle named, or None) are read
    by their own names."""
    variables = variables or {}
    parts = [tag]
    for name in layout.given:
        parts += kind.plan_key(variables.get(name, name))
    for name in layout.outs:  # each fact, or None: flat, as a nested tuple costs its own hash and compare
        var = variables.get(name, name)
        parts += [f"None if {var} is None else {fact}" for fact in kind.plan_key(var)]
    # A number's type too: 3.0, Fraction(3) and np.int64(3) equal 3 and hash
    # alike, and a first call refuses some of them where 3 makes the plan.
    for name in layout.open_axes:
        numeric = any(not isinstance(value, str) for value in layout.axes[name])
        parts += [name, f"type({name})"] if numeric else [name]
    for name in layout.sizes:
        parts += [name, f"type({name})"]
    parts.append("_aotc_stream")
    return f"({', '.join(parts)},)"


def plan_key(layout: Layout, kind: Any, tag: Any, values: dict[str, Any], axes: dict[str, Any], stream: Any) -> tuple[Any, ...]:
    """The key ``plan_key_text`` builds, for ``values`` (each given and out array,
    None where an out array is not given: objects, or Operands where the kind's
    guard reads them; and the sizes the caller gives, by name), ``axes`` (the
    open axes, by name; missing: None) and the stream handle named (None: none).
    The sizes come with the arrays, as a call's values hold them, so that no
    route keys a plan without them (a result sized by the caller's extent)."""
    function = layout.plans.plans.get(("key function", kind.name, kind.plan_operands))
    if function is None:
        from aotc._generated import compiled
        from aotc.kernels._plans import GENERATED

        names = (*layout.given, *layout.outs, *layout.open_axes, *layout.sizes)
        text = plan_key_text(layout, kind, "_aotc_tag")
        function = GENERATED.plans.get(("key function", names, text))
        if function is None:
            source = f"def _aotc_key(_aotc_tag, {', '.join(names)}, _aotc_stream):\n    return {text}\n"
            function = GENERATED.keep(("key function", names, text), compiled(source, "_aotc_key", f"key {layout.name}", {}))
        layout.plans.keep(("key function", kind.name, kind.plan_operands), function)
    arrays = [values.get(name) for name in (*layout.given, *layout.outs)]
    return function(tag, *arrays, *[axes.get(name) for name in layout.open_axes], *[values.get(name) for name in layout.sizes], stream)


def backward_key(recording: Any, layout: Any, axes: dict[str, Any], tensors: tuple[Any, ...]) -> tuple[Any, ...]:
    """A recorded call's gradient step (its layout and axes: two kernels of one
    layout may differ only there), for tensors of these strides: the rest of
    what decides it is the recording's own key (autograd hands each gradient
    at its result's shape, dtype and device)."""
    return (recording, layout, *axes.values(), *[t.stride() for t in tensors])


def jax_key(what: str, *parts: Any, axes: dict[str, Any], scalars: dict[str, Any]) -> tuple[Any, ...]:
    """A JAX route's callback, vjp or built-in call (``what``): the scalars by
    type and value (JAX keys its compiled calls on the callback)."""
    return (f"jax {what}", *parts, _typed(axes), _typed(scalars))


def steps_key(kernel: Any) -> tuple[Any, ...]:
    return ("steps", kernel.name)


def generated_key(what: str, *signature: Any) -> tuple[Any, ...]:
    return (what, *signature)


def made_key(what: str, *parts: Any) -> str:
    """A key of ``_traced.MADE``: an attribute name, so a str."""
    return "_".join(map(str, (what, *parts)))
