"""``LibraryIndex``: a library's ``index.json``, read, validated and verified in one place.

The runtime, ``aotc inspect``, ``aotc warm`` and ``aotc doctor`` all open a
library through this class. Opening reads the index (capped, no symlinks,
regular files only), validates the whole document and its checksums once,
and keeps typed, immutable views. A kernel's files are read only on request,
through ``read_verified``, which checks their size and sha256.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from aotc.errors import IndexFormatError, UnknownKernelError
from aotc.index._json import parse_index_bytes, read_index_file
from aotc.index._validate import freeze, validate
from aotc.index.files import FolderFiles, MemberFiles
from aotc.index.schema import INDEX_NAME
from aotc.index.views import FileEntry, IndexKernel, KernelKey, ToolkitEntry

__all__ = ["LibraryIndex"]


class LibraryIndex(Mapping[str, Any]):
    """One library's index. As a Mapping it is the validated document, read-only
    (``index["semirings"]``); the typed views are its attributes."""

    def __init__(self, data: bytes, where: str, files: FolderFiles | MemberFiles | None = None) -> None:
        """Validate ``data``, the bytes of the index at ``where`` (a path or a label
        for messages); ``files`` reads the kernels' files (None: no files to read)."""
        validated = validate(where, parse_index_bytes(data, where))
        self.where = where
        self.name: str = validated.document["library"]
        self._document = validated.document  # frozen on first use: launching never reads it
        self._frozen: Mapping[str, Any] | None = None
        self.kernels: Mapping[str, IndexKernel] = MappingProxyType(validated.kernels)
        self.toolkit: ToolkitEntry | None = validated.toolkit
        self.by_kind: Mapping[KernelKey, IndexKernel] = MappingProxyType({k.key: k for k in validated.kernels.values()})
        self.ptx_toolkit = self._ptx_toolkit()
        self._files = files

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> LibraryIndex:
        """The index of the library folder ``directory``; LibraryNotFoundError if it has none."""
        folder = Path(directory)
        path = folder / INDEX_NAME
        return cls(read_index_file(path), str(path), FolderFiles(folder))

    @property
    def document(self) -> Mapping[str, Any]:
        """The validated document, read-only: objects as mapping proxies, lists as tuples."""
        if self._frozen is None:
            self._frozen = freeze(self._document)
        return self._frozen

    @property
    def directory(self) -> Path | None:
        """The library folder, or None for an index read from an archive or from bytes alone."""
        return self._files.directory if isinstance(self._files, FolderFiles) else None

    # -- the document, read-only ----------------------------------------------

    def __getitem__(self, key: str) -> Any:
        return self.document[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.document)

    def __len__(self) -> int:
        return len(self.document)

    def __repr__(self) -> str:
        return f"<LibraryIndex {self.name!r} at {self.where}: {len(self.kernels)} kernels>"

    # -- kernels ----------------------------------------------------------------

    def kernel(self, name: str) -> IndexKernel:
        """The kernel called ``name``; UnknownKernelError (with near names) if none is."""
        kernel = self.kernels.get(name) if isinstance(name, str) else None
        if kernel is None:
            close = [k for k in self.kernels if isinstance(name, str) and (name in k or k in name)][:5]
            hint = f" (did you mean: {', '.join(close)})" if close else ""
            msg = f"library {self.name!r} has no kernel {name!r}{hint}"
            raise UnknownKernelError(msg)
        return kernel

    def find(self, semiring: str, dtype: str, pass_: str = "forward", variant: str = "single") -> IndexKernel:
        kernel = self.by_kind.get((semiring, dtype, pass_, variant))
        if kernel is None:
            msg = f"library {self.name!r} has no kernel for semiring={semiring}, dtype={dtype}, pass={pass_}, variant={variant}"
            raise UnknownKernelError(msg)
        return kernel

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
        return f"nvcc {self.document.get('nvcc_version', '?')}"
