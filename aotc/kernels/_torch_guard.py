"""The entry's guard of PyTorch tensors: one generated function per layout and tensor type.

A repeat call with tensors finds its plan here, in the order the routes of
``_torch_route`` take it: where nothing but aotc would see the op, the plan
the op's kernel left; where autograd records, the call's ``Recording``
(``_torch_recorded``); every out tensor given, the ``.out`` kernel's plan; a
stream named, the direct launch's plan. Anything else goes to the op or to
``Layout.full``. The source is registered with ``linecache`` (``_generated``).
"""

from __future__ import annotations

import sys

from aotc.kernels._entry import add_guard, has_guard

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._binding import Layout

__all__ = ["give_guard", "guard"]


def give_guard(layout: Layout, kind: Any, first: Any) -> None:
    """Give the layout's entry its guard of ``first``'s tensor type, at the first
    call: eagerly only, since a traced call (torch.compile) must not change
    what its trace read."""
    if layout.entry is None or sys.modules["torch"].compiler.is_compiling():
        return
    tensor = type(first)
    if not has_guard(layout, tensor):
        add_guard(layout, tensor, guard(layout, kind, tensor))


def guard(layout: Layout, kind: Any, tensor: type) -> Any:
    """The entry's guard of PyTorch tensors (``_entry``). Where nothing but aotc
    would see the op (``aotc.arrays.torch_direct``, its checks inlined) it runs
    the plan the op's kernel left, or that kernel itself; where autograd
    records, the call's ``Recording`` (``_torch_recorded``); every out tensor
    given, the ``.out`` kernel's plan; a stream named, the direct launch's plan.
    Traced, or under a mode or a transform, the op, through the dispatcher.
    Anything else (None) takes ``Layout.full``."""
    from aotc.arrays.eager_checks import EAGER_TEXT
    from aotc.kernels._entry import guard_signature, results_text
    from aotc.kernels._keys import plan_key_text

    given, outs, scalars = layout.given, layout.outs, tuple(layout.arguments)
    positional = ", ".join(layout.positional)
    chosen = ", ".join(f"{name!r}: {name}" for name in (*layout.open_axes, *layout.lengths))
    records = " or ".join(f"{name}.requires_grad" for name in given)
    plain = " or ".join(f"{name}.is_meta or _aotc_wrapped({name})" for name in given)
    no_outs = " and ".join(f"{name} is None" for name in outs) or "True"
    plan = f"_aotc_plan({', '.join((*given, *outs, *scalars))})"
    body = [
        f"if {' or '.join(f'type({name}) is not _aotc_type' for name in given[1:]) or 'False'}:",
        "    return None",
        f"if not ({EAGER_TEXT}):  # traced, a mode, a transform: the op, through the dispatcher",
        f"    return _aotc_tensors(_aotc_layout, ({positional},), {{{chosen}}}, False) if stream is None and {no_outs} else None",
        "_aotc_stream = stream if stream is None or type(stream) is int else _aotc_handle(stream)",
        f"if {no_outs}:",
        f"    if _aotc_grad() and ({records}):",
        "        if _aotc_stream is not None:",
        "            return None  # the full path refuses it",
        "        try:",
        f"            _aotc_recording = _aotc_plans[{plan_key_text(layout, kind, repr('recorded'))}]",
        "        except KeyError:",
        "            _aotc_recording = None",
        "        except (TypeError, RuntimeError):  # an unhashable value; a tensor without sizes (nested)",
        "            return None",
        f"        if _aotc_recording is not None and not ({plain}):",
        f"            _aotc_result = _aotc_recording.apply(({''.join(f'{n}, ' for n in given)}), {{{', '.join(f'{n!r}: {n}' for n in scalars)}}})",
        f"            return {results_text(layout, '_aotc_result')}",
        f"        return _aotc_tensors(_aotc_layout, ({positional},), {{{chosen}}}, False)",
        "else:",
        f"    if {' or '.join(f'type({name}) is not _aotc_type' for name in outs) or 'False'}:",
        "        return None  # an out array of another kind, or one not given: the full path",
        "    if _aotc_grad() and ({}):".format(" or ".join(f"{name}.requires_grad" for name in (*given, *outs))),
        "        return None  # out= where autograd records: the full path refuses it",
        "try:",
        f"    _aotc_plan = _aotc_plans[{plan_key_text(layout, kind, repr('torch'))}]  # a subscript, as the direct guard's",
        "except KeyError:",
        "    _aotc_plan = None",
        "except (TypeError, RuntimeError):  # the full path names what it is",
        "    return None",
        "if _aotc_plan is not None:",
        f"    _aotc_result = {plan}",
        "    if _aotc_result is not None:",
        f"        return {results_text(layout, '_aotc_result')}",
        f"if _aotc_stream is None and {no_outs} and not ({plain}):  # no plan yet: the op's kernel, which leaves one",
        f"    return _aotc_tensors(_aotc_layout, ({positional},), {{{chosen}}}, True)",
        "return None",
    ]
    source = "\n".join([guard_signature(layout), *(f"    {line}" for line in body), ""])
    from aotc._generated import compiled
    from aotc.kernels._keys import generated_key
    from aotc.kernels._plans import GENERATED

    factory = GENERATED.plans.get(generated_key("torch guard", source))
    if factory is None:
        from aotc.arrays.torch_direct import EAGER_CHECKS

        wrapped = "def _aotc_factory(_aotc_type, _aotc_plans, _aotc_layout, _aotc_tensors, _aotc_handle, _aotc_grad, _aotc_checks):\n"
        wrapped += "".join(f"    {name} = _aotc_checks[{name!r}]\n" for name in EAGER_CHECKS)
        wrapped += "".join(f"    {line}\n" for line in source.splitlines()) + "    return _aotc_guard\n"
        factory = GENERATED.keep(generated_key("torch guard", source), compiled(wrapped, "_aotc_factory", f"guard {layout.name}", {}))
    from aotc.arrays.placement import stream_handle
    from aotc.arrays.torch_direct import EAGER_CHECKS

    from aotc.kernels._torch_route import call_tensors, torch_module

    torch = torch_module()
    return factory(tensor, layout.plans.plans, layout, call_tensors, lambda stream: stream_handle(stream, None), torch.is_grad_enabled, EAGER_CHECKS)
