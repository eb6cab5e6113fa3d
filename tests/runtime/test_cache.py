from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import pytest

from aotc._version import __version__
from aotc.errors import CacheError
from aotc.runtime import cache as cache_module
from aotc.runtime.cache import (
    DEFAULT_MAX_BYTES,
    ENTRY_SCHEMA,
    KEY_SCHEMA,
    CacheKey,
    CacheStats,
    CacheWarning,
    DiskCache,
    default_cache,
    default_cache_dir,
)

__all__: list[str] = []

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE = b'extern "C" __global__ void maxplus_f32(float* c) { c[0] = 1.0f; }\n'
BASE = {
    "source": SOURCE,
    "options": ("-O3", "--std=c++17"),
    "target": "sm_87",
    "compiler": "nvrtc 13.0",
    "aotc_version": __version__,
    "key_schema": KEY_SCHEMA,
}
HEADER_SIZE = struct.calcsize("<8sI32sQ32s")
PAYLOAD = b"\x7fELF cubin bytes" * 64


def make_key(**changes: object) -> CacheKey:
    return CacheKey.for_source(**{**BASE, **changes})  # type: ignore[arg-type]


def entry_path(cache: DiskCache, key: CacheKey) -> Path:
    return cache.directory / f"{key.digest}.entry"


def private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


class CountingBuild:
    """A build() that counts its calls, so tests can say 'compiled once'."""

    def __init__(self, payload: bytes = PAYLOAD, delay: float = 0.0) -> None:
        self.payload = payload
        self.delay = delay
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self) -> bytes:
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)
        return self.payload


@pytest.fixture
def cache(tmp_path: Path) -> DiskCache:
    return DiskCache(tmp_path / "cache")


# -- the key -------------------------------------------------------------------


def test_identical_rebuild_gives_the_same_digest() -> None:
    first = make_key()
    again = CacheKey.for_source(
        bytes(bytearray(SOURCE)),
        options=list(BASE["options"]),  # type: ignore[call-overload]
        target="sm_87",
        compiler="nvrtc 13.0",
    )
    assert again == first
    assert again.digest == first.digest
    assert hash(again) == hash(first)
    assert len(first.digest) == 64
    int(first.digest, 16)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("source", SOURCE + b" "),
        ("options", ("-O3",)),
        ("options", ("--std=c++17", "-O3")),  # order matters: later options override earlier
        ("options", ("-O3", "--std=c++17", "-lineinfo")),
        ("target", "sm_90"),
        ("target", "host-x86_64"),
        ("compiler", "nvrtc 13.1"),
        ("compiler", "g++ 12.2.0"),
        ("aotc_version", "999.0.0"),
        ("key_schema", KEY_SCHEMA + 1),
    ],
)
def test_every_key_input_changes_the_digest(field: str, value: object) -> None:
    assert make_key(**{field: value}).digest != make_key().digest


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"options": ("ab", "c")}, {"options": ("a", "bc")}),
        ({"options": ("-O3 -g",)}, {"options": ("-O3", "-g")}),
        ({"options": ("",)}, {"options": ()}),
        ({"target": "ab", "compiler": "c"}, {"target": "a", "compiler": "bc"}),
        ({"compiler": "nvrtc 13.0", "aotc_version": "1"}, {"compiler": "nvrtc 13.", "aotc_version": "01"}),
    ],
)
def test_field_boundaries_are_unambiguous(one: dict[str, object], other: dict[str, object]) -> None:
    assert make_key(**one).digest != make_key(**other).digest


def test_key_keeps_a_hash_of_the_source_not_the_source() -> None:
    key = make_key()
    assert key.source_sha256 == hashlib.sha256(SOURCE).hexdigest()
    values = [getattr(key, f.name) for f in dataclasses.fields(key)]
    assert not any(isinstance(value, (bytes, bytearray)) for value in values)
    assert SOURCE.decode() not in repr(key)


def test_key_defaults_and_is_frozen() -> None:
    key = CacheKey.for_source(SOURCE, target="sm_87", compiler="nvrtc 13.0")
    assert key.aotc_version == __version__
    assert key.key_schema == KEY_SCHEMA
    assert key.options == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.target = "sm_90"  # type: ignore[misc]


