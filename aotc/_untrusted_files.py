"""Opening files a hostile or broken folder may hold: regular files only, size-capped.

A plain ``open()`` of a FIFO blocks until a writer appears, forever if none
does; one of a device or a giant file can read without end or exhaust memory;
and one of a symlink reads wherever it points. Every file the runtime reads
from a cache or a library (entries, kernel sources, fatbins) goes through
here: opened with ``O_NONBLOCK | O_NOFOLLOW``, ``fstat``-ed, accepted only as
a regular file no larger than the caller's cap, and read no further than that.
"""

from __future__ import annotations

import os
import stat

from aotc.errors import UnreadableFileError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["KERNEL_FILE_LIMIT", "foreign_directory", "open_regular", "read_capped", "read_regular"]

# The most a kernel's source or fatbin may hold: far above any real one (a
# fatbin for every architecture is a few MiB), far below what exhausts memory.
KERNEL_FILE_LIMIT = 256 * 1024**2

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# O_NONBLOCK makes open() of a FIFO return at once; on a regular file it changes nothing.
_O_READ = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


def open_regular(path: str | os.PathLike[str], max_bytes: int) -> _RegularFile:
    """``with open_regular(path, max_bytes) as (fd, st)``: the fd and fstat of ``path``
    if it is a regular file of at most ``max_bytes``; else ``UnreadableFileError``
    naming the path. The fd is closed on exit."""
    return _RegularFile(os.fspath(path), max_bytes)


class _RegularFile:
    """``open_regular``'s context manager: a class, not ``contextlib.contextmanager``,
    whose import (with ``functools`` and ``collections``) would cost every start-up
    more than the reads it guards."""

    __slots__ = ("_fd", "_max_bytes", "_path")

    def __init__(self, path: str, max_bytes: int) -> None:
        self._path = path
        self._max_bytes = max_bytes
        self._fd = -1

    def __enter__(self) -> tuple[int, os.stat_result]:
        path = self._path
        if not _O_NOFOLLOW and os.path.islink(path):  # no O_NOFOLLOW (Windows): check first
            msg = f"{path}: is a symbolic link, not a regular file"
            raise UnreadableFileError(msg)
        try:
            fd = os.open(path, _O_READ)
        except OSError as exc:
            msg = f"{path}: {_reason(exc, path)}"
            raise UnreadableFileError(msg) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
                msg = f"{path}: is {kind}, not a regular file"
                raise UnreadableFileError(msg)
            if st.st_size > self._max_bytes:
                msg = f"{path}: {st.st_size} bytes, over the limit of {self._max_bytes}"
                raise UnreadableFileError(msg)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return fd, st

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        os.close(self._fd)


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them; else
    ``UnreadableFileError`` naming the path (also when it grows while read)."""
    with open_regular(path, max_bytes) as (fd, st):
        return read_capped(fd, path, max_bytes, st.st_size)


def read_capped(fd: int, path: str | os.PathLike[str], max_bytes: int, expected: int = 0) -> bytes:
    """Read ``fd`` to its end, refusing more than ``max_bytes``: the file may have grown since fstat.
    ``expected`` (fstat's size): read that much at once, so that a large index
    is one read and no join (a few MB in 1 MiB chunks cost ~1 ms more)."""
    chunks, total, first = [], 0, expected + 1
    try:
        while True:
            chunk = os.read(fd, min(max(first, 1 << 20), max_bytes + 1 - total))
            first = 0
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                msg = f"{os.fspath(path)}: grew past the limit of {max_bytes} bytes while read"
                raise UnreadableFileError(msg)
    except OSError as exc:
        msg = f"{os.fspath(path)}: {_reason(exc, path)}"
        raise UnreadableFileError(msg) from None


def foreign_directory(path: str | os.PathLike[str], st: os.stat_result | None = None) -> str:
    """Why the folder ``path`` (of status ``st``, where already taken) may hold
    what others wrote: it is no directory, it is another user's, or others may
    write in it; "" for a directory of this user's that no one else writes.
    What the disk cache and the kept entry points are trusted as far as."""
    if st is None:
        try:
            st = os.stat(path)
        except OSError as exc:
            return f"cannot inspect {os.fspath(path)}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{os.fspath(path)} is not a directory"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"{os.fspath(path)} is owned by uid {st.st_uid}, not by this user ({os.geteuid()})"
    if os.name != "nt" and st.st_mode & 0o022:
        return f"{os.fspath(path)} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def _reason(exc: OSError, path: str | os.PathLike[str]) -> str:
    # O_NOFOLLOW on a symlink fails with ELOOP; say what it means.
    if _O_NOFOLLOW and os.path.islink(path):
        return "is a symbolic link, not a regular file"
    return exc.strerror or type(exc).__name__

