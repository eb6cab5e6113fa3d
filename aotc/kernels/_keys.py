"""The call-plan keys: each written once, as an expression over the binding's
own names, which the generated entry inlines (a call level less on the hot
path) and which is compiled as a function for storing plans. Store and
lookup therefore read the same expression and cannot disagree.

- A NumPy call's key: each in and inout array's shape, strides and dtype,
  each out array's (None where not given), the open axes' values and the
  sizes the caller gives (out arrays' extents, packed dimensions' lengths).
- A tensor call's key: the open axes' values, then each in and inout
  tensor's shape, strides, dtype and device, then the sizes; the ``.out``
  overload's adds each out tensor's, after an "out" mark.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._binding import Layout

__all__ = ["numpy_key", "numpy_key_text", "tensor_key", "tensor_key_text", "tensor_out_key"]


def numpy_key_text(layout: Layout) -> str:
    parts = [f"{name}.shape, {name}.strides, {name}.dtype" for name in layout.given]
    parts += [f"None if {name} is None else ({name}.shape, {name}.strides, {name}.dtype)" for name in layout.outs]
    parts += [*layout.open_axes, *layout.sizes]
    return f"({', '.join(parts)},)"


def _axes_text(layout: Layout) -> str:
    return f"({''.join(f'{axis}, ' for axis in layout.open_axes)})"


def tensor_key_text(layout: Layout, *, outs: bool = False) -> str:
    parts = [_axes_text(layout)]
    parts += [f"{name}.shape, {name}.stride(), {name}.dtype, {name}.device" for name in layout.given]
    parts += list(layout.sizes)
    if outs:
        parts += ['"out"', *(f"{name}.shape, {name}.stride(), {name}.dtype, {name}.device" for name in layout.outs)]
    return f"({', '.join(parts)},)"


_compiled: dict[tuple[Any, ...], Any] = {}


def _function(layout: Layout, kind: str, names: tuple[str, ...], text: Any) -> Any:
    """The key function of ``kind`` for ``layout`` and the names it takes, in
    order: made once a layout (kept in its ``key_functions``), and once a text
    and names across layouts."""
    code = text(layout)
    found = _compiled.get((names, code))
    if found is None:
        namespace: dict[str, Any] = {}
        # Validated identifiers and our own text, as the entry's (aotc.kernels._entry).
        exec(compile(f"def _aotc_key({', '.join(names)}):\n    return {code}\n", f"<aotc key {layout.name}>", "exec"), namespace)
        found = _compiled[(names, code)] = namespace["_aotc_key"]
    layout.key_functions[kind] = (found, names)
    return found, names


def numpy_key(layout: Layout, values: dict[str, Any]) -> tuple[Any, ...]:
    """The key the generated entry builds for a NumPy call with these values (and axes, by name; None: not given)."""
    function, names = layout.key_functions.get("numpy") or _function(layout, "numpy", (*layout.given, *layout.outs, *layout.open_axes, *layout.sizes), numpy_key_text)
    return function(*[values.get(name) for name in names])


def tensor_key(layout: Layout, values: dict[str, Any]) -> tuple[Any, ...]:
    """The key of a tensor call with these values and axes, by name (None: an axis not given)."""
    function, names = layout.key_functions.get("tensor") or _function(layout, "tensor", (*layout.given, *layout.open_axes, *layout.sizes), tensor_key_text)
    return function(*[values.get(name) for name in names])


def tensor_out_key(layout: Layout, values: dict[str, Any]) -> tuple[Any, ...]:
    """The key of a ``.out`` overload call with these values (its out tensors among them)."""
    function, names = layout.key_functions.get("tensor out") or _function(
        layout, "tensor out", (*layout.given, *layout.outs, *layout.open_axes, *layout.sizes), lambda lay: tensor_key_text(lay, outs=True)
    )
    return function(*[values.get(name) for name in names])
