"""Hostile and broken inputs to the disk cache and to kernel-file reads.

Each case is one input and the one result it must give: a miss, a rebuilt
entry, or a one-line error naming the file or argument. Cases that a
regression would turn into a hang (a FIFO opened without O_NONBLOCK blocks
until a writer appears) run in a child process under a timeout, so such a
regression fails the test instead of stalling the run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aotc.errors import ArgumentError, ArgumentTypeError, UnreadableFileError
from aotc.runtime.cache import ENTRY_SCHEMA, CacheKey, DiskCache
from aotc._untrusted_files import read_regular

__all__: list[str] = []

REPO_ROOT = Path(__file__).resolve().parents[2]
PAYLOAD = b"\x7fELF cubin for sm_80"
LAYOUT = "<8sI32sQ32s"  # magic, schema, key digest, payload length, payload sha256
HEADER_SIZE = struct.calcsize(LAYOUT)
HANG_TIMEOUT_S = 60

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="this platform has no FIFOs")


def make_key(target: str = "sm_80") -> CacheKey:
    return CacheKey.for_source(b"__global__ void k() {}", options=("-O3",), target=target, compiler="nvrtc 13.0")


# make_key() in a child process
CHILD_KEY = (
    "from aotc.runtime.cache import DiskCache, CacheKey; "
    'key = CacheKey.for_source(b"__global__ void k() {}", options=("-O3",), target="sm_80", compiler="nvrtc 13.0")'
)


@pytest.fixture
def cache(tmp_path: Path) -> DiskCache:
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    return DiskCache(directory)


def entry(cache: DiskCache, key: CacheKey) -> Path:
    return cache.directory / f"{key.digest}.entry"


def entry_bytes(key: CacheKey, payload: bytes, schema: int = ENTRY_SCHEMA) -> bytes:
    digest = bytes.fromhex(key.digest)
    return struct.pack(LAYOUT, b"AOTCJIT\x00", schema, digest, len(payload), hashlib.sha256(payload).digest()) + payload


def run_isolated(code: str, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in a fresh interpreter; its stdout, or a failure if it hangs or fails."""
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True, text=True, timeout=HANG_TIMEOUT_S, env=env, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {HANG_TIMEOUT_S} s (a FIFO opened without O_NONBLOCK blocks forever)")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


class Build:
    """A build() that counts its calls."""

    def __init__(self, payload: bytes = PAYLOAD) -> None:
        self.payload = payload
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return self.payload


# -- FIFOs: must never block ----------------------------------------------------


@needs_fifo
def test_fifo_entry_is_a_miss(cache: DiskCache) -> None:
    os.mkfifo(entry(cache, make_key()))
    out = run_isolated(f"""
        {CHILD_KEY}
        print(DiskCache({str(cache.directory)!r}).load(key))
    """)
    assert out == "None"


@needs_fifo
def test_fifo_entry_is_replaced_by_the_rebuilt_entry(cache: DiskCache) -> None:
    path = entry(cache, make_key())
    os.mkfifo(path)
    out = run_isolated(f"""
        {CHILD_KEY}
        cache = DiskCache({str(cache.directory)!r})
        print(cache.get_or_create(key, lambda: b"rebuilt"), cache.load(key))
    """)
    assert out == "b'rebuilt' b'rebuilt'"
    assert path.is_file()  # the rename replaced the FIFO's name; nothing was written into the FIFO


@needs_fifo
def test_fifo_lock_file_does_not_block_a_fill(cache: DiskCache) -> None:
    os.mkfifo(cache.directory / f"{make_key().digest}.lock")
    out = run_isolated(f"""
        {CHILD_KEY}
        cache = DiskCache({str(cache.directory)!r})
        print(cache.get_or_create(key, lambda: b"filled"), cache.load(key))
    """)
    assert out == "b'filled' b'filled'"


