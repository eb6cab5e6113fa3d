"""Reading a kernel's files and checking them against the index: the one sha256 check.

Below a library folder nothing is a symlink: not the ``src`` subfolder, not
a file (O_NOFOLLOW). Only regular files are read (opened with O_NONBLOCK, so a
FIFO cannot hang the open), and no more bytes than the index's recorded size. A wheel's
members come through a callable, with the same size and sha256 checks.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from aotc.errors import DamagedLibraryError
from aotc.index._json import OPEN_FLAGS
from aotc.index.schema import INDEX_NAME, sha256_bytes
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
    """The files of a library folder."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def label(self, entry: FileEntry) -> str:
        return str(self.directory / entry.file)

    def read(self, entry: FileEntry) -> bytes:
        """The verified bytes of ``entry``."""
        label = self.label(entry)
        try:
            data = self._read(entry, label)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                msg = f"{label}: missing; {_REINSTALL}"
            elif exc.errno == errno.ELOOP:
                msg = f"{label}: a symlink; library files must be regular files in the library folder"
            else:
                msg = f"{label}: cannot read: {exc.strerror}"
            raise DamagedLibraryError(msg) from None
        return verify(data, entry, label)

    def _read(self, entry: FileEntry, label: str) -> bytes:
        # Validation made entry.file a plain name or "src/<plain name>". The
        # subfolder must be a real folder, not a symlink out of the library;
        # O_NOFOLLOW refuses a symlink as the file itself.
        head, _, _ = entry.file.rpartition("/")
        if head and not stat.S_ISDIR(os.lstat(self.directory / head).st_mode):
            msg = f"{self.directory / head}: not a folder (a symlink?); library files must be regular files in the library folder"
            raise DamagedLibraryError(msg)
        fd = os.open(self.directory / entry.file, OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                msg = f"{label}: not a regular file; {_REINSTALL}"
                raise DamagedLibraryError(msg)
            if info.st_size != entry.size:
                msg = f"{label}: size {info.st_size} bytes, {INDEX_NAME} says {entry.size}; {_REINSTALL}"
                raise DamagedLibraryError(msg)
            chunks, total = [], 0
            while total <= entry.size:  # one byte more shows a file that grew since fstat
                chunk = os.read(fd, entry.size + 1 - total)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)


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
