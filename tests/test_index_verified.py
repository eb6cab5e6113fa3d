"""The record of kernel files already verified (aotc.index._verified): a file is
hashed again whenever it may have changed, and a changed fatbin is refused."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from runtime.runtime_support import make_library

from aotc.errors import DamagedLibraryError
from aotc.index import _verified, files
from aotc.index.library_index import LibraryIndex
from aotc.runtime.library import Library


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A library of stand-in fatbins, a cache folder of this test's own, and no
    wait for a file to settle (its files were written a moment ago)."""
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_verified, "SETTLED_NS", 0)
    return make_library(tmp_path)


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the kernel files hashed, one per hash."""
    sizes: list[int] = []
    real = files.sha256_bytes

    def counted(data: bytes) -> str:
        sizes.append(len(data))
        return real(data)

    monkeypatch.setattr(files, "sha256_bytes", counted)
    return sizes


def _first_kernel(library: Path) -> tuple[str, Path]:
    index = LibraryIndex.open(library)
    name = next(iter(index.kernels))
    return name, library / index.kernels[name].fatbin.file


def _use(library: Path, name: str) -> None:
    Library(library, backend="noop").kernel(name)


def _record(tmp_path: Path) -> list[str]:
    folder = tmp_path / "cache" / _verified.RECORD_FOLDER
    return [line for path in folder.iterdir() for line in path.read_text().splitlines()[1:]] if folder.is_dir() else []


def test_a_file_hashed_once_is_read_without_a_hash_while_it_is_unchanged(library: Path, tmp_path: Path, hashed: list[int]) -> None:
    name, fatbin = _first_kernel(library)
    _use(library, name)
    assert hashed == [fatbin.stat().st_size]
    assert len(_record(tmp_path)) == 1
    _use(library, name)  # a new Library: a later process, as far as the record goes
    assert hashed == [fatbin.stat().st_size]


def test_a_fatbin_changed_in_place_is_refused_though_its_size_and_mtime_were_kept(library: Path, hashed: list[int]) -> None:
    name, fatbin = _first_kernel(library)
    _use(library, name)
    before = fatbin.stat()
    data = bytearray(fatbin.read_bytes())
    data[0] ^= 1
    fatbin.write_bytes(bytes(data))
    os.utime(fatbin, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime set back; ctime cannot be
    assert fatbin.stat().st_mtime_ns == before.st_mtime_ns and fatbin.stat().st_size == before.st_size
    with pytest.raises(DamagedLibraryError, match=r"sha256 .* does not match"):
        _use(library, name)


def test_a_fatbin_replaced_by_a_copy_of_itself_is_hashed_again(library: Path, tmp_path: Path, hashed: list[int]) -> None:
    name, fatbin = _first_kernel(library)
    _use(library, name)
    copy = fatbin.with_suffix(".copy")
    shutil.copy2(fatbin, copy)  # the same bytes and mtime, another inode
    copy.replace(fatbin)
    _use(library, name)
    assert len(hashed) == 2
    assert len(_record(tmp_path)) == 2


def test_a_file_changed_within_the_settling_time_is_not_kept(library: Path, tmp_path: Path, hashed: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_verified, "SETTLED_NS", 3_600 * 10**9)  # "an hour": the file, written just now, is too young
    name, _ = _first_kernel(library)
    _use(library, name)
    _use(library, name)
    assert len(hashed) == 2
    assert _record(tmp_path) == []


def test_a_record_another_user_could_write_is_not_trusted(library: Path, tmp_path: Path, hashed: list[int]) -> None:
    name, _ = _first_kernel(library)
    _use(library, name)
    (tmp_path / "cache" / _verified.RECORD_FOLDER).chmod(0o777)
    _use(library, name)
    assert len(hashed) == 2


def test_a_record_line_vouches_only_for_its_sha256(library: Path, tmp_path: Path, hashed: list[int]) -> None:
    name, _ = _first_kernel(library)
    _use(library, name)
    (kept,) = (tmp_path / "cache" / _verified.RECORD_FOLDER).iterdir()
    text = kept.read_text()
    digest = text.splitlines()[1].split()[0]
    kept.write_text(text.replace(digest, "0" * 64))  # this identity, said to hold other bytes
    _use(library, name)
    assert len(hashed) == 2


@pytest.mark.parametrize("content", [b"", b"not a record\n", b"aotc verified files 1\nshort line", b"\xff" * 64])
def test_a_damaged_record_is_no_record_and_is_written_anew(library: Path, tmp_path: Path, hashed: list[int], content: bytes) -> None:
    name, _ = _first_kernel(library)
    _use(library, name)
    (kept,) = (tmp_path / "cache" / _verified.RECORD_FOLDER).iterdir()
    kept.write_bytes(content)
    _use(library, name)  # hashed again, and the record written anew
    _use(library, name)  # which is trusted
    assert len(hashed) == 2
    assert len(_record(tmp_path)) == 1


def test_a_fifo_in_the_records_place_is_never_opened_to_block_and_is_replaced(library: Path, tmp_path: Path, hashed: list[int]) -> None:
    name, _ = _first_kernel(library)
    _use(library, name)
    (kept,) = (tmp_path / "cache" / _verified.RECORD_FOLDER).iterdir()
    kept.unlink()
    os.mkfifo(kept)
    _use(library, name)
    _use(library, name)
    assert len(hashed) == 2
    assert kept.is_file()


def test_a_whole_check_hashes_every_file_it_reads(library: Path, hashed: list[int]) -> None:
    name, _ = _first_kernel(library)
    _use(library, name)
    index = LibraryIndex.open(library)  # aotc inspect's and doctor's: no record read
    index.read_verified(name, "fatbin")
    assert len(hashed) == 2


def test_no_cache_folder_hashes_every_time(library: Path, hashed: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AOTC_CACHE_DIR")
    monkeypatch.setenv("HOME", "relative")  # no absolute home: no user cache folder
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    name, _ = _first_kernel(library)
    _use(library, name)
    _use(library, name)
    assert len(hashed) == 2


def test_forget_removes_the_records(library: Path, tmp_path: Path) -> None:
    name, _ = _first_kernel(library)
    _use(library, name)
    assert _verified.forget() == 1
    assert _record(tmp_path) == []
