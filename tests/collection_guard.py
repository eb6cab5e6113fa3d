"""A pytest plugin: a run over a folder must collect every test file in it.

pytest's default ``norecursedirs`` skipped every folder named ``build``, and
146 tests under ``tests/build/`` went unrun without a word. This plugin makes
such a gap fail the run: for each folder given to pytest (``testpaths`` when
none is), every ``test_*.py`` below it, outside the fixture projects, must
either yield at least one test or be skipped as a whole with a stated reason.
A file that is collected but defines no test counts as a gap too.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

__all__ = ["uncollected"]

# Fixture projects that tests copy and build; never test modules of this suite.
FIXTURE_FOLDERS = frozenset({"packages"})

_files_with_tests = pytest.StashKey[set[Path]]()
_files_skipped = pytest.StashKey[set[Path]]()


def uncollected(folder: Path, with_tests: Iterable[Path], skipped: Iterable[Path]) -> list[str]:
    """The test files under ``folder`` that yielded no test and were not skipped
    whole, as paths relative to ``folder``."""
    accounted = {p.resolve() for p in with_tests} | {p.resolve() for p in skipped}
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("test_*.py")
        if not FIXTURE_FOLDERS & set(path.relative_to(folder).parts[:-1])
        and not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(folder).parts)
        and path.resolve() not in accounted
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_files_with_tests] = set()
    config.stash[_files_skipped] = set()


def pytest_itemcollected(item: pytest.Item) -> None:
    # Before -k/-m deselection: a deselected test still proves its file was seen.
    item.config.stash[_files_with_tests].add(Path(item.path))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> object:
    report = yield
    if isinstance(collector, pytest.Module) and report.skipped:
        collector.config.stash[_files_skipped].add(Path(collector.path).resolve())
    return report


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    folders = [Path(arg.split("::")[0]) for arg in config.args]
    folders = [(config.invocation_params.dir / f).resolve() for f in folders]
    missing = [
        f"{folder.name}/{name}"
        for folder in folders
        if folder.is_dir()
        for name in uncollected(folder, config.stash[_files_with_tests], config.stash[_files_skipped])
    ]
    if missing:
        msg = f"collection guard: {len(missing)} test file(s) yielded no test: {', '.join(missing)}"
        raise pytest.UsageError(msg)
