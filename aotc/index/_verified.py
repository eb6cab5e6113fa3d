"""Kernel files already verified: a record that spares a start-up their sha256.

A kernel's fatbin or source is checked against the size and sha256 its sealed
index entry records before it is used (``aotc.index.files``). Hashing a
fatbin needs ``hashlib``, whose import loads OpenSSL: 10 M instructions, a
sixth of a start-up (benchmarks/RESULTS.md, issue 39). So, as git's index
keeps each file's stat data beside its hash, aotc keeps, for each library
folder, the identity of every file it has hashed: its device, inode, size,
and mtime and ctime in nanoseconds, beside the sha256 it hashed to. A later
process that opens a file of the same identity, before and after reading it,
uses the bytes without hashing them.

Why an unchanged identity means unchanged bytes: anything that changes a file
through its file system (``write``, ``truncate``, a shared writable ``mmap``,
a rename or copy over it, ``utime``) sets its ctime to the current time, and
no call sets ctime to a chosen value; a file replaced is a new inode. What
the identity cannot show, and so what a record trusts:

- **a change in the clock tick of the check** (racy git): timestamps tick
  coarsely, so nothing is kept for a file whose mtime or ctime is less than
  two seconds older than the check (``aotc._folders.SETTLED_NS``);
- **bytes changed beneath the file system**: a failing disk, a write to the
  block device, another host writing a network file system this host caches
  the attributes of, or a clock set back to forge a ctime (root's power). A
  check that must see those hashes every file: ``aotc inspect``, ``aotc
  doctor`` and ``LibraryIndex.open`` without ``lazy`` read no record;
- **the record itself**, as far as its folder, the disk cache's rule
  (``foreign_directory``: this user's, writable by no one else), as the JIT
  cache is: whoever can write there can already plant a cubin the process
  runs. It is read as any untrusted file (regular, capped, no symlink), and a
  line is used only whole and exact; anything else is a miss: the file is
  hashed.

The record is ``verified-files/<key>`` in the cache folder (``AOTC_CACHE_DIR``,
else the user's cache folder plus ``aotc``), one file per library folder: a
header line, then ``sha256 device inode size mtime_ns ctime_ns``, a line per
file kept, appended. It is read once a process, at a library's first kernel;
``aotc cache clear`` forgets it. Where there is no cache folder, or it may be
another's, every file is hashed.
"""

from __future__ import annotations

import os
import stat
import time

from aotc._folders import SETTLED_NS, cache_folder, clear_kept_files
from aotc._untrusted_files import foreign_directory, read_regular
from aotc.errors import UnreadableFileError
from aotc.index.schema import sha256_bytes

__all__ = ["RECORD_FOLDER", "VerifiedFiles", "forget"]

RECORD_FOLDER = "verified-files"
_HEADER = b"aotc verified files 1\n"  # a record of another format is none
# A record over this is started anew (some 9,000 files: files replaced by reinstalls leave lines behind).
_MAX_RECORD_BYTES = 1 << 20
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# A line is appended to a record read whole a moment ago (O_NONBLOCK: a FIFO put
# there since fails to open rather than block); any other is written anew.
_O_APPEND = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | _O_NOFOLLOW
_O_NEW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_NOFOLLOW


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _line(sha256: str, st: os.stat_result) -> bytes:
    return (sha256 + " " + " ".join(map(str, _identity(st))) + "\n").encode("ascii")


class VerifiedFiles:
    """The record of one library folder's verified files (see the module docstring)."""

    __slots__ = ("_appendable", "_kept", "_path", "started")

    def __init__(self, library_folder: str) -> None:
        folder = cache_folder()
        key = sha256_bytes(os.fsencode(os.path.abspath(library_folder)))[:32]
        self._path = os.path.join(folder, RECORD_FOLDER, key) if folder else ""
        self._kept: bytes | None = None  # the record as read, and the lines this process added
        self._appendable = False  # the file holds a record: a line is appended, else the file is written anew
        self.started = 0  # when the read being checked began (time.time_ns)

    def begin(self) -> None:
        """Note the time before a file is opened and read: what ``keep`` holds its stamps to."""
        self.started = time.time_ns()

    def vouches(self, sha256: str, before: os.stat_result, after: os.stat_result) -> bool:
        """Whether the bytes read between ``before`` and ``after`` (the file's fstat
        each side of the read) are those that once hashed to ``sha256``."""
        if not self._path or _identity(before) != _identity(after):
            return False
        return b"\n" + _line(sha256, before) in self._record()

    def keep(self, sha256: str, before: os.stat_result, after: os.stat_result) -> None:
        """Record that the file read between ``before`` and ``after`` hashed to ``sha256``,
        if it did not change meanwhile and had not changed for SETTLED_NS before ``begin``."""
        if not self._path or _identity(before) != _identity(after):
            return
        if self.started - max(before.st_mtime_ns, before.st_ctime_ns) < SETTLED_NS:
            return  # changed too lately: a change in the same tick could keep these stamps
        line = _line(sha256, before)
        kept = self._record()
        if self._appendable and len(kept) + len(line) <= _MAX_RECORD_BYTES:
            written, kept = self._append(line), kept + line
        else:  # none yet, or none to trust (damaged, over its cap, not a file): a new one
            kept = _HEADER + line
            written = self._replace(kept)
        if written:  # else an unwritable cache: the next process hashes the file again
            self._kept, self._appendable = kept, True

    def _append(self, line: bytes) -> bool:
        try:
            fd = os.open(self._path, _O_APPEND)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return False
                os.write(fd, line)  # one write of one line: appends do not interleave
            finally:
                os.close(fd)
        except OSError:
            return False
        return True

    def _replace(self, data: bytes) -> bool:
        """Write the record anew: a temp file renamed over it (whatever was there)."""
        folder = os.path.dirname(self._path)
        temp = f"{self._path}.{os.getpid()}.tmp"
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if foreign_directory(folder):
                return False
            fd = os.open(temp, _O_NEW, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(temp, self._path)
        except OSError:
            return False
        return True

    def _record(self) -> bytes:
        """The record's bytes (read once), from its header on; the header alone where there is none to trust."""
        if self._kept is None:
            self._kept = _HEADER
            if not foreign_directory(os.path.dirname(self._path)):
                try:
                    data = read_regular(self._path, _MAX_RECORD_BYTES)
                except UnreadableFileError:
                    data = b""
                if data.startswith(_HEADER) and data.endswith(b"\n"):
                    self._kept, self._appendable = data, True
        return self._kept


def forget() -> int:
    """Remove every record (``aotc cache clear``); returns how many."""
    return clear_kept_files(RECORD_FOLDER)
