"""Libraries found by name: aotc's own under ``aotc/_lib``, and those packages
declare in the ``aotc.libraries`` entry-point group (``aotc._locations``).

Each test lays out a site folder as pip would (a package folder beside its
``*.dist-info``), puts it on the path, and asks by name: ``aotc.load``,
``aotc inspect``, ``aotc doctor --library`` and ``aotc warm --library``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import aotc
from aotc.errors import LibraryNotFoundError
from conftest import RunAotc, aotc_env
from runtime.runtime_support import RecordingBackend, make_library

# The package's __init__ must never run: finding its library imports nothing of it.
TRAP = "raise RuntimeError('aotc imported the package while looking for its library')\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_library(tmp_path_factory.mktemp("rt"))  # library "rt": index.json, stand-in fatbins, sources


def install(site: Path, library: Path | None, *, dist: str = "rt-kernels", entry: str = "rt = rtpkg._kernels", package: str = "rtpkg") -> Path:
    """``site`` as pip leaves it after installing a package ``dist`` that ships ``library`` and declares ``entry``."""
    info = site / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[aotc.libraries]\n{entry}\n")
    (site / package).mkdir(exist_ok=True)
    (site / package / "__init__.py").write_text(TRAP)
    if library is not None:
        shutil.copytree(library, site / package / "_kernels")
    return site


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> object:
    def add(site: Path) -> None:
        monkeypatch.syspath_prepend(str(site))

    return add


def test_a_packages_library_loads_by_its_name(built: Path, tmp_path: Path, on_path: object) -> None:
    site = install(tmp_path / "site", built)
    on_path(site)  # type: ignore[operator]
    lib = aotc.load("rt", backend=RecordingBackend())
    assert lib.folder == str((site / "rtpkg" / "_kernels").resolve())
    assert lib.name == "rt" and len(lib) == 3
    assert "rtpkg" not in sys.modules
    from aotc.runtime.library import installed_libraries

    assert "rt" in installed_libraries()


def test_an_editable_install_is_found_where_the_package_is(built: Path, tmp_path: Path, on_path: object) -> None:
    # The dist-info in one folder, the package (and its built library) in another, as editable installs leave them.
    install(tmp_path / "meta", None)
    shutil.rmtree(tmp_path / "meta" / "rtpkg")
    source = tmp_path / "src"
    (source / "rtpkg").mkdir(parents=True)
    (source / "rtpkg" / "__init__.py").write_text(TRAP)
    shutil.copytree(built, source / "rtpkg" / "_kernels")
    on_path(tmp_path / "meta")  # type: ignore[operator]
    on_path(source)  # type: ignore[operator]
    assert aotc.load("rt", backend=RecordingBackend()).folder == str((source / "rtpkg" / "_kernels").resolve())


def refusal(name: str) -> str:
    with pytest.raises(LibraryNotFoundError) as info:
        aotc.load(name, backend=RecordingBackend())
    message = str(info.value)
    assert "\n" not in message
    return message


def test_two_packages_declaring_one_name_are_refused_naming_both(built: Path, tmp_path: Path, on_path: object) -> None:
    on_path(install(tmp_path / "a", built))  # type: ignore[operator]
    on_path(install(tmp_path / "b", built, dist="other-kernels", entry="rt = otherpkg._kernels", package="otherpkg"))  # type: ignore[operator]
    assert refusal("rt") == (
        "library 'rt': 2 installed packages declare it (aotc.libraries entry points): "
        "other-kernels 0.1.0 ('otherpkg._kernels') and rt-kernels 0.1.0 ('rtpkg._kernels'); uninstall one, or load a folder"
    ) or refusal("rt") == (
        "library 'rt': 2 installed packages declare it (aotc.libraries entry points): "
        "rt-kernels 0.1.0 ('rtpkg._kernels') and other-kernels 0.1.0 ('otherpkg._kernels'); uninstall one, or load a folder"
    )


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("rt = rtpkg:_kernels", "library 'rt': rt-kernels 0.1.0 declares it as 'rtpkg:_kernels' (aotc.libraries entry point), which is not a package folder; write it as package.folder, e.g. rowops._kernels"),
        ("rt = ../../etc", "library 'rt': rt-kernels 0.1.0 declares it as '../../etc' (aotc.libraries entry point), which is not a package folder; write it as package.folder, e.g. rowops._kernels"),
        ("rt = rtpkg._nothing", "library 'rt': rt-kernels 0.1.0 declares it as 'rtpkg._nothing' (aotc.libraries entry point), but no index.json is there ("),
        ("rt = notinstalled._kernels", "library 'rt': rt-kernels 0.1.0 declares it as 'notinstalled._kernels' (aotc.libraries entry point), but no index.json is there ("),
    ],
)
def test_a_broken_entry_point_is_one_line(entry: str, expected: str, built: Path, tmp_path: Path, on_path: object) -> None:
    on_path(install(tmp_path / "site", built, entry=entry))  # type: ignore[operator]
    message = refusal("rt")
    assert message.startswith(expected), message
    if "no index.json" in expected:
        assert message.endswith("; reinstall that package")


def test_an_unknown_name_lists_what_is_installed(built: Path, tmp_path: Path, on_path: object) -> None:
    on_path(install(tmp_path / "site", built))  # type: ignore[operator]
    message = refusal("nosuchlib")
    assert message.startswith("no kernel library named 'nosuchlib': aotc holds none, and no installed package declares one (aotc.libraries entry points; installed libraries: ")
    assert "rt" in message.split("installed libraries: ")[1]


@pytest.mark.parametrize("name", ["", "   ", None, 3])
def test_an_empty_or_non_string_name_is_refused(name: object) -> None:
    with pytest.raises(aotc.errors.ArgumentError, match=r"^library: expected an installed library's name or a folder, got "):
        aotc.load(name)  # type: ignore[arg-type]


def run_cli(*args: str, site: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = aotc_env({"AOTC_CACHE_DIR": str(tmp_path / "cache"), "AOTC_BACKEND": "emulator"})
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return subprocess.run([sys.executable, "-m", "aotc", *args], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_the_commands_find_it_by_name(built: Path, tmp_path: Path) -> None:
    site = install(tmp_path / "site", built)
    folder = (site / "rtpkg" / "_kernels").resolve()
    inspect = run_cli("inspect", "rt", site=site, tmp_path=tmp_path)
    assert inspect.returncode == 0, inspect.stderr
    assert inspect.stdout.startswith(f"rt: {folder} (aotc ")
    doctor = run_cli("doctor", "--library", "rt", site=site, tmp_path=tmp_path)
    assert doctor.returncode == 0, doctor.stderr
    assert f"library rt: {folder}, 3 kernels" in doctor.stdout
    warm = run_cli("warm", "--arch", "9.0", "--library", "rt", site=site, tmp_path=tmp_path)
    assert warm.returncode == 0, warm.stderr
    assert f"warming rt ({folder}) for sm_90" in warm.stdout


def test_the_commands_say_what_is_broken_in_one_line(built: Path, tmp_path: Path) -> None:
    site = install(tmp_path / "site", built, entry="rt = rtpkg._gone")
    for args in (("inspect", "rt"), ("warm", "--arch", "9.0", "--library", "rt")):
        result = run_cli(*args, site=site, tmp_path=tmp_path)
        assert result.returncode == 1
        assert result.stderr.startswith("aotc: error: library 'rt': rt-kernels 0.1.0 declares it as 'rtpkg._gone'"), result.stderr
        assert result.stderr.count("\n") == 1
    doctor = run_cli("doctor", "--library", "rt", site=site, tmp_path=tmp_path)
    assert doctor.returncode == 1
    assert "library rt: library 'rt': rt-kernels 0.1.0 declares it as 'rtpkg._gone'" in doctor.stdout


def test_doctor_reports_a_package_declaring_a_name_aotc_holds(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_path: object) -> None:
    import aotc._locations as locations
    from aotc.runtime.doctor import diagnose

    own = tmp_path / "aotc"
    shutil.copytree(built, own / "_lib" / "rt")
    monkeypatch.setattr(locations, "_PACKAGE_DIR", str(own))
    on_path(install(tmp_path / "site", built))  # type: ignore[operator]
    assert aotc.load("rt", backend=RecordingBackend()).folder == str(own / "_lib" / "rt")  # aotc's own wins
    report = diagnose(libraries=["rt"], arch=(9, 0))
    assert report.problems == 1
    assert "library rt: rt-kernels 0.1.0 declares it too (aotc.libraries entry point), but the name loads aotc's own library; rename that entry point, or load its folder" in report.lines


def test_inspect_reads_a_wheels_entry_points(built: Path, tmp_path: Path) -> None:
    site = install(tmp_path / "site", built)
    wheel = tmp_path / "rt_kernels-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(site.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(site).as_posix())
    result = run_cli("inspect", str(wheel), site=tmp_path, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"rt: {wheel}!rtpkg/_kernels (aotc ")
    # An entry point that names a folder the wheel does not hold is one line.
    broken = tmp_path / "broken-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(broken, "w") as archive:
        for member in source.namelist():
            data = source.read(member)
            archive.writestr(member, data.replace(b"rtpkg._kernels", b"rtpkg._gone") if member.endswith("entry_points.txt") else data)
    result = run_cli("inspect", str(broken), site=tmp_path, tmp_path=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        f"aotc: error: {broken}!rt_kernels-0.1.0.dist-info/entry_points.txt: entry point 'rt' (aotc.libraries) "
        "names 'rtpkg._gone', but the wheel holds no rtpkg/_gone/index.json\n"
    )


def test_loading_by_folder_or_aotcs_own_name_reads_no_package_metadata(built: Path, tmp_path: Path) -> None:
    own = tmp_path / "aotc"
    shutil.copytree(built, own / "_lib" / "rt")
    code = (
        "import sys, aotc, aotc._locations as locations\n"
        f"locations._PACKAGE_DIR = {str(own)!r}\n"
        "aotc.load('rt', backend='noop'); aotc.load(sys.argv[1], backend='noop')\n"
        "print('importlib.metadata' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(built)], env=aotc_env(), capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "False\n"), result.stderr


def test_cli_inspect_of_an_unknown_name(run_aotc: RunAotc) -> None:
    result = run_aotc("inspect", "nosuchlib")
    assert result.returncode == 1
    assert result.stderr.startswith("aotc: error: no kernel library named 'nosuchlib': aotc holds none")


@pytest.mark.parametrize("text", [b"[aotc.libraries]\nno equals sign here\n", b"[aotc.libraries]\nx = \xff\xfe\n"])
def test_a_broken_unrelated_package_hides_nothing_and_is_named(text: bytes, built: Path, tmp_path: Path, on_path: object) -> None:
    bad = tmp_path / "bad" / "bad-1.0.dist-info"
    bad.mkdir(parents=True)
    (bad / "METADATA").write_text("Metadata-Version: 2.1\nName: bad\nVersion: 1.0\n")
    (bad / "entry_points.txt").write_bytes(text)
    on_path(tmp_path / "bad")  # type: ignore[operator]
    on_path(install(tmp_path / "site", built))  # type: ignore[operator]
    assert aotc.load("rt", backend=RecordingBackend()).name == "rt"
    message = refusal("nosuchlib")
    assert message.startswith(f"no installed package declares a library 'nosuchlib', and the entry points of 1 cannot be read: {bad} (")


def test_a_name_is_a_name_beside_a_source_folder_of_that_name(built: Path, tmp_path: Path) -> None:
    # In the project's own folder, rowops/ is the source package, with no index.json.
    site = install(tmp_path / "site", built)
    (tmp_path / "rt").mkdir()
    result = run_cli("inspect", "rt", site=site, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"rt: {(site / 'rtpkg' / '_kernels').resolve()} (aotc ")
    (tmp_path / "nothing").mkdir()
    result = run_cli("inspect", "nothing", site=site, tmp_path=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("aotc: error: nothing: a folder with no index.json, and no kernel library named 'nothing'")


def test_aotcs_own_library_is_found_in_an_editable_installs_site_folder(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pip install -e .`` of aotc imports the source tree, while its build installs
    ``aotc/_lib/tropical`` into site-packages; the import redirect puts both on
    ``aotc.__path__``. Before, the source tree's ``_lib`` alone was read, and
    ``tropical.matmul`` said no library named 'tropical' was installed."""
    site_package = tmp_path / "site-packages" / "aotc"
    shutil.copytree(built, site_package / "_lib" / "rt")
    monkeypatch.setattr(aotc, "__path__", [str(site_package), *aotc.__path__])
    assert aotc.library_dir("rt") == site_package.resolve() / "_lib" / "rt"
    assert aotc.libraries_root() == site_package.resolve() / "_lib"
    lib = aotc.load("rt", backend=RecordingBackend())
    assert lib.folder == str((site_package / "_lib" / "rt").resolve())
    from aotc._locations import installed_libraries

    assert "rt" in installed_libraries()
