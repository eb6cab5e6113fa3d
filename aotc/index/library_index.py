"""``LibraryIndex``: a library's ``index.json``, read, validated and verified in one place.

The runtime, ``aotc inspect``, ``aotc warm`` and ``aotc doctor`` all open a
library through this class. Opening reads the index (capped, no symlinks,
regular files only) and keeps typed, immutable views. A kernel's files are
read only on request, through ``read_verified``, which checks their size and
sha256.

How much is checked when:

- by default, the whole document and every checksum, at once;
- with ``lazy=True`` (what ``aotc.load`` asks for), what the whole library
  needs at once: the schema, the top level, its seal (the library's name and
  semirings) and the toolkit table; each kernel's entry is parsed, validated
  and its checksums recomputed on the first use of that kernel, before any of
  its fields is used. That needs the build's one-kernel-a-line layout
  (``aotc.index._lines``); an index written otherwise is checked whole.
  The layout's directory (``kernel_lines``) only says where a kernel's line
  is; read whole, it is held to the kernels table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from aotc.errors import IndexFormatError, UnknownKernelError, UnreadableFileError
from aotc.index import _lines
from aotc.index._json import parse_index_bytes, read_index_file
from aotc.index._validate import backward_targets, freeze, kernel, validate, validate_top
from aotc.index.files import FolderFiles, MemberFiles
from aotc.index.schema import INDEX_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    from aotc.index.views import FileEntry, IndexKernel, ToolkitEntry

__all__ = ["KernelTable", "LibraryIndex"]


class KernelTable(Mapping):  # Mapping[str, IndexKernel]
    """The kernels of an index by name, read-only. Names and their count are
    known at once; a kernel's view is made, and verified where the index was
    opened lazily, when it is first asked for."""

    __slots__ = ("_checked", "_entries", "_lines", "_where")

    def __init__(self, where: str, checked: dict[str, IndexKernel], lines: Any = None) -> None:
        self._where = where
        self._checked = checked  # name -> verified view
        self._lines: _lines.KernelLines | None = lines  # None: every kernel was checked at open
        self._entries: dict[str, Any] = {}  # name -> the parsed entry of a kernel checked here

    def __getitem__(self, name: str) -> IndexKernel:
        found = self._checked.get(name)
        if found is None:
            if self._lines is None or name not in self._lines.names:
                msg = f"{self._where}: no kernel {name!r}"
                raise UnknownKernelError(msg)  # a KeyError, as a Mapping's must be
            found = self._check(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._checked if self._lines is None else self._lines.names)

    def __len__(self) -> int:
        return len(self._checked if self._lines is None else self._lines.names)

    def __contains__(self, name: object) -> bool:
        return name in (self._checked if self._lines is None else self._lines.names)

    def __repr__(self) -> str:
        return f"<KernelTable {self._where}: {len(self)} kernels, {len(self._checked)} checked>"

    def families(self) -> dict[str, str]:
        """Every kernel's family, name -> family, in index order. Where the index
        was opened lazily, what its directory says, unchecked: each kernel is
        checked when it is looked up, before it is used."""
        if self._lines is None:
            return {name: k.family for name, k in self._checked.items()}
        return self._lines.families()

    def entry(self, name: str) -> Any:
        """The validated JSON entry of kernel ``name``, checking it if not yet
        (for an index opened lazily: the others keep their entries in the document)."""
        self[name]
        return self._entries[name]

    def _check(self, name: str) -> IndexKernel:
        assert self._lines is not None
        entry = self._lines.entry(name)
        checked = kernel(self._where, name, entry)
        if self._lines.family(name) != checked.family:  # cannot be, for strict JSON without duplicate keys
            msg = f"{self._where}: kernels.{name}: its line opens with a family its entry does not hold"
            raise IndexFormatError(msg)
        backward_targets(self._where, checked, self._lines.names)  # a target is checked when it is used
        self._entries[name] = entry
        self._checked[name] = checked  # a race checks twice, with the same answer
        return checked


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
        if split is None and lazy:
            split = _lines.split(data, where)
        if split is None:
            validated = validate(where, parse_index_bytes(data, where))
            _lines.check(data, validated.document, where)
            self._document = validated.document
            self.toolkit: ToolkitEntry | None = validated.toolkit
            self.kernels = KernelTable(where, validated.kernels)
            self._entries_checked = True
        else:
            self._document, lines = split
            self.toolkit = validate_top(where, self._document)
            self.kernels = KernelTable(where, {}, lines)
            self._entries_checked = False  # the document's kernels table is filled on request
        self.where = where
        self.name: str = self._document["library"]
        self._frozen: Mapping[str, Any] | None = None
        self._frozen_top: Mapping[str, Any] | None = None
        self.ptx_toolkit = self._ptx_toolkit()
        self._files = files

    @classmethod
    def open(cls, directory: str | os.PathLike[str], *, lazy: bool = False) -> LibraryIndex:
        """The index of the library folder ``directory``; LibraryNotFoundError if it has none."""
        path = os.path.join(os.fspath(directory), INDEX_NAME)
        if lazy and os.path.isfile(path):
            try:
                split = _lines.open_lines(path, path)  # the top level and directory only: no kernel's line
            except UnreadableFileError:
                split = None  # read_index_file says why, in its own words
            if split is not None:
                return cls(None, path, FolderFiles(directory), lazy=True, split=split)
        return cls(read_index_file(path), path, FolderFiles(directory), lazy=lazy)

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
