"""The package's shape: small modules, and tests that mirror the tree.

Limits from the restructure: no Python module over 450 lines and a median of
at most 150, so each module keeps to one concern (the emulator's C++ headers
are not Python and not counted).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import aotc

PACKAGE = Path(aotc.__file__).resolve().parent
TESTS = Path(__file__).resolve().parent
MAX_LINES = 450
MAX_MEDIAN = 150


def _modules() -> dict[str, int]:
    return {
        str(path.relative_to(PACKAGE)): len(path.read_text().splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
        if "_lib" not in path.parts
    }


def test_no_module_is_over_the_limit() -> None:
    sizes = _modules()
    assert len(sizes) > 40
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_median_module_is_small() -> None:
    assert statistics.median(_modules().values()) <= MAX_MEDIAN


def test_each_part_of_the_package_has_its_tests() -> None:
    parts = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert parts == {"_cache", "arrays", "build", "index", "kernels", "runtime", "tropical"}
    assert {p for p in parts if not (TESTS / p).is_dir() and not (TESTS / f"test_{p}.py").is_file()} == set()