@pytest.mark.parametrize(
    "changes",
    [{"source": "text, not bytes"}, {"options": "-O3"}, {"options": ("-O3", 3)}, {"key_schema": "1"}],
)
def test_key_rejects_wrong_types(changes: dict[str, object]) -> None:
    with pytest.raises(TypeError):
        make_key(**changes)


# -- entries -------------------------------------------------------------------


@pytest.mark.parametrize("payload", [b"", b"x", PAYLOAD, bytes(range(256)) * 4096])
def test_round_trip(cache: DiskCache, payload: bytes) -> None:
    key = make_key()
    assert cache.load(key) is None
    assert cache.save(key, payload) is True
    assert cache.load(key) == payload
    assert entry_path(cache, key).stat().st_size == HEADER_SIZE + len(payload)
    assert DiskCache(cache.directory).load(key) == payload


def test_keys_do_not_share_entries(cache: DiskCache) -> None:
    cache.save(make_key(), b"for sm_87")
    cache.save(make_key(target="sm_90"), b"for sm_90")
    assert cache.load(make_key()) == b"for sm_87"
    assert cache.load(make_key(target="sm_90")) == b"for sm_90"
    assert cache.load(make_key(target="sm_100")) is None


def _header(length: int, payload: bytes, magic: bytes = b"AOTCJIT\x00", schema: int = ENTRY_SCHEMA) -> bytes:
    """An entry header for ``make_key()``, as the format lays it out: the key's digest is in it."""
    digest = bytes.fromhex(make_key().digest)
    return struct.pack("<8sI32sQ32s", magic, schema, digest, length, hashlib.sha256(payload).digest())


