"""The ``aotc.libraries`` entry points, kept between processes (``aotc._entry_points``).

Each case runs ``aotc.load(name)`` in fresh interpreters over a site folder
laid out as pip leaves it, with its own cache folder, and says whether the
installed distributions' metadata was read (``importlib.metadata`` imported).
The site's folders are dated in the past, as any folder not changed in the
last two seconds is: what was kept is trusted only then.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import aotc_env
from runtime.runtime_support import make_library

_LOAD = """
import json, sys
import aotc
try:
    found = aotc.load(sys.argv[1], backend="noop").folder
except Exception as exc:
    found = f"{type(exc).__name__}: {exc}"
print(json.dumps({"folder": found, "read metadata": "importlib.metadata" in sys.modules}))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_library(tmp_path_factory.mktemp("ep"))  # library "rt"


def _install(site: Path, library: Path, dist: str, entry: str, package: str) -> None:
    info = site / f"{dist}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[aotc.libraries]\n{entry}\n")
    (site / package).mkdir()
    (site / package / "__init__.py").write_text("")
    shutil.copytree(library, site / package / "_kernels")


def _settle(*paths: Path) -> None:
    """Date ``paths`` a minute back: changes long enough ago to be stamped."""
    past = time.time() - 60
    for path in paths:
        os.utime(path, (past, past))


def _load(name: str, site: Path, cache: Path) -> dict[str, object]:
    env = aotc_env({"AOTC_CACHE_DIR": str(cache)})
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    done = subprocess.run([sys.executable, "-c", _LOAD, name], capture_output=True, text=True, env=env, cwd=site, check=True, timeout=120)
    return json.loads(done.stdout)


@pytest.fixture
def site(built: Path, tmp_path: Path) -> Path:
    site = tmp_path / "site"
    _install(site, built, "rt_kernels", "rt = rtpkg._kernels", "rtpkg")
    _settle(site, *site.glob("*.dist-info/entry_points.txt"))
    return site


def test_a_second_load_by_name_reads_no_metadata(site: Path, tmp_path: Path) -> None:
    folder = str((site / "rtpkg" / "_kernels").resolve())
    assert _load("rt", site, tmp_path / "cache") == {"folder": folder, "read metadata": True}
    assert _load("rt", site, tmp_path / "cache") == {"folder": folder, "read metadata": False}
    assert [p.suffix for p in (tmp_path / "cache" / "library-names").iterdir()] == [".json"]  # one kept file


def test_an_install_or_an_uninstall_is_seen_at_the_next_load(built: Path, site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _load("other", site, cache)["folder"].startswith("LibraryNotFoundError: no kernel library named 'other'")  # type: ignore[union-attr]
    _install(site, built, "other_kernels", "other = otherpkg._kernels", "otherpkg")  # a new .dist-info: the site's mtime moves
    _settle(site, *site.glob("*.dist-info/entry_points.txt"))
    assert _load("other", site, cache) == {"folder": str((site / "otherpkg" / "_kernels").resolve()), "read metadata": True}
    assert _load("other", site, cache)["read metadata"] is False
    shutil.rmtree(site / "other_kernels-0.1.0.dist-info")  # pip uninstall
    _settle(site)
    assert _load("other", site, cache)["folder"].startswith("LibraryNotFoundError")  # type: ignore[union-attr]


def test_a_declaration_edited_in_place_is_seen(built: Path, site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _load("rt", site, cache)["read metadata"] is True
    shutil.copytree(built, site / "rtpkg" / "moved")
    entry_points = site / "rt_kernels-0.1.0.dist-info" / "entry_points.txt"
    entry_points.write_text("[aotc.libraries]\nrt = rtpkg.moved\n")  # the site's and the .dist-info's mtimes stay
    _settle(entry_points)
    assert _load("rt", site, cache) == {"folder": str((site / "rtpkg" / "moved").resolve()), "read metadata": True}


def test_nothing_is_kept_while_a_folder_is_too_young_to_be_stamped(site: Path, tmp_path: Path) -> None:
    os.utime(site)  # changed just now: a change in the same tick would leave its mtime alone
    assert _load("rt", site, tmp_path / "cache")["read metadata"] is True
    assert _load("rt", site, tmp_path / "cache")["read metadata"] is True
    assert not (tmp_path / "cache" / "library-names").exists() or not list((tmp_path / "cache" / "library-names").iterdir())


def test_what_others_could_have_written_is_not_trusted(site: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _load("rt", site, cache)["read metadata"] is True
    kept = next((cache / "library-names").iterdir())
    record = json.loads(kept.read_text())
    record["found"][0][1] = "elsewhere._kernels"  # a forged answer
    kept.write_text(json.dumps(record))
    (cache / "library-names").chmod(0o777)
    assert _load("rt", site, cache) == {"folder": str((site / "rtpkg" / "_kernels").resolve()), "read metadata": True}
    kept.unlink()
    kept.mkdir()  # not a regular file: a miss, never an error
    (cache / "library-names").chmod(0o700)
    assert _load("rt", site, cache)["read metadata"] is True
