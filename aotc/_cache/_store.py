"""The disk store: one cache directory of entries, their locks and temp files.

Shared by the runtime's JIT cache (``aotc.runtime.cache``) and the build's
fatbin cache (``aotc.build.fatbin_cache``): one implementation of the safety
rules below, so neither side can drift from the other.

The directory holds three kinds of file, and nothing else in it is ever touched:

- ``<digest>.entry``: an entry (see ``_entry``);
- ``<digest>.lock``: an empty file that fills of that key ``flock``;
- ``.<digest>.<random>.tmp``: an entry being written, renamed over
  ``<digest>.entry`` only once it is complete and fsynced.

A directory that is not safe to trust is refused with one ``CacheWarning``
and the cache runs uncached; a directory we cannot write to serves hits and
builds misses in memory.
"""

from __future__ import annotations

import os
import secrets
import stat
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: fills are serialised per process only.
    fcntl = None  # type: ignore[assignment]

from aotc.errors import ArgumentError, ArgumentTypeError, CacheError, CacheWarning, echo
from aotc._cache._entry import HEADER, entry_header, read_entry
from aotc._cache._key import CacheKey
from aotc._untrusted_files import foreign_directory

__all__ = ["DEFAULT_MAX_BYTES", "CacheInfo", "CacheStats", "DiskCache"]

DEFAULT_MAX_BYTES = 2 * 1024**3

STATE_OK = "ok"
STATE_READ_ONLY = "read-only"
STATE_REFUSED = "refused"

_ENTRY_SUFFIX = ".entry"
_LOCK_SUFFIX = ".lock"
_TEMP_SUFFIX = ".tmp"
# A temp file this old belongs to a writer that died; younger ones may be live.
_STALE_TEMP_SECONDS = 3600
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_FLAGS = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
# Lock files are opened with O_NONBLOCK too: a FIFO planted as one must not block open().
_O_LOCK = os.O_RDWR | _O_NOFOLLOW | _O_FLAGS | getattr(os, "O_NONBLOCK", 0)
# How long a filler waits for another's fill lock before filling without it.
# A fill is one compile (NVRTC: under a second; the emulator's g++: seconds),
# so a lock held this long is a stuck or hostile holder, and waiting longer
# would stall the process. Filling without the lock is still correct (the
# entry is written by temp file and rename); it only repeats a compile.
LOCK_WAIT_SECONDS = 120.0


@dataclass(frozen=True)
class CacheStats:
    """Counts for tests: ``get_or_create`` outcomes, ``build()`` calls, entries written."""

    hits: int = 0
    misses: int = 0
    builds: int = 0
    saves: int = 0


@dataclass(frozen=True)
class CacheInfo:
    """What ``aotc cache info`` prints."""

    directory: Path
    state: str  # "ok", "read-only" or "refused"
    entries: int
    total_bytes: int
    max_bytes: int
    reason: str = ""  # why the state is not "ok"


