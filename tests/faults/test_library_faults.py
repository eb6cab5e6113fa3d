"""Hostile installed libraries found by name (issue 35): a package's
``aotc.libraries`` entry point, and what it points at. Each gives one line
naming the package and the entry point, or the right library.

tests/test_locations.py has the lookup itself; these are what a broken or
hostile site-packages may hold.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

import aotc
from aotc.errors import AotcError, ArgumentError, LibraryNotFoundError
from runtime.runtime_support import RecordingBackend, make_library
from test_locations import TRAP, install


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_library(tmp_path_factory.mktemp("rt"))


def one_line(name: str) -> str:
    with pytest.raises(AotcError) as info:
        aotc.load(name, backend=RecordingBackend())
    message = str(info.value)
    assert "\n" not in message and len(message) < 600, message
    return message


def test_a_value_with_trailing_blanks_is_the_same_folder(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(install(tmp_path / "site", built, entry="rt =   rtpkg._kernels   ")))
    assert aotc.load("rt", backend=RecordingBackend()).name == "rt"


def test_a_module_rather_than_a_package_folder(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = install(tmp_path / "site", None, entry="rt = plainmodule")
    (site / "plainmodule.py").write_text(TRAP)
    monkeypatch.syspath_prepend(str(site))
    assert "declares it as 'plainmodule' (aotc.libraries entry point), but no index.json is there" in one_line("rt")
    assert "plainmodule" not in sys.modules


def test_a_fifo_for_index_json_is_never_opened(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = install(tmp_path / "site", None)
    (site / "rtpkg" / "_kernels").mkdir()
    import os

    os.mkfifo(site / "rtpkg" / "_kernels" / "index.json")
    monkeypatch.syspath_prepend(str(site))
    assert "but no index.json is there" in one_line("rt")


def test_an_index_json_that_is_a_symlink_out_of_the_folder(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = install(tmp_path / "site", built)
    index = site / "rtpkg" / "_kernels" / "index.json"
    index.unlink()
    index.symlink_to("/etc/hostname")
    monkeypatch.syspath_prepend(str(site))
    message = one_line("rt")
    assert "index.json" in message and "symbolic link" in message


def test_a_package_whose_metadata_has_no_name(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = install(tmp_path / "site", None, entry="rt = rtpkg._gone")
    (next(site.glob("*.dist-info")) / "METADATA").write_text("Metadata-Version: 2.1\n")
    monkeypatch.syspath_prepend(str(site))
    assert one_line("rt").startswith("library 'rt': ")


def test_the_same_package_twice_on_the_path_is_no_clash(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two copies of one distribution (a venv over a user site): the first on the path is the one.
    monkeypatch.syspath_prepend(str(install(tmp_path / "second", built)))
    monkeypatch.syspath_prepend(str(install(tmp_path / "first", built)))
    assert aotc.load("rt", backend=RecordingBackend()).folder == str((tmp_path / "first" / "rtpkg" / "_kernels").resolve())


def test_a_top_level_package_without_a_spec(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # find_spec raises ValueError for a module in sys.modules whose __spec__ is None.
    site = install(tmp_path / "meta", None, entry="rt = specless._kernels")
    monkeypatch.syspath_prepend(str(site))
    module = types.ModuleType("specless")
    module.__spec__ = None
    monkeypatch.setitem(sys.modules, "specless", module)
    assert "declares it as 'specless._kernels'" in one_line("rt")


def test_a_name_that_is_not_text_or_is_empty() -> None:
    for name in (b"rowops", "", "  ", 7):
        with pytest.raises(ArgumentError, match=r"^library: expected an installed library's name or a folder"):
            aotc.load(name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["tropical\n", "../nothing-here", "\x1b[31mred", "a" * 5000])
def test_an_odd_name_is_one_line_that_cannot_forge_another(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    message = one_line(name)
    assert "\x1b" not in message


def test_a_thousand_entry_points_and_the_one_asked_for(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entries = "\n".join(f"other{i} = otherpkg{i}._kernels" for i in range(1000)) + "\nrt = rtpkg._kernels"
    monkeypatch.syspath_prepend(str(install(tmp_path / "site", built, entry=entries)))
    assert aotc.load("rt", backend=RecordingBackend()).name == "rt"
    # aotc's own libraries are listed too: tropical where the wheel is installed, or an editable
    # install's build put it (on aotc.__path__, not beside aotc/__init__.py); none in a bare checkout.
    own = {p.parent.name for folder in aotc.__path__ for p in (Path(folder) / "_lib").glob("*/index.json")}
    assert one_line("nosuchlib").endswith(f", ... ({1001 + len(own)} in all)); or pass a library folder")  # cut to one short line


def test_doctor_lists_a_broken_entry_point_as_a_problem_and_goes_on(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aotc.runtime.doctor import diagnose

    monkeypatch.syspath_prepend(str(install(tmp_path / "good", built)))
    monkeypatch.syspath_prepend(str(install(tmp_path / "bad", None, dist="bad-kernels", entry="broken = badpkg:_kernels", package="badpkg")))
    report = diagnose(libraries=["broken", "rt"], arch=(9, 0))
    assert report.problems == 1
    assert any(line.startswith("library broken: library 'broken': bad-kernels 0.1.0 declares it as 'badpkg:_kernels'") for line in report.lines)
    assert any(line.startswith("library rt: ") and "3 kernels" in line for line in report.lines)


def test_an_unknown_name_says_so_in_one_line() -> None:
    with pytest.raises(LibraryNotFoundError, match=r"^no kernel library named 'nosuchlib': aotc holds none"):
        aotc.load("nosuchlib")