def error_of(call: str, *setup: str) -> str:
    """Child-process code: the ``setup`` lines, then ``call``, printing the one-line error it raises."""
    lines = ["from aotc.errors import AotcError", *setup, "try:", f"    {call}", "except AotcError as exc:"]
    return "\n".join([*lines, "    print(type(exc).__name__, exc)"])


def library_with_fifo_source(tmp_path: Path) -> tuple[Path, str, Path]:
    """A copy of the test library whose first kernel's source is a FIFO: (folder, kernel, source)."""
    from conftest import installed_library

    library = tmp_path / "lib"
    shutil.copytree(installed_library(), library)
    name = "gemm_maxplus_f32_forward"
    source = library / "src" / f"{name}.cu"
    source.unlink()
    os.mkfifo(source)
    return library, name, source


@needs_fifo
def test_fifo_source_is_a_one_line_error(tmp_path: Path) -> None:
    fifo = tmp_path / "kernel.cu"
    os.mkfifo(fifo)
    out = run_isolated(error_of(f"read_regular({str(fifo)!r}, 1 << 20)", "from aotc._untrusted_files import read_regular"))
    assert out == f"UnreadableFileError {fifo}: is a FIFO, not a regular file"


@needs_fifo
def test_fifo_source_given_to_the_emulator_is_a_build_error(tmp_path: Path) -> None:
    fifo = tmp_path / "kernel.cu"
    os.mkfifo(fifo)
    setup = "from aotc.runtime.emulator.compile import translation_unit"
    code = error_of(f"translation_unit({str(fifo)!r}, ['k'])", setup)
    assert run_isolated(code) == f"BuildError cannot read kernel source {fifo}: is a FIFO, not a regular file"


@needs_fifo
def test_fifo_source_in_a_library_is_a_damaged_library(tmp_path: Path) -> None:
    library, name, source = library_with_fifo_source(tmp_path)
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    out = run_isolated(error_of(
        f"lib.kernel({name!r})",
        "import aotc",
        "from aotc.runtime.cache import DiskCache",
        f"lib = aotc.load({str(library)!r}, backend='emulator', cache=DiskCache({str(cache_dir)!r}))",
    ))
    assert out == f"DamagedLibraryError {source}: is a FIFO, not a regular file; the library is damaged (reinstall it)"


@needs_fifo
def test_fifo_source_fails_that_kernel_in_aotc_warm(tmp_path: Path) -> None:
    from aotc.runtime.jit import nvrtc_info, nvrtc_problem

    if nvrtc_info() is None:
        pytest.skip(f"aotc warm needs NVRTC: {nvrtc_problem()}")
    library, name, source = library_with_fifo_source(tmp_path)
    # 8.7 (Orin) runs only SASS built for exactly 8.7, which no build here has
    # (the sm_80 test library, or the full matrix): warm must compile the source.
    out = run_isolated(f"""
        import sys
        from aotc.cli import main
        sys.stderr = sys.stdout  # one stream, in order
        code = main(["warm", "--arch", "8.7", "--library", {str(library)!r}, "--kernel", {name!r}])
        print("exit", code)
    """, env={"AOTC_CACHE_DIR": str(tmp_path / "cache")})
    assert f"failed      {name}  {source}: is a FIFO, not a regular file" in out
    assert "1 kernel: 0 compiled, 0 hits, 0 not needed, 1 failed" in out
    assert out.endswith("exit 1")


def test_a_cap_smaller_than_the_entry_just_compiled_says_so(tmp_path: Path) -> None:
    """Issue 35: a size cap that would evict the entry just written said so
    unclearly (warm reported "compiled", and the next run compiled it again)."""
    from aotc.runtime.jit import nvrtc_info, nvrtc_problem
    from runtime.runtime_support import make_library

    if nvrtc_info() is None:
        pytest.skip(f"aotc warm needs NVRTC: {nvrtc_problem()}")
    library = make_library(tmp_path / "rt")
    cache = tmp_path / "cache"
    out = run_isolated(f"""
        import sys
        from aotc.cli import main
        sys.stderr = sys.stdout
        code = main(["warm", "--arch", "9.0", "--library", {str(library)!r}, "--kernel", "gemm_maxplus_f32_forward", "-j", "1"])
        print("exit", code)
    """, env={"AOTC_CACHE_DIR": str(cache), "AOTC_CACHE_MAX_BYTES": "1000"})
    assert "failed      gemm_maxplus_f32_forward  not caching a " in out
    assert f"-byte entry: it alone is over the cap of 1000 bytes of the cache at {cache} (AOTC_CACHE_MAX_BYTES); raise the cap to keep it" in out
    assert out.endswith("exit 1")
    assert DiskCache(cache).info().entries == 0