class DiskCache:
    """One cache directory. Nothing touches the disk until first use."""

    def __init__(
        self, directory: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES, setting: str = "AOTC_CACHE_DIR"
    ) -> None:
        if not isinstance(directory, (str, os.PathLike)):
            msg = f"DiskCache directory must be a str or path, not {type(directory).__name__} ({echo(directory)})"
            raise ArgumentTypeError(msg)
        if type(max_bytes) is not int:
            msg = f"DiskCache max_bytes must be an int, not {type(max_bytes).__name__} ({echo(max_bytes)})"
            raise ArgumentTypeError(msg)
        if max_bytes < 0:
            msg = f"DiskCache max_bytes must be a non-negative int, not {max_bytes}"
            raise ArgumentError(msg)
        text = os.fspath(directory)
        if not isinstance(text, str) or not text or "\0" in text:
            msg = f"DiskCache directory must be a non-empty str path, not {echo(text)}"
            raise ArgumentError(msg)
        self.directory = Path(os.path.abspath(os.path.expanduser(text)))
        self.max_bytes = max_bytes
        self.setting = setting  # the variable that names this directory, for messages
        self._mutex = threading.Lock()
        self._state: str | None = None
        self._reason = ""
        self._key_locks: dict[str, threading.Lock] = {}
        self._stats = CacheStats()
        self._warned_cap = False

    def __repr__(self) -> str:
        return f"DiskCache({str(self.directory)!r}, max_bytes={self.max_bytes})"

    @property
    def state(self) -> str:
        return self._prepare()

    @property
    def stats(self) -> CacheStats:
        return self._stats

    def load(self, key: CacheKey) -> bytes | None:
        """The payload stored for ``key``, or None for a miss of any kind."""
        _check_key(key)
        if self._prepare() == STATE_REFUSED:
            return None
        return read_entry(self._path(key, _ENTRY_SUFFIX), key, self.max_bytes)

    def save(self, key: CacheKey, payload: bytes) -> bool:
        """Store ``payload`` atomically; False where it was not stored (never raises OSError)."""
        _check_key(key)
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            msg = f"DiskCache.save: payload must be bytes, not {type(payload).__name__}"
            raise ArgumentTypeError(msg)
        payload = bytes(payload)
        if self._prepare() != STATE_OK:
            return False
        refusal = self.over_cap(len(payload))
        if refusal:  # kept no entry, and evicted none for it: say so, once per cache
            if not self._warned_cap:
                self._warned_cap = True
                warnings.warn(f"aotc: {refusal}", CacheWarning, stacklevel=3)
            return False
        path = self._path(key, _ENTRY_SUFFIX)
        try:
            self._write_entry(key, path, payload)
        except OSError:
            return False
        self._count(saves=1)
        with suppress(OSError):
            self._evict(self.max_bytes, keep=path.name)
        return True

    def over_cap(self, payload_bytes: int) -> str:
        """Why an entry of ``payload_bytes`` cannot be kept under this cache's cap, or ""."""
        size = HEADER.size + payload_bytes
        if size <= self.max_bytes:
            return ""
        cap = self.setting.removesuffix("_DIR") + "_MAX_BYTES"
        return f"not caching a {size}-byte entry: it alone is over the cap of {self.max_bytes} bytes of the cache at {self.directory} ({cap}); raise the cap to keep it"

    def get_or_create(self, key: CacheKey, build: Callable[[], bytes]) -> bytes:
        """The cached payload for ``key``; on a miss, ``build()`` it once across threads and processes."""
        if not callable(build):
            msg = f"DiskCache.get_or_create: build must be callable, not {type(build).__name__}"
            raise ArgumentTypeError(msg)
        payload = self.load(key)
        if payload is None:
            with self._fill_lock(key):
                payload = self.load(key)  # another filler may have finished while we waited
                if payload is None:
                    self._count(misses=1)
                    payload = build()
                    if not isinstance(payload, (bytes, bytearray, memoryview)):
                        msg = f"build() must return bytes, not {type(payload).__name__}"
                        raise ArgumentTypeError(msg)
                    payload = bytes(payload)
                    self._count(builds=1)
                    self.save(key, payload)
                    return payload
        self._count(hits=1)
        return payload

    def info(self) -> CacheInfo:
        state = self._prepare()
        entries = [] if state == STATE_REFUSED else self._entries()
        total = sum(size for _, _, size in entries)
        return CacheInfo(self.directory, state, len(entries), total, self.max_bytes, self._reason)

    def prune(self, max_bytes: int | None = None) -> int:
        """Evict least recently used entries down to the cap; drop dead temp and lock files."""
        if max_bytes is not None and (type(max_bytes) is not int or max_bytes < 0):
            msg = f"max_bytes: expected a whole number of bytes, 0 or more, got {echo(max_bytes)}"
            raise ArgumentError(msg)
        self._require_writable("prune")
        removed = self._evict(self.max_bytes if max_bytes is None else max_bytes)
        now = time.time()
        live = {name for name, _, _ in self._entries()}
        for item in self._scan():
            if item.name.endswith(_TEMP_SUFFIX) and item.name.startswith("."):
                with suppress(OSError):
                    if now - item.stat(follow_symlinks=False).st_mtime > _STALE_TEMP_SECONDS:
                        os.unlink(item.path)
            elif item.name.endswith(_LOCK_SUFFIX):
                entry = item.name[: -len(_LOCK_SUFFIX)] + _ENTRY_SUFFIX
                if entry not in live:
                    _unlink_unlocked(item.path)
        return removed

    def clear(self) -> int:
        """Remove every entry, temp file and lock file; other files stay. Returns entries removed."""
        self._require_writable("clear")
        removed = 0
        for item in self._scan():
            name = item.name
            is_temp = name.startswith(".") and name.endswith(_TEMP_SUFFIX)
            if name.endswith((_ENTRY_SUFFIX, _LOCK_SUFFIX)) or is_temp:
                with suppress(OSError):
                    os.unlink(item.path)
                    removed += name.endswith(_ENTRY_SUFFIX)
        return removed

    # -- internals -------------------------------------------------------

    def _prepare(self) -> str:
        with self._mutex:
            if self._state is None:
                self._state, self._reason = _inspect_directory(self.directory)
                if self._state == STATE_REFUSED:
                    msg = (
                        f"aotc: not using the disk cache: {self._reason}; running uncached "
                        f"(fix its permissions or set {self.setting} to a private directory)"
                    )
                    warnings.warn(msg, CacheWarning, stacklevel=4)
                elif self._state == STATE_READ_ONLY and not self.directory.is_dir() and _first_unmade(self.directory):
                    # A read-only directory is a choice (a shared, pre-filled
                    # cache) and serves hits; one that cannot be made serves
                    # nothing, and every process would compile again unseen.
                    msg = f"aotc: not caching: {self._reason}; nothing is kept between processes (set {self.setting} to a writable directory)"
                    warnings.warn(msg, CacheWarning, stacklevel=4)
            return self._state

    def _require_writable(self, action: str) -> None:
        if self._prepare() != STATE_OK:
            msg = f"cannot {action} the cache at {self.directory}: {self._reason}"
            raise CacheError(msg)

    def _count(self, **deltas: int) -> None:
        with self._mutex:
            old = self._stats
            self._stats = CacheStats(
                hits=old.hits + deltas.get("hits", 0),
                misses=old.misses + deltas.get("misses", 0),
                builds=old.builds + deltas.get("builds", 0),
                saves=old.saves + deltas.get("saves", 0),
            )

    def _path(self, key: CacheKey, suffix: str) -> Path:
        return self.directory / f"{key.digest}{suffix}"

    def _write_entry(self, key: CacheKey, path: Path, payload: bytes) -> None:
        header = entry_header(key, payload)
        temp = self.directory / f".{key.digest}.{secrets.token_hex(8)}{_TEMP_SUFFIX}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_FLAGS, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(header)
                file.write(payload)
                file.flush()
                os.fsync(file.fileno())
            # rename replaces a symlink itself, never the file it points to
            os.replace(temp, path)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp)
            raise
        _fsync_directory(self.directory)

    @contextmanager
    def _fill_lock(self, key: CacheKey) -> Iterator[None]:
        with self._mutex:
            thread_lock = self._key_locks.setdefault(key.digest, threading.Lock())
        with thread_lock:
            fd = self._lock_file(key)
            try:
                yield
            finally:
                if fd is not None:
                    os.close(fd)  # closing releases the flock

    def _lock_file(self, key: CacheKey) -> int | None:
        # Locking only matters where the result is saved; without it we still fill correctly.
        if fcntl is None or self._prepare() != STATE_OK:
            return None
        try:
            fd = os.open(self._path(key, _LOCK_SUFFIX), _O_LOCK | os.O_CREAT, 0o600)
        except OSError:
            return None
        deadline, pause = time.monotonic() + LOCK_WAIT_SECONDS, 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:  # another filler holds it: poll, backing off to 0.1 s
                if time.monotonic() >= deadline:
                    break
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
            except OSError:  # e.g. ENOLCK on some network filesystems
                os.close(fd)
                return None
        os.close(fd)
        msg = (
            f"aotc: the cache's fill lock {self._path(key, _LOCK_SUFFIX)} was held for {LOCK_WAIT_SECONDS:g} s; "
            "building this entry without it"
        )
        warnings.warn(msg, CacheWarning, stacklevel=5)
        return None

    def _scan(self) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(self.directory) as items:
                return list(items)
        except OSError:
            return []

    def _entries(self) -> list[tuple[str, int, int]]:
        """(name, last use in ns, size) of every regular entry file."""
        found = []
        for item in self._scan():
            if not item.name.endswith(_ENTRY_SUFFIX):
                continue
            with suppress(OSError):
                st = item.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    found.append((item.name, st.st_mtime_ns, st.st_size))
        return found

    def _evict(self, max_bytes: int, keep: str | None = None) -> int:
        # mtime, not atime: a hit sets it with os.utime, which works under noatime too.
        entries = sorted(self._entries(), key=lambda entry: entry[1])
        total = sum(size for _, _, size in entries)
        removed = 0
        for name, _, size in entries:
            if total <= max_bytes:
                break
            if name == keep:
                continue
            with suppress(FileNotFoundError):
                os.unlink(self.directory / name)
                removed += 1
            total -= size
        return removed


