"""``LibraryIndex``: a library's ``index.json``, read, validated and verified in one place.

The runtime, ``aotc inspect``, ``aotc warm`` and ``aotc doctor`` all open a
library through this class. Opening reads the index (no symlinks, regular
files only) and keeps typed, immutable views. A kernel's files are read only
on request, through ``read_verified``, which checks their size and sha256.

How much is checked when:

- by default, everything, at once: the top level, every kernel's entry and
  checksums, and (in the build's layout, ``aotc.index._layout``) the
  families' catalogs and the directory, held to the kernels they derive from;
- with ``lazy=True`` (what ``aotc.load`` asks for), what the whole library
  needs at once: the schema, the top level, its seal (the library's name and
  semirings) and the toolkit table. A family's catalog is validated at its
  first request (``family``), and each kernel's entry is parsed, validated
  and its checksums recomputed on the first use of that kernel, before any of
  its fields is used; a kernel reached through its family has what the
  directory and the catalog said of it held to that entry. That needs the
  build's layout; an index written otherwise is read and checked whole (at
  most ``MAX_INDEX_BYTES``), and its catalogs are derived from its kernels.
"""

from __future__ import annotations

import os
from _collections_abc import Mapping  # collections.abc's own: importing that imports collections

from aotc.errors import IndexFormatError, UnknownKernelError, UnreadableFileError
from aotc.index import _lines
from aotc.index._json import parse_index_bytes, read_index_file
from aotc.index._validate import backward_targets, freeze, kernel, validate, validate_top
from aotc.index._values import _MAX_KERNELS
from aotc.index.files import FolderFiles, MemberFiles
from aotc.index.schema import DIRECTORY_KEY, FAMILIES_KEY, INDEX_NAME, LAYOUT_KEY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    from aotc.index.families import FamilyCatalog
    from aotc.index.views import FileEntry, IndexKernel, ToolkitEntry

__all__ = ["KernelTable", "LibraryIndex"]


class KernelTable(Mapping):  # Mapping[str, IndexKernel]
    """The kernels of an index by name, read-only. A kernel's view is made, and
    verified where the index was opened lazily, when it is first asked for;
    its name is found in the directory then."""

    __slots__ = ("_checked", "_entries", "_lines", "_where")

    def __init__(self, where: str, checked: dict[str, IndexKernel], lines: Any = None, entries: dict[str, Any] | None = None) -> None:
        self._where = where
        self._checked = checked  # name -> verified view
        self._lines: _lines.KernelLines | None = lines  # None: every kernel was checked at open
        self._entries: dict[str, Any] = {} if entries is None else entries  # name -> the parsed entry of a kernel checked

    def __getitem__(self, name: str) -> IndexKernel:
        found = self._checked.get(name)
        if found is None:
            row = self._lines.row(name) if self._lines is not None and isinstance(name, str) else None
            if row is None:
                msg = f"{self._where}: no kernel {name!r}"
                raise UnknownKernelError(msg)  # a KeyError, as a Mapping's must be
            found = self._check(name, row)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._checked if self._lines is None else self._lines.names)

    def __len__(self) -> int:
        # The layout's count, checked against the directory where the index is checked whole.
        return len(self._checked) if self._lines is None else self._lines.count

    def __contains__(self, name: object) -> bool:
        return name in (self._checked if self._lines is None else self._lines)

    def __repr__(self) -> str:
        return f"<KernelTable {self._where}: {len(self)} kernels, {len(self._checked)} checked>"

    def entry(self, name: str) -> Any:
        """The validated JSON entry of kernel ``name``, checking it if not yet."""
        self[name]
        return self._entries[name]

    def _check(self, name: str, row: tuple[int, str, bytes, int]) -> IndexKernel:
        assert self._lines is not None
        entry = self._lines.entry(name, row)  # its line opens with its name and the row's family
        checked = kernel(self._where, name, entry)
        backward_targets(self._where, checked, _Named(self._lines))  # a target is checked when it is used
        self._entries[name] = entry
        self._checked[name] = checked  # a race checks twice, with the same answer
        return checked


class _Named:
    """The kernels a backward may name: those of the directory (each checked when used)."""

    __slots__ = ("_lines",)

    def __init__(self, lines: _lines.KernelLines) -> None:
        self._lines = lines

    def __contains__(self, name: object) -> bool:
        return name in self._lines

    def __getitem__(self, name: str) -> None:
        return None  # not checked here: a route's target is checked when it is used