# -- links, directories and other kinds of file ------------------------------------


def test_symlink_entry_to_a_valid_entry_is_a_miss(cache: DiskCache, tmp_path: Path) -> None:
    key = make_key()
    elsewhere = tmp_path / "planted.entry"
    elsewhere.write_bytes(entry_bytes(key, b"planted"))
    entry(cache, key).symlink_to(elsewhere)
    assert cache.load(key) is None


def test_symlink_entry_is_replaced_and_its_target_left_alone(cache: DiskCache, tmp_path: Path) -> None:
    key = make_key()
    target = tmp_path / "victim"
    target.write_bytes(b"not the cache's")
    entry(cache, key).symlink_to(target)
    assert cache.get_or_create(key, Build()) == PAYLOAD
    assert not entry(cache, key).is_symlink()
    assert target.read_bytes() == b"not the cache's"
    assert cache.load(key) == PAYLOAD


def test_dangling_symlink_entry_is_a_miss(cache: DiskCache, tmp_path: Path) -> None:
    key = make_key()
    entry(cache, key).symlink_to(tmp_path / "nowhere")
    assert cache.load(key) is None


def test_directory_in_place_of_an_entry_is_a_miss_and_stays(cache: DiskCache) -> None:
    key = make_key()
    entry(cache, key).mkdir()
    build = Build()
    assert cache.load(key) is None
    assert cache.get_or_create(key, build) == PAYLOAD  # served from memory: the rename cannot replace a directory
    assert build.calls == 1
    assert entry(cache, key).is_dir()


def test_save_over_a_directory_entry_reports_false(cache: DiskCache) -> None:
    key = make_key()
    entry(cache, key).mkdir()
    assert cache.save(key, PAYLOAD) is False


def test_socket_entry_is_a_miss(tmp_path: Path) -> None:
    # A short directory name: a socket path is limited to about 100 bytes.
    directory = Path(os.environ.get("TMPDIR", "/tmp")) / f"aotc-sock-{os.getpid()}"
    directory.mkdir(mode=0o700)
    try:
        cache, key = DiskCache(directory), make_key()
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(entry(cache, key)))
            assert cache.load(key) is None
    finally:
        shutil.rmtree(directory)


# -- an entry that is not this key's, or not whole -----------------------------------


def test_entry_copied_from_another_key_is_a_miss(cache: DiskCache) -> None:
    ours, theirs = make_key("sm_80"), make_key("sm_90")
    assert cache.save(theirs, b"sm_90 cubin")
    shutil.copyfile(entry(cache, theirs), entry(cache, ours))
    assert cache.load(ours) is None
    assert cache.load(theirs) == b"sm_90 cubin"


def test_entry_copied_from_another_key_is_rewritten_not_loaded(cache: DiskCache) -> None:
    ours, theirs = make_key("sm_80"), make_key("sm_90")
    assert cache.save(theirs, b"sm_90 cubin")
    shutil.copyfile(entry(cache, theirs), entry(cache, ours))
    build = Build(b"sm_80 cubin")
    assert cache.get_or_create(ours, build) == b"sm_80 cubin"
    assert build.calls == 1
    assert cache.load(ours) == b"sm_80 cubin"