def _inspect_directory(directory: Path) -> tuple[str, str]:
    """(state, reason) for a cache directory, creating it 0700 if it is missing."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except FileExistsError:
        return STATE_REFUSED, f"{directory} exists and is not a directory"
    except OSError as exc:
        if not directory.is_dir():
            return STATE_READ_ONLY, f"cannot create {directory}: {exc.strerror}"
    try:
        st = os.stat(directory)
    except OSError as exc:
        return STATE_READ_ONLY, f"cannot inspect {directory}: {exc.strerror}"
    problem = foreign_directory(directory, st)
    if problem:
        return STATE_REFUSED, problem
    if not os.access(directory, os.W_OK | os.X_OK):
        return STATE_READ_ONLY, f"{directory} is not writable"
    return STATE_OK, ""


# The cache folders that could not be made, warned about once a process: a
# cache inside another (NVRTC's answers in the runtime's) warns for the outer.
_UNMADE: set[Path] = set()


def _first_unmade(directory: Path) -> bool:
    """Whether ``directory`` is the first unmade one of its line: neither it nor a folder above it was warned about."""
    if _UNMADE.intersection((directory, *directory.parents)):
        return False
    _UNMADE.add(directory)
    return True


def _check_key(key: object) -> CacheKey:
    if not isinstance(key, CacheKey):
        msg = f"a cache key must be a CacheKey, not {type(key).__name__}"
        raise ArgumentTypeError(msg)
    return key


def _unlink_unlocked(path: str) -> None:
    if fcntl is None:
        return
    with suppress(OSError):
        fd = os.open(path, _O_LOCK)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(path)
        finally:
            os.close(fd)


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform can open a directory.
    with suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


