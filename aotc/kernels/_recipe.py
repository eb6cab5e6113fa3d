"""The source of one call plan, written from one full call (``_replay.Launched``).

``Recipe.bind`` packs what every launch of the decision fixes (the
launcher's ``bind``: a grid, a block, and the parameters after the pointers);
``Recipe.source`` writes the plan: the scalars checked and converted by the
chosen kernel's types, the written arrays checked, each array's pointer,
copies and allocations by its kind's texts (``aotc.arrays.kinds``), the
stream, each launch, and what the arrays' libraries must hear after.
"""

from __future__ import annotations

from aotc.arrays.operands import meets, span
from aotc.arrays.streams import wait_for_producers
from aotc.dtypes import DTYPES
from aotc.errors import AotcError
from aotc.kernels._arguments import CONVERTED, F32_FINITE_PAST, INT_PAST_F64, scalar_argument
from aotc.kernels._decision import INT_RANGES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.kernels._replay import Launched

__all__ = ["Recipe"]


class Recipe:
    """The source of one plan, and the names it is compiled with."""

    def __init__(self, launched: Launched, kind: Any, given_outs: list[str]) -> None:
        self.launched, self.kind, self.given_outs = launched, kind, given_outs
        layout = launched.layout
        self.signature = launched.decision.kernel.signature or ()
        self.names: dict[str, Any] = {}
        self.prefixes = {name: f"_aotc_h{i}_" for i, name in enumerate((*layout.given, *layout.outs))}
        # How each parameter is packed: "p" a pointer read per call, "v" the
        # caller's scalar, "c" fixed by the key (a dimension, a stride, an
        # extent, a launch's offset), taken from the full call's arguments.
        self.parts = tuple(
            "p" if not p.scalar else "v" if p.arg in layout.arguments and not p.extent else "c" for p in self.signature
        )
        # Pointers first and every other parameter fixed: only the pointers are
        # packed per call, after a tail packed once; else all of it.
        lead = next((i for i, part in enumerate(self.parts) if part != "p"), len(self.parts))
        self.split = all(part == "c" for part in self.parts[lead:])
        self.lead = lead if self.split else len(self.parts)

    def bind(self) -> Any:
        """Each launch's (grid, block, shared) and packed tail, from the launcher; None where it binds none."""
        launched = self.launched
        index = {p.name: i for i, p in enumerate(self.signature)}
        launches = []
        for grid, offsets in launched.decision.launches:
            arguments = list(launched.arguments)
            for name, value in offsets:
                arguments[index[name]] = value
            bound = launched.launcher.bind(arguments, self.lead)
            if bound is None:
                return None
            launches.append(((tuple(grid), *bound.shape[1:]), bound.tail, tuple(arguments)))
            self.names.update(_aotc_launch=bound.launch, _aotc_function=bound.function, _aotc_pack=bound.pack_head)
        self.names["_aotc_launches"] = tuple(launches)
        return launches

    def source(self) -> str:
        launched, kind, names = self.launched, self.kind, self.names
        layout, ops, decision = launched.layout, launched.ops, launched.decision
        given, outs = layout.given, layout.outs
        body: list[str] = []
        body += self._scalars()
        # Written arrays given: writable now, and clear of every other array's bytes.
        written = [name for name in (*given, *self.given_outs) if name in layout.results]
        for name in written:
            check = kind.plan_writable(ops[name], name, self.prefixes[name], names)
            if check is not None:
                body += [f"if not {check}:", "    return None"]
        body.append("try:")
        for name in given:
            if name in launched.copied:
                body.append(f"    {name} = {kind.plan_copy(ops[name], name, self.prefixes[name], names)}")
            body.append(f"    _aotc_p_{name} = {kind.plan_pointer(ops[name], name, self.prefixes[name], names)}")
        for name in self.given_outs:
            body.append(f"    _aotc_p_{name} = {kind.plan_pointer(ops[name], name, self.prefixes[name], names)}")
        body += ["except RuntimeError:", "    return None  # no storage (a functorch wrapper that left its transform): the full path names it"]
        for name in (*given, *self.given_outs):
            if 0 not in ops[name].shape:  # no memory behind it (a zero tensor's): the full path reads it
                body += [f"if not _aotc_p_{name}:", "    return None"]
        body += self._apart(written)
        body += self._stream()
        like = given[0]
        for name in outs:
            if name in self.given_outs:
                fill = decision.fills.get(name)
                if fill is not None:
                    body.append(kind.plan_fill(ops[name], name, "_aotc_s", self.prefixes[name], names, fill, launched.backend))
                continue
            made = kind.plan_allocate(ops[name], like, "_aotc_s" if launched.stream_given else "None", self.prefixes[name], names, decision.fills.get(name), name)
            body += [f"{name} = {made}", f"_aotc_p_{name} = {kind.plan_pointer(ops[name], name, self.prefixes[name], names)}"]
        if kind.plan_operands:  # the producers' streams (CUDA arrays' v3 stream, DLPack), asked per call
            names["_aotc_producers"], names["_aotc_backend"] = wait_for_producers, launched.backend
            body.append(f"_aotc_producers(_aotc_backend, _aotc_s, ({''.join(f'{n}, ' for n in (*given, *outs))}))")
        if launched.stream_given:
            for name in (*given, *outs):
                hold = kind.plan_hold(ops[name], name, "_aotc_s", self.prefixes[name], names)
                if hold is not None:
                    body.append(hold)
        if launched.host_used:
            # Waited for on the way out too: a KeyboardInterrupt after a launch must not
            # leave a kernel queued to write host memory the caller's unwinding frees.
            names["_aotc_wait"] = launched.backend.stream_synchronize
            body += ["try:", *(f"    {line}" for line in self._launches())]
            body += ["    _aotc_wait(_aotc_s)  # host memory: the results are read once this returns"]
            body += ["except BaseException:", "    _aotc_wait(_aotc_s)", "    raise"]
        else:
            body += self._launches()
        for name in written:
            wrote = kind.plan_wrote(ops[name], name, self.prefixes[name], names)
            if wrote is not None:
                body.append(wrote)
        body.append(f"return ({''.join(f'{kind.plan_result(name)}, ' for name in layout.results)})")
        parameters = ", ".join((*given, *outs, *layout.arguments))
        lines = ["def _aotc_factory(_aotc_k):"]
        lines += [f"    {name} = _aotc_k[{name!r}]" for name in sorted(names)]
        lines += [f"    def plan({parameters}):", *(f"        {line}" for line in body), "    return plan", ""]
        return "\n".join(lines)

    def _scalars(self) -> list[str]:
        """The caller's scalars, as the chosen kernel's types take them: where one
        is not, the plan cannot vouch for the call (the full path refuses it)."""
        lines = []
        for p, part in zip(self.signature, self.parts):
            if part != "v":
                continue
            name, kind = p.arg, p.dtype
            if kind in INT_RANGES:
                low, high = INT_RANGES[kind]
                lines += [f"if type({name}) is not int or not {low} <= {name} <= {high}:", "    return None"]
                continue
            if kind == "f64":  # an int no f64 holds (10**400) is left to the full path, which refuses it; a float pays nothing
                lines += [f"if type({name}) is not float and (type({name}) is not int or {INT_PAST_F64.format(name)}):", "    return None"]
                continue
            lines += [f"if type({name}) is not float and type({name}) is not int:", "    return None"]
            if kind in CONVERTED:
                self.names.update(_aotc_scalar=scalar_argument, _aotc_refused=AotcError)
                lines += ["try:", f"    {name} = _aotc_scalar({name}, {name!r}, {kind!r})", "except _aotc_refused:", "    return None"]
            elif kind == "f32":
                lines += [f"if {F32_FINITE_PAST.format(name)}:", "    return None"]
        return lines

    def _apart(self, written: list[str]) -> list[str]:
        """Each written array given against every other array given (not a copy,
        which is new memory): the pointer difference at which their bytes meet."""
        launched = self.launched
        ops = launched.ops
        others = [name for name in (*launched.layout.given, *self.given_outs) if name not in launched.copied]
        lines = []
        for name in written:
            for other in others:
                if other == name or 0 in ops[name].shape or 0 in ops[other].shape:
                    continue
                low, high = meets(_span(ops[other]), _span(ops[name]))
                lines += [f"if {low} < _aotc_p_{name} - _aotc_p_{other} < {high}:", "    return None"]
        return lines

    def _stream(self) -> list[str]:
        launched = self.launched
        if launched.stream_given:
            return [f"_aotc_s = {launched.handle}"]
        first = launched.layout.given[0]
        return [f"_aotc_s = {self.kind.plan_stream(launched.ops[first], first, self.prefixes[first], self.names)}"]

    def _launches(self) -> list[str]:
        """Every launch of the decision: the pointers (and, where the parameters do
        not split after them, the rest) packed per call, then each launch's tail."""
        launches = self.names["_aotc_launches"]
        if not launches:
            return ["pass  # an empty grid: nothing to launch; the out arrays are made and filled"]
        once = len(launches) == 1
        heads = []
        for i, (p, part) in enumerate(zip(self.signature[: self.lead], self.parts)):
            if part == "p":
                heads.append(f"_aotc_p_{p.arg}")
            elif part == "v":
                heads.append(p.arg)
            elif once:
                self.names[f"_aotc_c{i}"] = launches[0][2][i]
                heads.append(f"_aotc_c{i}")
            else:
                heads.append(f"_aotc_fixed[{i}]")
        pack = f"_aotc_pack({', '.join(heads)}) + _aotc_tail" if self.split else f"_aotc_pack({', '.join(heads)})"
        if once:
            self.names.update(_aotc_shape=launches[0][0], _aotc_tail=launches[0][1])
            return [f"_aotc_launch(_aotc_function, _aotc_shape, _aotc_s, {pack})"]
        return [
            "for _aotc_shape, _aotc_tail, _aotc_fixed in _aotc_launches:",
            f"    _aotc_launch(_aotc_function, _aotc_shape, _aotc_s, {pack})",
        ]


def _span(op: Any) -> tuple[int, int]:
    dtype = DTYPES.get(op.dtype)
    return span(op, dtype.itemsize if dtype is not None else 8)
