"""A family's catalog: what the bindings read of a family at its first use, in place of its kernels.

A catalog (``aotc.index._layout`` writes it) holds the family's axes (each
axis's values, in index order) and its forms: the signatures its kernels are
bound by, each once, with their params, the values each axis takes among the
form's kernels, and the first kernel that has it. The whole catalog is
validated when the family is first asked for (a form's params and signature
by the same checks as a kernel's, under that first kernel's name), so a
family's first use costs its forms and axes, not its kernels.

A call's kernel is then found in the directory by its family, its axis
values and its form (``FamilyCatalog.find``), and checked like any kernel at
its first use; what the catalog and the directory row said of it (its form,
its axis values) is held to its sealed entry then (``hold``), before any of
its fields is used.
"""

from __future__ import annotations


from aotc._record import Record
from aotc.errors import UnknownKernelError, echo
from aotc.index import _declared_entries
from aotc.index._validate import params_of
from aotc.index._values import _IDENTIFIER, _MAX_INT, _MAX_KERNELS, _MAX_PARAMS, _fail, _int, _list, _object, _table, _text
from aotc.index.schema import FAMILIES_KEY

MappingProxyType = type(type.__dict__)  # types.MappingProxyType, without importing types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from typing import Any

    from aotc.index._lines import KernelLines
    from aotc.index.views import DeclaredParam, IndexKernel, Param

__all__ = ["FamilyCatalog", "KernelForm", "catalog"]

_CATALOG_KEYS = frozenset({"axes", "forms", "kernels"})
_FORM_KEYS = frozenset({"kernel", "signature", "params", "axes", "kernels"})


class KernelForm(Record):
    """One signature of a family's kernels: its ``index`` among the family's forms,
    the first ``kernel`` that has it, its ``params`` and ``signature`` (as each of
    those kernels' entry holds them), each axis's values among them (``axes``) and
    how many kernels have it (``count``)."""

    _fields = ("index", "kernel", "params", "signature", "axes", "count")
    __slots__ = _fields
    index: int
    kernel: str
    params: tuple[Param, ...]
    signature: tuple[DeclaredParam, ...]
    axes: Mapping[str, tuple[str | int, ...]]
    count: int


class FamilyCatalog:
    """Family ``name`` of an index: its ``axes`` (axis -> values, in index order),
    its ``forms`` and how many kernels it has (``count``); its kernels found by
    their axis values (``find``) or listed (``members``), from the directory."""

    __slots__ = ("_held", "_kernels", "_lines", "_raw", "axes", "count", "forms", "name", "where")

    def __init__(self, where: str, name: str, axes: Mapping[str, tuple[Any, ...]], forms: tuple[KernelForm, ...], count: int, lines: KernelLines, raw: list[Any], kernels: Any) -> None:
        self.where = where
        self.name = name
        self.axes = axes
        self.forms = forms
        self.count = count
        self._lines = lines
        self._raw = raw  # each form's signature and params as the file has them, to hold kernels to
        self._kernels = kernels  # the index's KernelTable, which checks a kernel's own entry
        self._held: dict[str, tuple[IndexKernel, KernelForm]] = {}

    def kernel(self, name: str) -> tuple[IndexKernel, KernelForm]:
        """Kernel ``name`` of this family, checked, and its form: its directory row
        and this catalog's claims held to its sealed entry (once)."""
        found = self._held.get(name)
        if found is None:
            row = self._lines.row(name)
            if row is None or row[1] != self.name:
                msg = f"{self.where}: family {self.name} has no kernel {name!r}"
                raise UnknownKernelError(msg)
            checked = self._kernels[name]
            self.hold(name, self._kernels.entry(name), row)
            found = self._held[name] = (checked, self.forms[row[3]])  # a race holds twice, with the same answer
        return found

    def __repr__(self) -> str:
        return f"<FamilyCatalog {self.name}: {self.count} kernels, {len(self.forms)} forms, axes {', '.join(self.axes) or 'none'}>"

    def find(self, axes: Mapping[str, Any], forms: Collection[int] | None = None, limit: int = 2) -> list[tuple[str, dict[str, Any], int]]:
        """At most ``limit`` kernels whose axis values are ``axes`` (an axis not named:
        any value) and whose form is among ``forms`` (None: any), in index order:
        (name, its axis values, its form). Unchecked: look each up before using it."""
        values = [_written(axes[axis]) if axis in axes else None for axis in self.axes]
        found = []
        for name, point, form in self._lines.find(self.name, values):
            if forms is None or form in forms:
                found.append((name, self._point(name, point), form))
                if len(found) >= limit:
                    break
        return found

    def members(self) -> list[tuple[str, dict[str, Any], int]]:
        """Every kernel of the family, as ``find`` gives them (a scan of the directory)."""
        return [(name, self._point(name, point), form) for name, point, form in self._lines.members(self.name)]

    def form_of(self, name: str, row: tuple[int, str, bytes, int]) -> KernelForm:
        """The form kernel ``name``'s directory ``row`` gives it."""
        if row[3] >= len(self.forms):
            _fail(self.where, f"kernels.{name}", f"its directory row names form {row[3]}, but family {self.name} has {len(self.forms)}")
        return self.forms[row[3]]

    def hold(self, name: str, entry: dict[str, Any], row: tuple[int, str, bytes, int]) -> None:
        """Hold kernel ``name``'s checked ``entry`` to what its directory ``row`` and this
        catalog say of it: its axis values and its form's signature and params."""
        form = self.form_of(name, row)
        claims = {"axes": self._point(name, row[2]), "signature": self._raw[form.index][0], "params": self._raw[form.index][1]}
        for field, claimed in claims.items():
            if entry.get(field) != claimed:
                _fail(self.where, f"kernels.{name}.{field}", f"not what the directory and its family's catalog ({FAMILIES_KEY}.{self.name}) say; rebuild or reinstall the library")

    def _point(self, name: str, written: bytes) -> dict[str, Any]:
        """A row's axis values, as the kernel's ``axes``."""
        items = written.split(b",") if written else []
        if len(items) != len(self.axes):
            _fail(self.where, f"kernels.{name}", f"its directory row has {len(items)} axis values, family {self.name} has {len(self.axes)} axes")
        point = {}
        for axis, item in zip(self.axes, items):
            if item != b"null":
                value: Any = int(item) if item.isdigit() else item[1:-1].decode() if item[:1] == b'"' else item
                if value not in self.axes[axis] or type(value) is bytes:
                    _fail(self.where, f"kernels.{name}", f"its directory row gives axis {axis} {echo(item.decode('ascii', 'replace'))}, not a value of family {self.name}'s")
                point[axis] = value
        return point