class LibraryIndex(Mapping):  # Mapping[str, Any]
    """One library's index. As a Mapping it is the validated document, read-only
    (``index["semirings"]``); the typed views are its attributes."""

    def __init__(
        self, data: bytes | None, where: str, files: FolderFiles | MemberFiles | None = None, *, lazy: bool = False,
        split: Any = None,
    ) -> None:
        """Validate ``data``, the bytes of the index at ``where`` (a path or a label
        for messages); ``files`` reads the kernels' files (None: no files to read).
        ``lazy``: check each kernel at its first use (see the module docstring);
        ``split``: what ``_lines`` read of the file itself (``open``), in place of ``data``."""
        if split is None and data is not None:
            split = _lines.split(data, where)
        self._families: dict[str, FamilyCatalog] = {}
        if split is None:
            validated = validate(where, parse_index_bytes(data, where))  # type: ignore[arg-type]
            self._document = validated.document
            self.toolkit: ToolkitEntry | None = validated.toolkit
            self.kernels = KernelTable(where, validated.kernels, entries=self._document["kernels"])
            self._lines: _lines.KernelLines | None = None  # made from the kernels when a family is asked for
            self._entries_checked = True
        else:
            self._document, self._lines = split
            self.toolkit = validate_top(where, self._document)
            if self._lines.count > _MAX_KERNELS:
                msg = f"{where}: {LAYOUT_KEY}.kernels: {self._lines.count}, more than the {_MAX_KERNELS} an index may hold"
                raise IndexFormatError(msg)
            self.kernels = KernelTable(where, {}, self._lines)
            self._entries_checked = False  # the document's kernels table is filled on request
        self.where = where
        self.name: str = self._document["library"]
        self._frozen: Mapping[str, Any] | None = None
        self._frozen_top: Mapping[str, Any] | None = None
        self.ptx_toolkit = self._ptx_toolkit()
        self._files = files
        if split is not None and not lazy:
            self._check_layout()

    @classmethod
    def open(cls, directory: str | os.PathLike[str], *, lazy: bool = False) -> LibraryIndex:
        """The index of the library folder ``directory``; LibraryNotFoundError if it has none."""
        path = os.path.join(os.fspath(directory), INDEX_NAME)
        try:
            split = _lines.open_lines(path, path)  # the top level only: no kernel's line
        except UnreadableFileError:
            split = None  # read_index_file says why, in its own words
        # A lazy index (a library loaded to run) keeps the record of files already
        # hashed; a whole check (aotc inspect, doctor) hashes every file it reads.
        files = FolderFiles(directory, remembered=lazy)
        if split is not None:
            return cls(None, path, files, lazy=lazy, split=split)
        return cls(read_index_file(path), path, files, lazy=lazy)

    # -- families -------------------------------------------------------------------

    def family_names(self) -> tuple[str, ...]:
        """The families of the index, in index order."""
        return self._layout().family_names()

    def family(self, name: str) -> FamilyCatalog:
        """Family ``name``'s catalog, validated at its first request; its kernels are
        found and checked through it (``aotc.index.families``)."""
        found = self._families.get(name)
        if found is None:
            from aotc.index.families import catalog  # with the bindings' first use, not with aotc.load

            lines = self._layout()
            raw = lines.catalog(name)
            if raw is None:
                msg = f"{self.where}: no family {name!r}"
                raise UnknownKernelError(msg)
            found = self._families[name] = catalog(self.where, name, raw, lines, self.kernels)
        return found

    def _layout(self) -> _lines.KernelLines:
        """The build's layout of this index: its own, or derived from its kernels where it was read whole."""
        if self._lines is None:
            from aotc.index._layout import render

            made = _lines.split(render(self._document), self.where)
            assert made is not None  # render writes the layout for any index with kernels
            self._lines = made[1]
        return self._lines

    def _check_layout(self) -> None:
        """Every kernel checked, and the layout held to the kernels: the catalogs and
        the directory are what they derive to, and the table holds no other line."""
        from aotc.index._layout import derived, point_text

        lines = self._layout()
        names = list(lines.rows())  # every row at once: each lookup below is a dict's
        if len(names) != lines.count or lines.lines_in_table() != len(names):
            msg = f"{self.where}: {LAYOUT_KEY}: counts {lines.count} kernels, the directory {len(names)}, the kernels table {lines.lines_in_table()} lines"
            raise IndexFormatError(msg)
        checked = {name: self.kernels[name] for name in names}
        for view in checked.values():
            backward_targets(self.where, view, checked)  # a route's target has gradient kernels of its own
        catalogs, rows = derived((name, self.kernels.entry(name)) for name in names)
        if list(lines.family_names()) != list(catalogs):
            msg = f"{self.where}: {FAMILIES_KEY}: does not list the families of the kernels table, in its order"
            raise IndexFormatError(msg)
        for family, expected in catalogs.items():
            if lines.catalog(family) != expected:
                msg = f"{self.where}: {FAMILIES_KEY}.{family}: is not the catalog of the family's kernels; rebuild or reinstall the library"
                raise IndexFormatError(msg)
        for name, (family, point, form) in rows.items():
            if lines.row(name)[1:] != (family, point_text(point)[1:-1].encode(), form):  # type: ignore[index]
                msg = f"{self.where}: {DIRECTORY_KEY}.{name}: does not give the kernel's family, axis values and form"
                raise IndexFormatError(msg)

    @property
    def document(self) -> Mapping[str, Any]:
        """The validated document, read-only: objects as mapping proxies, lists as
        tuples. Where the index was opened lazily, this checks every kernel, and
        leaves out the layout's directory (``kernel_lines``), which was never parsed."""
        if self._frozen is None:
            if not self._entries_checked:
                self._document["kernels"] = {name: self.kernels.entry(name) for name in self.kernels}
                self._entries_checked = True
            self._frozen = freeze(self._document)
        return self._frozen

    @property
    def directory(self) -> Path | None:
        """The library folder, or None for an index read from an archive or from bytes alone."""
        return self._files.directory if isinstance(self._files, FolderFiles) else None

    # -- the document, read-only ----------------------------------------------

    def __getitem__(self, key: str) -> Any:
        if key == "kernels":
            return self.document[key]
        top = self._frozen_top
        if top is None:  # the top level alone: reading it checks no kernel
            top = self._frozen_top = freeze({k: v for k, v in self._document.items() if k != "kernels"})
        return top[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._document)

    def __len__(self) -> int:
        return len(self._document)

    def __repr__(self) -> str:
        return f"<LibraryIndex {self.name!r} at {self.where}: {len(self.kernels)} kernels>"

    # -- kernels ----------------------------------------------------------------

    def kernel(self, name: str) -> IndexKernel:
        """The kernel called ``name``, checked; UnknownKernelError (with near names) if none is."""
        if isinstance(name, str) and name in self.kernels:
            return self.kernels[name]
        close = [k for k in self.kernels if isinstance(name, str) and (name in k or k in name)][:5]
        hint = f" (did you mean: {', '.join(close)})" if close else ""
        msg = f"library {self.name!r} has no kernel {name!r}{hint}"
        raise UnknownKernelError(msg)

    def archs(self, part: str) -> list[str]:
        """Every SASS (``part="sass"``) or PTX arch of any kernel, sorted as text."""
        return sorted({a for k in self.kernels.values() for a in (k.sass if part == "sass" else k.ptx)})

    # -- files --------------------------------------------------------------------

    def file_label(self, kernel: str | IndexKernel, part: str) -> str:
        """Where a kernel's fatbin or source is, for messages (a path for a folder)."""
        entry = self._entry(kernel, part)
        return self._files.label(entry) if self._files is not None else entry.file

    def read_verified(self, kernel: str | IndexKernel, part: str) -> bytes:
        """The bytes of a kernel's ``part`` ("fatbin" or "source"), checked against the
        recorded size and sha256; DamagedLibraryError names the file otherwise."""
        entry = self._entry(kernel, part)
        if self._files is None:
            msg = f"{self.where}: an index read from bytes alone has no files to read"
            raise IndexFormatError(msg)
        return self._files.read(entry)

    def _entry(self, kernel: str | IndexKernel, part: str) -> FileEntry:
        found = self.kernel(kernel) if isinstance(kernel, str) else kernel
        if part not in ("fatbin", "source"):
            msg = f"{part!r} is not a kernel file (fatbin or source)"
            raise IndexFormatError(msg)
        return found.file(part)

    # -- the toolkit ----------------------------------------------------------------

    def _ptx_toolkit(self) -> tuple[int, int]:
        # Indexes before the toolkit table named only nvcc's version.
        text = self.toolkit.version if self.toolkit is not None else str(self._document.get("nvcc_version", ""))
        parts = text.split(".")
        if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
            what = "nvcc_version" if "nvcc_version" in self._document else "toolkit"
            msg = f"{self.where}: {what}: no toolkit version like '13.0.88' (the CUDA version that wrote the PTX)"
            raise IndexFormatError(msg)
        return int(parts[0]), int(parts[1])

    def toolkit_label(self) -> str:
        """What compiled the images, for one line of a report: ``nvcc 13.0.88, driver >= 13000``."""
        if self.toolkit is not None:
            return f"{self.toolkit.compiler or '?'} {self.toolkit.version}, driver >= {self.toolkit.min_driver}"
        return f"nvcc {self._document.get('nvcc_version', '?')}"
