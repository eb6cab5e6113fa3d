"""Check an installed or packaged kernel library against its index.

Works on a wheel (zip), a library folder, an ``index.json`` path, or the name
of a library installed with aotc. Loading the index checks its own checksums
(an edited launch geometry or parameter kind is refused in one line); then
every fatbin and source is re-hashed, so a flipped byte or a missing file is
reported by name.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from aotc._locations import ENTRY_POINT_GROUP, find_library, module_path
from aotc.archs import arch_sort_key
from aotc.errors import DamagedLibraryError, LibraryNotFoundError, echo
from aotc.index import INDEX_NAME, MAX_INDEX_BYTES, LibraryIndex
from aotc.index.schema import MAX_LAID_OUT_BYTES
from aotc.index.files import MemberFiles

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
    index: LibraryIndex  # validated on load: its checksums matched, or there is no report
    kernels: tuple[KernelReport, ...]

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(p for k in self.kernels for p in k.problems)

    def archs(self) -> list[str]:
        found = {a for k in self.kernels for a in (*k.sass, *k.ptx)}
        return sorted(found, key=arch_sort_key)


def _report(where: str, index: LibraryIndex) -> LibraryReport:
    """Every kernel's fatbin and source re-read and checked against the index."""
    kernels = []
    for name, kernel in index.kernels.items():
        problems, size = [], 0
        for part in ("fatbin", "source"):
            try:
                data = index.read_verified(kernel, part)
            except DamagedLibraryError as exc:
                problems.append(str(exc))
                continue
            size = len(data) if part == "fatbin" else size
        usage = list(kernel.resources.values())
        registers = max((u["registers"] for u in usage if "registers" in u), default=None)
        spills = max((u["spill_stores"] for u in usage if "spill_stores" in u), default=None)
        kernels.append(KernelReport(name, kernel.sass, kernel.ptx, size, tuple(problems), registers, spills))
    return LibraryReport(where, index, tuple(kernels))


def _folder_reports(folder: Path) -> Iterator[LibraryReport]:
    if not (folder / INDEX_NAME).is_file():
        msg = f"{folder}: no {INDEX_NAME} here"
        raise LibraryNotFoundError(msg)
    yield _report(str(folder), LibraryIndex.open(folder))


def _capped(archive: zipfile.ZipFile, member: str, limit: int) -> bytes:
    # One byte past the limit is enough for the size check to refuse it.
    with archive.open(member) as stream:
        return stream.read(limit + 1)


def _wheel_reports(wheel: Path) -> Iterator[LibraryReport]:
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        msg = f"{wheel}: not a readable wheel ({exc})"
        raise LibraryNotFoundError(msg) from None
    with archive:
        members = set(archive.namelist())
        indexes = sorted(
            {m for m in members if PurePosixPath(m).name == INDEX_NAME and "/_lib/" in f"/{m}"} | _declared_indexes(wheel, archive, members)
        )
        if not indexes:
            msg = f"{wheel}: holds no aotc kernel library (no */_lib/*/{INDEX_NAME}, and no {ENTRY_POINT_GROUP} entry point names one)"
            raise LibraryNotFoundError(msg)
        for member in indexes:
            prefix = str(PurePosixPath(member).parent)

            def read(name: str, limit: int, prefix: str = prefix) -> bytes | None:
                full = f"{prefix}/{name}"
                return _capped(archive, full, limit) if full in members else None

            where = f"{wheel}!{prefix}"
            files = MemberFiles(read, where)
            # Read whole: only an index in the build's layout may be larger than MAX_INDEX_BYTES.
            index = LibraryIndex(_capped(archive, member, MAX_LAID_OUT_BYTES), f"{where}/{INDEX_NAME}", files)
            yield _report(where, index)


def _declared_indexes(wheel: Path, archive: zipfile.ZipFile, members: set[str]) -> set[str]:
    """The index.json members that the wheel's own ``aotc.libraries`` entry points name."""
    import configparser

    found = set()
    for member in sorted(m for m in members if m.count("/") == 1 and m.endswith(".dist-info/entry_points.txt")):
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign] - entry point names keep their case
        try:
            parser.read_string(_capped(archive, member, MAX_INDEX_BYTES).decode())
        except (UnicodeDecodeError, configparser.Error) as exc:
            msg = f"{wheel}!{member}: unreadable ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            raise LibraryNotFoundError(msg) from None
        if not parser.has_section(ENTRY_POINT_GROUP):
            continue
        for name, value in parser.items(ENTRY_POINT_GROUP):
            parts = module_path(value)
            index = "/".join([*(parts or ()), INDEX_NAME])
            if parts is None or index not in members:
                msg = f"{wheel}!{member}: entry point {echo(name)} ({ENTRY_POINT_GROUP}) names {echo(value)}, but the wheel holds no {index if parts else 'such package folder'}"
                raise LibraryNotFoundError(msg)
            found.add(index)
    return found


def inspect_target(target: str) -> list[LibraryReport]:
    """Reports for every library found at ``target``."""
    if not target.strip():
        msg = f"{target!r}: name a wheel, a library folder, an {INDEX_NAME} or an installed library"
        raise LibraryNotFoundError(msg)
    path = Path(target)
    if path.is_file() and path.suffix == ".whl":
        return list(_wheel_reports(path))
    if path.is_file() and path.name == INDEX_NAME:
        return list(_folder_reports(path.parent))
    if (path / INDEX_NAME).is_file():
        return list(_folder_reports(path))
    if "/" not in target and target.strip() not in ("", ".", ".."):
        # A name, also where a folder of that name is here: the project's own source
        # package (rowops/ beside pyproject.toml) holds no index.json.
        try:
            folder = Path(find_library(target))  # aotc's own, else a package's entry point
        except LibraryNotFoundError as exc:
            if path.is_dir():
                msg = f"{target}: a folder with no {INDEX_NAME}, and {exc}"
                raise LibraryNotFoundError(msg) from None
            raise
        return list(_folder_reports(folder))
    if path.is_dir():
        return list(_folder_reports(path))
    msg = f"{target}: not a wheel, a library folder, an {INDEX_NAME} or an installed library name"
    raise LibraryNotFoundError(msg)