CORRUPTIONS = {
    "empty file": lambda good: b"",
    "short header": lambda good: good[: HEADER_SIZE - 1],
    "short payload": lambda good: good[:-1],
    "header only": lambda good: good[:HEADER_SIZE],
    "wrong magic": lambda good: b"NOTAOTC\x00" + good[8:],
    "wrong schema": lambda good: _header(len(PAYLOAD), PAYLOAD, schema=ENTRY_SCHEMA + 1) + PAYLOAD,
    "bad checksum": lambda good: good[:-1] + bytes([good[-1] ^ 0xFF]),
    "trailing garbage": lambda good: good + b"\x00",
    "length too long": lambda good: _header(len(PAYLOAD) + 1, PAYLOAD) + PAYLOAD,
    "length too short": lambda good: _header(len(PAYLOAD) - 1, PAYLOAD[:-1]) + PAYLOAD,
    "not an entry at all": lambda good: b"\x7fELF" + os.urandom(100),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corrupt_entry_is_a_miss_and_is_rewritten(cache: DiskCache, kind: str) -> None:
    key = make_key()
    assert cache.save(key, PAYLOAD)
    path = entry_path(cache, key)
    path.write_bytes(CORRUPTIONS[kind](path.read_bytes()))

    assert cache.load(key) is None
    build = CountingBuild()
    assert cache.get_or_create(key, build) == PAYLOAD
    assert build.calls == 1
    assert cache.load(key) == PAYLOAD
    assert path.stat().st_size == HEADER_SIZE + len(PAYLOAD)


def test_corrupt_entry_is_removed_on_load(cache: DiskCache) -> None:
    key = make_key()
    assert cache.save(key, PAYLOAD)
    path = entry_path(cache, key)
    path.write_bytes(b"garbage")
    assert cache.load(key) is None
    assert not path.exists()


def test_directory_in_place_of_an_entry_is_a_miss(cache: DiskCache) -> None:
    key = make_key()
    entry_path(cache, key).parent.mkdir(mode=0o700)
    entry_path(cache, key).mkdir()
    assert cache.load(key) is None
    assert cache.get_or_create(key, CountingBuild()) == PAYLOAD


# -- atomic writes -----------------------------------------------------------


def test_save_leaves_no_temp_files(cache: DiskCache) -> None:
    key = make_key()
    cache.save(key, PAYLOAD)
    cache.save(key, PAYLOAD + b"!")  # overwrite too
    assert sorted(p.name for p in cache.directory.iterdir()) == [f"{key.digest}.entry"]
    cache.get_or_create(make_key(target="sm_90"), CountingBuild())
    assert not [p for p in cache.directory.iterdir() if p.name.endswith(".tmp")]


def test_entry_is_fsynced_before_it_appears(cache: DiskCache, monkeypatch: pytest.MonkeyPatch) -> None:
    key = make_key()
    path = entry_path(cache, key)
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            events.append(f"fsync (entry visible: {path.exists()})")
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append(f"replace {Path(src).parent == Path(dst).parent}")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    cache.save(key, PAYLOAD)
    assert events == ["fsync (entry visible: False)", "replace True"]


def test_crashed_writer_leaves_a_temp_file_that_breaks_nothing(cache: DiskCache) -> None:
    key = make_key()
    good = _header(len(PAYLOAD), PAYLOAD) + PAYLOAD
    private_dir(cache.directory)
    dead = cache.directory / f".{key.digest}.0123456789abcdef.tmp"
    dead.write_bytes(good[: len(good) // 2])  # killed half way through its write

    assert cache.load(key) is None
    assert cache.info().entries == 0
    assert cache.get_or_create(key, CountingBuild()) == PAYLOAD
    assert cache.load(key) == PAYLOAD

    fresh = cache.directory / f".{key.digest}.fedcba9876543210.tmp"
    fresh.write_bytes(b"a writer that may still be alive")
    old = time.time() - 2 * 3600
    os.utime(dead, (old, old))
    cache.prune()
    assert not dead.exists()
    assert fresh.exists()
    assert cache.load(key) == PAYLOAD


def test_failed_save_is_not_an_exception_and_leaves_nothing(
    cache: DiskCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    def replace(src: object, dst: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "replace", replace)
    key = make_key()
    build = CountingBuild()
    assert cache.get_or_create(key, build) == PAYLOAD
    assert cache.save(key, PAYLOAD) is False
    assert build.calls == 1
    assert cache.stats == CacheStats(hits=0, misses=1, builds=1, saves=0)
    assert not [p for p in cache.directory.iterdir() if p.name.endswith((".tmp", ".entry"))]


# -- location and permissions ----------------------------------------------


def test_directory_is_created_lazily_with_mode_0700(tmp_path: Path) -> None:
    directory = tmp_path / "deep" / "er" / "aotc"
    cache = DiskCache(directory)
    assert not directory.exists()
    old_umask = os.umask(0)  # a permissive umask must not widen the mode
    try:
        assert cache.info().state == "ok"
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o720, 0o702, 0o777])
def test_directory_writable_by_others_is_refused_with_one_warning(tmp_path: Path, mode: int) -> None:
    directory = private_dir(tmp_path / "cache")
    key = make_key()
    assert DiskCache(directory).save(key, PAYLOAD)  # a planted entry must not be trusted
    directory.chmod(mode)
    before = sorted(directory.iterdir())

    cache = DiskCache(directory)
    build = CountingBuild()
    with pytest.warns(CacheWarning, match="writable by group or others") as record:
        assert cache.get_or_create(key, build) == PAYLOAD
    assert len(record) == 1
    assert "\n" not in str(record[0].message)
    # warnings are errors here, so a second warning would fail these calls
    assert cache.get_or_create(key, build) == PAYLOAD
    assert cache.load(key) is None
    assert cache.save(key, PAYLOAD) is False
    assert build.calls == 2
    assert cache.info().state == "refused"
    assert sorted(directory.iterdir()) == before
    with pytest.raises(CacheError, match="writable by group or others"):
        cache.clear()


def test_directory_owned_by_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = private_dir(tmp_path / "cache")
    if os.geteuid() == 0:
        os.chown(directory, 65534, 65534)  # really hand it to nobody
    else:
        monkeypatch.setattr(os, "geteuid", lambda: directory.stat().st_uid + 1)
    cache = DiskCache(directory)
    with pytest.warns(CacheWarning, match="owned by uid"):
        assert cache.load(make_key()) is None
    assert cache.info().state == "refused"


def test_a_file_where_the_directory_should_be_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cache"
    path.write_bytes(b"not a directory")
    cache = DiskCache(path)
    with pytest.warns(CacheWarning, match="not a directory"):
        assert cache.get_or_create(make_key(), CountingBuild()) == PAYLOAD
    assert path.read_bytes() == b"not a directory"


def test_symlinked_entry_is_a_miss_and_is_never_written_through(tmp_path: Path) -> None:
    key = make_key()
    elsewhere = DiskCache(tmp_path / "elsewhere")
    assert elsewhere.save(key, b"planted")
    target = entry_path(elsewhere, key)
    planted = target.read_bytes()

    cache = DiskCache(private_dir(tmp_path / "cache"))
    link = entry_path(cache, key)
    link.symlink_to(target)
    assert cache.load(key) is None
    assert cache.get_or_create(key, CountingBuild()) == PAYLOAD
    assert not link.is_symlink()
    assert cache.load(key) == PAYLOAD
    assert target.read_bytes() == planted


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    cache = default_cache()
    assert cache.directory == tmp_path / "mine"
    assert cache.max_bytes == DEFAULT_MAX_BYTES
    assert default_cache() is cache


@pytest.mark.parametrize(
    ("platform", "env", "expected"),
    [
        ("linux", {"XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/xdg/aotc"),
        ("linux", {}, "{tmp}/home/.cache/aotc"),
        ("linux", {"XDG_CACHE_HOME": "relative/xdg"}, "{tmp}/home/.cache/aotc"),
        ("darwin", {"XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/home/Library/Caches/aotc"),
        ("win32", {"LOCALAPPDATA": "{tmp}/local"}, "{tmp}/local/aotc"),
    ],
)
def test_platform_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str, env: dict[str, str], expected: str
) -> None:
    monkeypatch.delenv("AOTC_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    monkeypatch.setattr(sys, "platform", platform)
    assert default_cache_dir() == Path(expected.format(tmp=tmp_path))


@pytest.mark.parametrize("raw", ["abc", "-1", "1.5", "2GiB", "0x10"])
def test_bad_max_bytes_is_a_one_line_cache_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, raw: str
) -> None:
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AOTC_CACHE_MAX_BYTES", raw)
    with pytest.raises(CacheError, match="AOTC_CACHE_MAX_BYTES") as excinfo:
        default_cache()
    assert "\n" not in str(excinfo.value)


def test_max_bytes_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AOTC_CACHE_MAX_BYTES", " 4096 ")
    assert default_cache().max_bytes == 4096
    monkeypatch.setenv("AOTC_CACHE_MAX_BYTES", "")
    assert default_cache().max_bytes == DEFAULT_MAX_BYTES


# -- limits --------------------------------------------------------------------


def test_lru_eviction_respects_the_cap_and_evicts_least_recently_used(tmp_path: Path) -> None:
    payload = b"p" * 1000
    size = HEADER_SIZE + len(payload)
    cache = DiskCache(tmp_path / "cache", max_bytes=3 * size)
    keys = [make_key(target=f"sm_{n}") for n in (75, 80, 86, 90)]
    past = time.time() - 1000
    for age, key in enumerate(keys[:3]):
        assert cache.save(key, payload)
        os.utime(entry_path(cache, key), (past + age, past + age))

    assert cache.load(keys[0]) == payload  # the oldest is now the most recently used
    assert cache.save(keys[3], payload)

    assert cache.load(keys[1]) is None
    assert [cache.load(key) for key in (keys[0], keys[2], keys[3])] == [payload] * 3
    info = cache.info()
    assert info.entries == 3
    assert info.total_bytes == 3 * size <= cache.max_bytes


def test_many_saves_never_exceed_the_cap(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache", max_bytes=10_000)
    for n in range(40):
        assert cache.save(make_key(target=f"sm_{n}"), os.urandom(300 + 37 * n))
        assert cache.info().total_bytes <= 10_000
    assert cache.load(make_key(target="sm_39")) is not None


def test_payload_larger_than_the_cap_is_not_saved_and_evicts_nothing(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache", max_bytes=2000)
    assert cache.save(make_key(), b"small")
    # Said once, in one line naming the sizes, the cache and the setting to raise (issue 35).
    with pytest.warns(CacheWarning) as caught:
        assert cache.get_or_create(make_key(target="sm_90"), CountingBuild(b"x" * 2000)) == b"x" * 2000
        assert not cache.save(make_key(target="sm_86"), b"y" * 3000)
    assert [str(w.message) for w in caught] == [
        f"aotc: not caching a {2000 + HEADER_SIZE}-byte entry: it alone is over the cap of 2000 bytes of the cache at "
        f"{tmp_path / 'cache'} (AOTC_CACHE_MAX_BYTES); raise the cap to keep it"
    ]
    assert cache.load(make_key()) == b"small"
    assert cache.info().entries == 1


def test_info_prune_and_clear(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    payloads = {make_key(target=f"sm_{n}"): bytes(n) for n in (75, 80, 86)}
    for key, payload in payloads.items():
        cache.get_or_create(key, lambda payload=payload: payload)
    info = cache.info()
    assert (info.directory, info.state, info.entries) == (tmp_path / "cache", "ok", 3)
    assert info.total_bytes == sum(HEADER_SIZE + len(p) for p in payloads.values())
    assert info.max_bytes == DEFAULT_MAX_BYTES
    assert info.reason == ""

    assert cache.prune() == 0
    assert cache.prune(max_bytes=HEADER_SIZE + 86) == 2
    assert cache.info().entries == 1

    unrelated = cache.directory / "notes.txt"
    unrelated.write_text("not ours")
    assert cache.clear() == 1
    assert sorted(cache.directory.iterdir()) == [unrelated]
    assert cache.info().entries == 0


# -- read-only directories -------------------------------------------------


def _seed_read_only(directory: Path) -> tuple[CacheKey, CacheKey]:
    hit, miss = make_key(), make_key(target="sm_90")
    assert DiskCache(directory).save(hit, PAYLOAD)
    return hit, miss


def _exercise_read_only(directory: Path, hit: CacheKey, miss: CacheKey) -> dict[str, object]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache = DiskCache(directory)
        build = CountingBuild(b"built in memory")
        result = {
            "state": cache.info().state,
            "hit": cache.get_or_create(hit, build).hex(),
            "miss": cache.get_or_create(miss, build).hex(),
            "miss again": cache.get_or_create(miss, build).hex(),
            "builds": build.calls,
            "saves": cache.stats.saves,
            "save": cache.save(miss, b"x"),
            "files": sorted(p.name for p in directory.iterdir()),
        }
    result["warnings"] = [str(w.message) for w in caught]
    return result


def _check_read_only(result: dict[str, object], hit: CacheKey) -> None:
    assert result == {
        "state": "read-only",
        "hit": PAYLOAD.hex(),
        "miss": b"built in memory".hex(),
        "miss again": b"built in memory".hex(),
        "builds": 2,
        "saves": 0,
        "save": False,
        "files": [f"{hit.digest}.entry"],
        "warnings": [],
    }


def test_a_directory_that_cannot_be_made_is_one_warning_and_runs_uncached(tmp_path: Path) -> None:
    """A cache folder under a file (a typo, or a HOME that is not writable, as in
    many containers) serves nothing: it warns once, where before every process
    compiled again without a word; a cache inside it adds no second warning.
    A read-only folder that exists stays quiet."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache = DiskCache(blocker / "cache")
        build = CountingBuild(b"built in memory")
        results = [cache.get_or_create(make_key(), build) for _ in range(2)]
        cache.save(make_key(target="sm_90"), b"x")
        inner = DiskCache(blocker / "cache" / "nvrtc-answers")  # a cache inside it: no second warning for one cause
        assert inner.load(make_key()) is None
    assert (cache.info().state, results, build.calls) == ("read-only", [b"built in memory"] * 2, 2)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"aotc: not caching: cannot create {blocker / 'cache'}: ")
    assert messages[0].endswith("nothing is kept between processes (set AOTC_CACHE_DIR to a writable directory)")


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="running as root: chmod 0o500 does not stop root from writing; "
    "test_read_only_directory_as_an_unprivileged_user covers read-only mode instead",
)
def test_read_only_directory_with_chmod(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    hit, miss = _seed_read_only(directory)
    directory.chmod(0o500)
    try:
        if os.access(directory, os.W_OK):
            pytest.skip("chmod 0o500 left the directory writable here (filesystem ignores modes)")
        _check_read_only(_exercise_read_only(directory, hit, miss), hit)
    finally:
        directory.chmod(0o700)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or not hasattr(os, "fork"),
    reason="needs root (to drop to uid nobody in a forked child) and os.fork; "
    "test_read_only_directory_with_chmod covers read-only mode for other users",
)
def test_read_only_directory_as_an_unprivileged_user() -> None:
    # Root ignores the mode bits, so a forked child drops to nobody and meets a
    # real 0500 directory that it owns, exactly as a user with a read-only cache would.
    nobody = 65534
    base = Path(tempfile.mkdtemp(prefix="aotc-read-only-"))
    try:
        base.chmod(0o755)  # nobody must be able to reach the cache inside
        directory = base / "cache"
        hit, miss = _seed_read_only(directory)
        for path in [directory, *directory.iterdir()]:
            os.chown(path, nobody, nobody)
        directory.chmod(0o500)

        reader, writer = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads, on 3.12+
            pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.close(reader)
                os.setgroups([])
                os.setgid(nobody)
                os.setuid(nobody)
                report = {"writable": os.access(directory, os.W_OK)}
                report.update(_exercise_read_only(directory, hit, miss))
                os.write(writer, json.dumps(report).encode())
                code = 0
            except BaseException as exc:  # noqa: BLE001 - the child reports any failure to the parent, then exits
                os.write(writer, json.dumps({"error": repr(exc)}).encode())
            finally:
                os._exit(code)
        os.close(writer)
        with os.fdopen(reader, "rb") as pipe:
            report = json.loads(pipe.read() or b"{}")
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, report
        assert report.pop("writable") is False
        _check_read_only(report, hit)
    finally:
        shutil.rmtree(base)


# -- compile counting and concurrency --------------------------------------


def test_compiled_once_then_a_hit(cache: DiskCache) -> None:
    key = make_key()
    build = CountingBuild()
    assert cache.get_or_create(key, build) == PAYLOAD
    assert cache.get_or_create(key, build) == PAYLOAD
    assert build.calls == 1
    assert cache.stats == CacheStats(hits=1, misses=1, builds=1, saves=1)


def test_build_must_return_bytes(cache: DiskCache) -> None:
    with pytest.raises(TypeError, match="build\\(\\) must return bytes"):
        cache.get_or_create(make_key(), lambda: "text")  # type: ignore[arg-type, return-value]
    assert cache.load(make_key()) is None


def test_a_failing_build_saves_nothing(cache: DiskCache) -> None:
    def build() -> bytes:
        raise RuntimeError("nvrtc failed")

    with pytest.raises(RuntimeError, match="nvrtc failed"):
        cache.get_or_create(make_key(), build)
    assert cache.get_or_create(make_key(), CountingBuild()) == PAYLOAD


def test_two_threads_racing_build_once(cache: DiskCache) -> None:
    key = make_key()
    build = CountingBuild(delay=0.3)
    start = threading.Barrier(2)
    results: list[bytes] = []

    def fill() -> None:
        start.wait()
        results.append(cache.get_or_create(key, build))

    threads = [threading.Thread(target=fill) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == [PAYLOAD, PAYLOAD]
    assert build.calls == 1
    assert cache.stats == CacheStats(hits=1, misses=1, builds=1, saves=1)


CHILD = """
import json, os, sys, time
from pathlib import Path
from aotc.runtime.cache import CacheKey, default_cache

key = CacheKey.for_source({source!r}, options={options!r}, target={target!r}, compiler={compiler!r})
go = Path(sys.argv[1]) if len(sys.argv) > 1 else None
while go is not None and not go.exists():
    time.sleep(0.01)

def build():
    mode = os.environ["BUILD"]
    if mode == "forbidden":
        raise SystemExit("build() called in a process that should have hit")
    if mode == "die":
        os._exit(9)  # killed while holding the fill lock
    with open(os.environ["BUILD_LOG"], "a") as log:
        log.write(f"{{os.getpid()}}\\n")
    time.sleep(0.5)
    return {payload!r}

cache = default_cache()
payload = cache.get_or_create(key, build)
stats = cache.stats
print(json.dumps({{"payload": payload.hex(), "hits": stats.hits, "builds": stats.builds}}))
""".format(payload=PAYLOAD, **{name: BASE[name] for name in ("source", "options", "target", "compiler")})


def _child(directory: Path, build: str, *args: str, log: Path | None = None) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "AOTC_CACHE_DIR": str(directory),
        "BUILD": build,
        "BUILD_LOG": str(log or directory.parent / "builds.log"),
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("AOTC_CACHE_MAX_BYTES", None)
    command = [sys.executable, "-W", "error", "-c", CHILD, *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(child: subprocess.Popen[str]) -> dict[str, object]:
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    return json.loads(out)


def test_a_second_process_hits(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    build = CountingBuild()
    assert DiskCache(directory).get_or_create(make_key(), build) == PAYLOAD
    assert build.calls == 1
    assert _result(_child(directory, "forbidden")) == {"payload": PAYLOAD.hex(), "hits": 1, "builds": 0}


def test_two_processes_racing_build_once(tmp_path: Path) -> None:
    directory, go, log = tmp_path / "cache", tmp_path / "go", tmp_path / "builds.log"
    children = [_child(directory, "log", str(go), log=log) for _ in range(2)]
    time.sleep(0.2)
    go.touch()
    results = sorted((_result(child) for child in children), key=str)
    assert results == [
        {"payload": PAYLOAD.hex(), "hits": 0, "builds": 1},
        {"payload": PAYLOAD.hex(), "hits": 1, "builds": 0},
    ]
    assert len(log.read_text().splitlines()) == 1


def test_lock_of_a_killed_filler_is_released(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    dead = _child(directory, "die")
    dead.communicate(timeout=60)
    assert dead.returncode == 9
    assert (directory / f"{make_key().digest}.lock").exists()  # it died holding the lock

    results: list[bytes] = []

    def fill() -> None:
        results.append(DiskCache(directory).get_or_create(make_key(), CountingBuild()))

    filler = threading.Thread(target=fill, daemon=True)  # a hang must not hang pytest
    filler.start()
    filler.join(timeout=30)
    assert results == [PAYLOAD]


def test_a_waiting_filler_rechecks_after_taking_the_lock(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl", reason="flock needs fcntl (POSIX)")
    cache = DiskCache(tmp_path / "cache")
    key = make_key()
    assert cache.info().state == "ok"
    fd = os.open(cache.directory / f"{key.digest}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # this test is the filler that got there first
    waiter = _child(cache.directory, "forbidden")
    try:
        time.sleep(0.5)
        assert waiter.poll() is None, "the second process did not wait for the lock"
        assert cache.save(key, PAYLOAD)
        os.close(fd)
        fd = -1
        assert _result(waiter) == {"payload": PAYLOAD.hex(), "hits": 1, "builds": 0}
    finally:
        if fd >= 0:
            os.close(fd)
        if waiter.poll() is None:
            waiter.kill()
        waiter.communicate()


def test_a_fill_lock_held_too_long_is_given_up_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Someone who can write the cache directory holds a key's lock and never lets go:
    # a filler waits LOCK_WAIT_SECONDS, then builds without it, and says so.
    fcntl = pytest.importorskip("fcntl", reason="flock needs fcntl (POSIX)")
    from aotc._cache import _store

    monkeypatch.setattr(_store, "LOCK_WAIT_SECONDS", 0.3)
    cache = DiskCache(tmp_path / "cache")
    key = make_key()
    assert cache.info().state == "ok"
    fd = os.open(cache.directory / f"{key.digest}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        build = CountingBuild()
        start = time.monotonic()
        with pytest.warns(CacheWarning, match=r"fill lock .*\.lock was held for 0\.3 s; building this entry without it$"):
            assert cache.get_or_create(key, build) == PAYLOAD
        assert 0.3 <= time.monotonic() - start < 10
        assert build.calls == 1
        assert cache.load(key) == PAYLOAD  # written all the same (temp file and rename)
    finally:
        os.close(fd)


def test_module_declares_its_surface() -> None:
    assert set(cache_module.__all__) >= {"CacheKey", "DiskCache", "default_cache"}
    assert issubclass(CacheWarning, UserWarning)
