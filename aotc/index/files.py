"""Reading a kernel's files and checking them against the index: the one sha256 check.

Below a library folder nothing is a symlink: not the ``src`` subfolder, not
a file (O_NOFOLLOW). Only regular files are read (opened with O_NONBLOCK, so a
FIFO cannot hang the open), and no more bytes than the index's recorded size. A wheel's
members come through a callable, with the same size and sha256 checks.

A library loaded to run (``FolderFiles(..., remembered=True)``, what
``aotc.load`` opens) hashes a file once: the file's identity is then kept
(``aotc.index._verified``), and a file opened with the same identity, before
and after its read, is not hashed again.
"""

from __future__ import annotations

import os

from aotc._untrusted_files import KERNEL_FILE_LIMIT, open_regular, read_capped
from aotc.errors import DamagedLibraryError, UnreadableFileError
from aotc.index._verified import VerifiedFiles
from aotc.index.schema import INDEX_NAME, sha256_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from aotc.index.views import FileEntry

__all__ = ["FolderFiles", "MemberFiles", "verify"]

_REINSTALL = "the library is damaged (reinstall it)"


def verify(data: bytes, entry: FileEntry, label: str) -> bytes:
    """``data`` if it has the size and sha256 the index records; else DamagedLibraryError naming ``label``."""
    if len(data) != entry.size:
        msg = f"{label}: size {len(data)} bytes, {INDEX_NAME} says {entry.size}; {_REINSTALL}"
        raise DamagedLibraryError(msg)
    digest = sha256_bytes(data)
    if digest != entry.sha256:
        msg = f"{label}: sha256 {digest[:12]}... does not match {INDEX_NAME} ({entry.sha256[:12]}...); {_REINSTALL}"
        raise DamagedLibraryError(msg)
    return data


class FolderFiles:
    """The files of a library folder; ``remembered``: keep and trust the record of
    files already verified (see the module docstring), or hash every file read."""

    def __init__(self, directory: str | os.PathLike[str], *, remembered: bool = False) -> None:
        self.folder = os.fspath(directory)  # a string: loading a kernel imports no pathlib
        self._record = VerifiedFiles(self.folder) if remembered else None

    @property
    def directory(self) -> Path:
        from pathlib import Path

        return Path(self.folder)

    def label(self, entry: FileEntry) -> str:
        return os.path.join(self.folder, entry.file)

    def read(self, entry: FileEntry) -> bytes:
        """The verified bytes of ``entry``."""
        label = self.label(entry)
        # Validation made entry.file a plain name or "src/<plain name>". The
        # subfolder must be a real folder, not a symlink out of the library;
        # open_regular refuses a symlink, FIFO or device as the file itself.
        head, _, _ = entry.file.rpartition("/")
        folder = os.path.join(self.folder, head)
        if head and (os.path.islink(folder) or not os.path.isdir(folder)):
            msg = f"{folder}: not a folder (a symlink?); library files must be regular files in the library folder"
            raise DamagedLibraryError(msg)
        if not os.path.lexists(label):
            msg = f"{label}: missing; {_REINSTALL}"
            raise DamagedLibraryError(msg)
        record = self._record
        if record is not None:
            record.begin()
        try:
            with open_regular(label, KERNEL_FILE_LIMIT) as (fd, before):
                if before.st_size != entry.size:
                    msg = f"{label}: size {before.st_size} bytes, {INDEX_NAME} says {entry.size}; {_REINSTALL}"
                    raise DamagedLibraryError(msg)
                # No more than the recorded size: read_capped refuses a file that grew since fstat.
                data = read_capped(fd, label, entry.size, entry.size)
                after = os.fstat(fd)
        except UnreadableFileError as exc:
            raise DamagedLibraryError(f"{exc}; {_REINSTALL}") from None
        if record is not None and len(data) == entry.size and record.vouches(entry.sha256, before, after):
            return data  # these bytes hashed to entry.sha256 when the file was last hashed
        verify(data, entry, label)
        if record is not None:
            record.keep(entry.sha256, before, after)
        return data


class MemberFiles:
    """The files of a library inside an archive: ``read(name, limit)`` returns a
    member's bytes, None when absent, and refuses members larger than ``limit``."""

    def __init__(self, read: Callable[[str, int], bytes | None], prefix: str) -> None:
        self._read = read
        self.prefix = prefix

    def label(self, entry: FileEntry) -> str:
        return f"{self.prefix}/{entry.file}"

    def read(self, entry: FileEntry) -> bytes:
        label = self.label(entry)
        data = self._read(entry.file, entry.size)
        if data is None:
            msg = f"{label}: missing; {_REINSTALL}"
            raise DamagedLibraryError(msg)
        return verify(data, entry, label)