def _written(value: Any) -> bytes:
    """An axis value as the directory writes it (an integer or a name; the caller checked it is one of the family's)."""
    return str(value).encode() if type(value) is int else b'"' + str(value).encode() + b'"'


def _values(where: str, path: str, value: Any, known: Mapping[str, tuple[Any, ...]] | None) -> dict[str, tuple[Any, ...]]:
    """Axes and their values: names, each with distinct integers or names (those of ``known``, where given)."""
    table = _table(where, path, value, _MAX_PARAMS)
    axes = {}
    for axis, raw in table.items():
        at = f"{path}.{_text(where, path, axis, _IDENTIFIER, 'an axis name')}"
        if known is not None and axis not in known:
            _fail(where, at, "is not an axis of the family")
        values = _list(where, at, raw, _MAX_KERNELS)
        for i, item in enumerate(values):
            if type(item) is int:
                _int(where, f"{at}[{i}]", item, 0, _MAX_INT)
            else:
                _text(where, f"{at}[{i}]", item, _IDENTIFIER, "an axis value (a name or an integer)")
            if known is not None and item not in known[axis]:
                _fail(where, f"{at}[{i}]", f"{echo(item)} is not a value of the family's axis {axis}")
        if len(set(values)) != len(values):
            _fail(where, at, "lists a value twice")
        axes[axis] = tuple(values)
    return axes


def catalog(where: str, name: str, value: Any, lines: KernelLines, kernels: Any) -> FamilyCatalog:
    """Family ``name``'s catalog, validated whole (see the module docstring)."""
    path = f"{FAMILIES_KEY}.{name}"
    item = _object(where, path, value, _CATALOG_KEYS)
    axes = _values(where, f"{path}.axes", item["axes"], None)
    count = _int(where, f"{path}.kernels", item["kernels"], 1, _MAX_KERNELS)
    forms, raw, total = [], [], 0
    for i, entry in enumerate(_list(where, f"{path}.forms", item["forms"], _MAX_KERNELS)):
        at = f"{path}.forms[{i}]"
        form = _object(where, at, entry, _FORM_KEYS)
        kernel = _text(where, f"{at}.kernel", form["kernel"], _IDENTIFIER, "a kernel name")
        # Checked as the first kernel that has it: its errors read as that kernel's would.
        params = params_of(where, f"kernels.{kernel}.params", form["params"])
        signature = _declared_entries.signature(where, f"kernels.{kernel}.signature", form["signature"], params, axes)
        form_axes = MappingProxyType(_values(where, f"{at}.axes", form["axes"], axes))
        number = _int(where, f"{at}.kernels", form["kernels"], 1, _MAX_KERNELS)
        total += number
        forms.append(KernelForm(i, kernel, params, signature, form_axes, number))
        raw.append((form["signature"], form["params"]))
    if not forms or total != count:
        _fail(where, f"{path}.forms", f"its forms count {total} kernels, the family {count}")
    return FamilyCatalog(where, name, MappingProxyType(axes), tuple(forms), count, lines, raw, kernels)