def test_entry_of_the_previous_schema_is_a_miss(cache: DiskCache) -> None:
    key = make_key()
    old = struct.pack("<8sIQ32s", b"AOTCJIT\x00", 1, len(PAYLOAD), hashlib.sha256(PAYLOAD).digest()) + PAYLOAD
    entry(cache, key).write_bytes(old)
    assert cache.load(key) is None
    assert not entry(cache, key).exists()  # removed, so the next fill writes the new layout


def test_entry_with_this_key_and_format_is_a_hit(cache: DiskCache) -> None:
    key = make_key()
    entry(cache, key).write_bytes(entry_bytes(key, b"hand-made"))
    assert cache.load(key) == b"hand-made"


@pytest.mark.parametrize("keep", [0, 7, HEADER_SIZE - 1, HEADER_SIZE, HEADER_SIZE + len(PAYLOAD) // 2])
def test_truncated_entry_is_a_miss(cache: DiskCache, keep: int) -> None:
    key = make_key()
    assert cache.save(key, PAYLOAD)
    os.truncate(entry(cache, key), keep)
    assert cache.load(key) is None


def test_flipped_payload_byte_is_a_miss_and_is_removed(cache: DiskCache) -> None:
    key = make_key()
    data = bytearray(entry_bytes(key, PAYLOAD))
    data[-1] ^= 0xFF
    entry(cache, key).write_bytes(bytes(data))
    assert cache.load(key) is None
    assert not entry(cache, key).exists()


# -- size caps -------------------------------------------------------------------------


def test_entry_over_the_cap_is_a_miss(tmp_path: Path) -> None:
    directory = tmp_path / "small"
    directory.mkdir(mode=0o700)
    key = make_key()
    (directory / f"{key.digest}.entry").write_bytes(entry_bytes(key, b"x" * 2000))
    assert DiskCache(directory, max_bytes=1000).load(key) is None
    assert DiskCache(directory).load(key) == b"x" * 2000  # the same file under a larger cap


def test_giant_sparse_entry_is_a_miss_not_a_memory_error(cache: DiskCache) -> None:
    key = make_key()
    with open(entry(cache, key), "wb") as file:
        file.truncate(64 * 1024**3)  # 64 GiB, sparse: nothing is written
    assert cache.load(key) is None


def test_oversized_source_is_refused_before_reading(tmp_path: Path) -> None:
    source = tmp_path / "big.cu"
    source.write_bytes(b"x" * 101)
    with pytest.raises(UnreadableFileError) as info:
        read_regular(source, 100)
    assert str(info.value) == f"{source}: 101 bytes, over the limit of 100"


# -- read_regular: what each kind of path gives -----------------------------------------


def test_read_regular_reads_a_regular_file(tmp_path: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_bytes(b"__global__ void k() {}")
    assert read_regular(source, 1024) == b"__global__ void k() {}"


def test_read_regular_of_a_directory(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError) as info:
        read_regular(tmp_path, 1024)
    assert str(info.value) == f"{tmp_path}: is a directory, not a regular file"


def test_read_regular_of_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real.cu").write_bytes(b"x")
    (tmp_path / "link.cu").symlink_to(tmp_path / "real.cu")
    with pytest.raises(UnreadableFileError) as info:
        read_regular(tmp_path / "link.cu", 1024)
    assert str(info.value) == f"{tmp_path / 'link.cu'}: is a symbolic link, not a regular file"


def test_read_regular_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError) as info:
        read_regular(tmp_path / "gone.cu", 1024)
    assert str(info.value) == f"{tmp_path / 'gone.cu'}: No such file or directory"


def test_read_regular_of_a_character_device() -> None:
    with pytest.raises(UnreadableFileError) as info:
        read_regular("/dev/null", 1024)
    assert str(info.value) == "/dev/null: is a character device, not a regular file"


def test_a_control_character_in_a_path_cannot_forge_a_line(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError) as info:
        read_regular(tmp_path / "a\nb.cu", 1024)
    assert "\n" not in str(info.value)
    assert str(info.value).endswith("a\\nb.cu: No such file or directory")


# -- wrong arguments: one line naming the argument ---------------------------------------


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ((123,), ArgumentTypeError, "DiskCache directory must be a str or path, not int (123)"),
        ((None,), ArgumentTypeError, "DiskCache directory must be a str or path, not NoneType (None)"),
        ((b"/tmp/x",), ArgumentTypeError, "DiskCache directory must be a str or path, not bytes (b'/tmp/x')"),
        (("",), ArgumentError, "DiskCache directory must be a non-empty str path, not ''"),
        (("/tmp/a\0b",), ArgumentError, "DiskCache directory must be a non-empty str path, not '/tmp/a\\x00b'"),
    ],
)
def test_disk_cache_directory_of_a_wrong_kind(arguments: tuple[object], error: type, message: str) -> None:
    with pytest.raises(error) as info:
        DiskCache(*arguments)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("max_bytes", "error", "message"),
    [
        ("4096", ArgumentTypeError, "DiskCache max_bytes must be an int, not str ('4096')"),
        (True, ArgumentTypeError, "DiskCache max_bytes must be an int, not bool (True)"),
        (1.5, ArgumentTypeError, "DiskCache max_bytes must be an int, not float (1.5)"),
        (-1, ArgumentError, "DiskCache max_bytes must be a non-negative int, not -1"),
    ],
)
def test_disk_cache_max_bytes_of_a_wrong_kind(tmp_path: Path, max_bytes: object, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        DiskCache(tmp_path, max_bytes=max_bytes)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"options": "-O3"}, "options must be a sequence of str, not one str"),
        ({"options": 3}, "options must be a sequence of str, not int"),
        ({"options": ("-O3", 3)}, "CacheKey options[1] must be str, not int (3)"),
        ({"target": None}, "CacheKey target must be str, not NoneType (None)"),
        ({"compiler": b"nvrtc"}, "CacheKey compiler must be str, not bytes (b'nvrtc')"),
        ({"key_schema": "1"}, "key_schema must be int, not str"),
    ],
)
def test_cache_key_field_of_a_wrong_type(fields: dict[str, object], message: str) -> None:
    values = {"source_sha256": "0" * 64, "options": (), "target": "sm_80", "compiler": "nvrtc 13.0", **fields}
    with pytest.raises(ArgumentTypeError) as info:
        CacheKey(**values)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_cache_key_for_a_str_source() -> None:
    with pytest.raises(ArgumentTypeError) as info:
        CacheKey.for_source("__global__ void k() {}", target="sm_80", compiler="nvrtc 13.0")  # type: ignore[arg-type]
    assert str(info.value) == "source must be bytes, not str"


