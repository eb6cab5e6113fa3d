"""A call plan: one full call's launch, made into Python source that replays it.

The full path (``_launch.launch``) reads every array, decides (``_decision``:
the kernel, its dimensions, its launches, the out arrays' shapes and fills),
places, allocates and launches. For arrays alike in what the key holds
(``_keys.plan_key``: shapes, strides, dtypes, devices, the open axes, the
sizes given, the stream named), all of that is the same every call but the
arrays themselves. So the launch it made becomes a plan, written from that
call's ``Decision`` and nothing else:

- the kernel's parameters in its order: each array's data pointer, read per
  call (its kind's text); dimensions, strides and extents packed once (the
  launcher's ``bind``); the caller's scalars converted by the *chosen
  kernel's* types, checked as the full path checks them;
- each in array the full path copied (not row-major where the kernel needs
  it so), copied again by its library; out arrays allocated by the first
  array's kind at the decided shape and dtype, filled where declared; given
  written arrays checked writable and clear of every other array's bytes
  (bounds from spans the key fixes), and filled where declared;
- the stream: the one named (its handle is in the key), else the arrays'
  library's current one, read per call; the producers' streams waited for
  and the arrays held where the full path did so;
- every entry of ``decision.launches``, each at its own grid with its own
  offsets (none: an empty call allocates, fills and returns), then the wait
  host memory needs, and the version bumps PyTorch needs.

A plan returns the out and inout arrays (``layout.results`` order) or None
where it cannot vouch for a call (a scalar of another type or past its
range, a written array read-only now or meeting another's bytes): the full
path then decides again, and names the problem in its one line. A plan never
raises a refusal of its own, and does nothing it would have to undo before
it has checked everything.

What a kind does to its arrays is its hooks' text (``aotc.arrays.kinds``):
NumPy and PyTorch on the arrays themselves; any other kind on Operands its
guard reads. The source is written by ``_recipe``, compiled once per shape
of plan (``GENERATED``) and registered with ``linecache`` (``_generated``).
"""

from __future__ import annotations

from aotc._generated import compiled
from aotc.kernels._keys import generated_key
from aotc.kernels._plans import GENERATED
from aotc.kernels._recipe import Recipe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Launched", "plan_from"]


class Launched:
    """What one full call did, as ``_launch.launch`` hands it to ``plan_from``:
    its arrays as given (``values``, by binding name) and as launched (``ops``,
    Operands after copies and allocation), which in arrays it ``copied``, its
    ``decision``, the ``launcher`` and its ``arguments`` in the kernel's order,
    the stream (``handle``, and whether the call named it), and its memory
    (``staged``: host arrays copied to a GPU; ``host_used``: host memory handed
    to the kernel, so the stream is waited for)."""

    __slots__ = ("arguments", "backend", "copied", "decision", "handle", "host_used", "launcher", "layout", "ops", "staged", "stream_given", "values")

    def __init__(self, layout: Any, values: dict[str, Any], ops: dict[str, Any], copied: tuple[str, ...], decision: Any, launcher: Any,
                 arguments: list[Any], handle: int, stream_given: bool, backend: Any, staged: bool, host_used: bool) -> None:  # fmt: skip
        self.layout, self.values, self.ops, self.copied, self.decision = layout, values, ops, copied, decision
        self.launcher, self.arguments, self.handle, self.stream_given = launcher, arguments, handle, stream_given
        self.backend, self.staged, self.host_used = backend, staged, host_used


def plan_from(launched: Launched) -> Any:
    """The plan replaying ``launched`` for arrays alike, or None where none fits:
    arrays of several kinds, one its kind keeps no plan of, an array read as a
    copy (a plan would read the original), or host arrays staged for a GPU."""
    layout, values, ops = launched.layout, launched.values, launched.ops
    if launched.staged:
        return None
    first = values[layout.given[0]]
    from aotc.arrays.kinds import kind_of

    kind = kind_of(first, layout.given[0])
    guard = kind.plan_type(first)
    given_outs = [name for name in layout.outs if values.get(name) is not None]
    if guard is None:
        return None
    for name in (*layout.given, *given_outs):
        if kind.plan_operands:  # read by their own kinds, each such a kind
            other = kind_of(values[name], name)
            if not other.plan_operands or other.plan_type(values[name]) is None:
                return None
        elif type(values[name]) is not guard or (ops[name].obj is not values[name] and name not in launched.copied):
            return None  # another kind, or read as a copy (a byte-swapped or resolved view): the plan would read the original
    recipe = Recipe(launched, kind, given_outs)
    bound = recipe.bind()
    if bound is None:
        return None
    source = recipe.source()
    factory = GENERATED.plans.get(generated_key("plan", source))
    if factory is None:
        factory = GENERATED.keep(generated_key("plan", source), compiled(source, "_aotc_factory", f"plan {layout.library.name}.{layout.name}", {}))
    return factory(recipe.names)
