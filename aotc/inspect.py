"""Check an installed or packaged kernel library against its index.

Works on a wheel (zip), a library folder, an ``index.json`` path, or the name
of a library installed with aotc. Every fatbin and source is re-hashed, so a
flipped byte or a missing file is reported by name.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from aotc._locations import library_dir
from aotc.archs import arch_sort_key
from aotc.errors import IndexFormatError, LibraryNotFoundError
from aotc.index import INDEX_NAME, read_index, sha256_bytes

__all__ = ["KernelReport", "LibraryReport", "inspect_target"]


@dataclass(frozen=True)
class KernelReport:
    name: str
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    size: int
    problems: tuple[str, ...]
    max_registers: int | None = None
    spill_stores: int | None = None


@dataclass(frozen=True)
class LibraryReport:
    where: str
    index: dict[str, Any]
    kernels: tuple[KernelReport, ...]

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(p for k in self.kernels for p in k.problems)

    def archs(self) -> list[str]:
        found = {a for k in self.kernels for a in (*k.sass, *k.ptx)}
        return sorted(found, key=arch_sort_key)


def _check_file(read: Callable[[str], bytes | None], where: str, entry: dict[str, Any]) -> tuple[int, list[str]]:
    name = entry["file"]
    data = read(name)
    if data is None:
        return 0, [f"{where}/{name}: missing"]
    problems = []
    if len(data) != entry["size"]:
        problems.append(f"{where}/{name}: size {len(data)} bytes, index says {entry['size']}")
    digest = sha256_bytes(data)
    if digest != entry["sha256"]:
        problems.append(f"{where}/{name}: sha256 {digest[:12]}..., index says {entry['sha256'][:12]}...")
    return len(data), problems


def _report(where: str, index_bytes: bytes, read: Callable[[str], bytes | None]) -> LibraryReport:
    index = read_index(index_bytes, f"{where}/{INDEX_NAME}")
    kernels = []
    for name, entry in index["kernels"].items():
        try:
            size, problems = _check_file(read, where, entry["fatbin"])
            _, source_problems = _check_file(read, where, entry["source"])
            sass, ptx = tuple(entry["sass"]), tuple(entry["ptx"])
            usage = list(entry.get("resources", {}).values())
            registers = max((u["registers"] for u in usage), default=None)
            spills = max((u["spill_stores"] for u in usage), default=None)
        except (KeyError, TypeError) as exc:
            msg = f"{where}/{INDEX_NAME}: kernel {name}: malformed entry ({exc})"
            raise IndexFormatError(msg) from None
        kernels.append(KernelReport(name, sass, ptx, size, (*problems, *source_problems), registers, spills))
    return LibraryReport(where, index, tuple(kernels))


def _folder_reports(folder: Path) -> Iterator[LibraryReport]:
    def read(name: str) -> bytes | None:
        path = folder / name
        return path.read_bytes() if path.is_file() else None

    index_path = folder / INDEX_NAME
    if not index_path.is_file():
        msg = f"{folder}: no {INDEX_NAME} here"
        raise LibraryNotFoundError(msg)
    yield _report(str(folder), index_path.read_bytes(), read)


def _wheel_reports(wheel: Path) -> Iterator[LibraryReport]:
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        msg = f"{wheel}: not a readable wheel ({exc})"
        raise LibraryNotFoundError(msg) from None
    with archive:
        members = set(archive.namelist())
        indexes = sorted(m for m in members if PurePosixPath(m).name == INDEX_NAME and "/_lib/" in f"/{m}")
        if not indexes:
            msg = f"{wheel}: holds no aotc kernel library (no */_lib/*/{INDEX_NAME})"
            raise LibraryNotFoundError(msg)
        for member in indexes:
            prefix = str(PurePosixPath(member).parent)

            def read(name: str, prefix: str = prefix) -> bytes | None:
                full = f"{prefix}/{name}"
                return archive.read(full) if full in members else None

            yield _report(f"{wheel}!{prefix}", archive.read(member), read)


def inspect_target(target: str) -> list[LibraryReport]:
    """Reports for every library found at ``target``."""
    path = Path(target)
    if path.is_file() and path.suffix == ".whl":
        return list(_wheel_reports(path))
    if path.is_file() and path.name == INDEX_NAME:
        return list(_folder_reports(path.parent))
    if path.is_dir():
        return list(_folder_reports(path))
    if "/" not in target and library_dir(target).is_dir():
        return list(_folder_reports(library_dir(target)))
    msg = f"{target}: not a wheel, a library folder, an {INDEX_NAME} or an installed library name"
    raise LibraryNotFoundError(msg)