@pytest.mark.parametrize("method", ["load", "save", "get_or_create"])
def test_a_digest_string_is_not_a_key(cache: DiskCache, method: str) -> None:
    arguments = {"load": (), "save": (PAYLOAD,), "get_or_create": (Build(),)}[method]
    with pytest.raises(ArgumentTypeError) as info:
        getattr(cache, method)(make_key().digest, *arguments)
    assert str(info.value) == "a cache key must be a CacheKey, not str"


def test_save_of_a_str_payload(cache: DiskCache) -> None:
    with pytest.raises(ArgumentTypeError) as info:
        cache.save(make_key(), "cubin")  # type: ignore[arg-type]
    assert str(info.value) == "DiskCache.save: payload must be bytes, not str"


def test_get_or_create_with_bytes_instead_of_a_build(cache: DiskCache) -> None:
    with pytest.raises(ArgumentTypeError) as info:
        cache.get_or_create(make_key(), PAYLOAD)  # type: ignore[arg-type]
    assert str(info.value) == "DiskCache.get_or_create: build must be callable, not bytes"


def test_build_returning_str_is_refused_and_nothing_is_stored(cache: DiskCache) -> None:
    with pytest.raises(ArgumentTypeError) as info:
        cache.get_or_create(make_key(), lambda: "cubin")  # type: ignore[arg-type, return-value]
    assert str(info.value) == "build() must return bytes, not str"
    assert cache.load(make_key()) is None
