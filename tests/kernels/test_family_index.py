"""A declared library's index: the one-kernel-a-line layout, so loading checks no
kernel and a family's first use checks that family's kernels alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aotc
import aotc.kernels
from aotc.errors import IndexFormatError
from aotc.index import LibraryIndex
from declared_support import ROWOPS, declared_library


@pytest.fixture
def lib(tmp_path: Path) -> Path:
    return declared_library(tmp_path, ROWOPS / "manifest.yaml")


def test_a_declared_library_is_laid_out_a_kernel_a_line(lib: Path) -> None:
    text = (lib / "index.json").read_text()
    assert '"kernel_lines": {"softmax_f32":[0,"softmax"],' in text
    assert '\n"scan_i64": {"family": "scan", ' in text
    assert LibraryIndex.open(lib).kernels.families()["scan_i64"] == "scan"  # read whole: the directory held to the table


def test_a_familys_first_use_checks_its_kernels_alone(lib: Path) -> None:
    library = aotc.load(lib, backend="emulator")
    kernels = aotc.kernels.over(library)
    assert kernels.names == ("softmax", "softmax_backward", "scan")
    assert repr(library.index.kernels) == f"<KernelTable {lib / 'index.json'}: 8 kernels, 0 checked>"
    kernels.softmax(np.ones((2, 3)))
    assert repr(library.index.kernels) == f"<KernelTable {lib / 'index.json'}: 8 kernels, 2 checked>"


def _lie(lib: Path, old: bytes, new: bytes) -> None:
    path = lib / "index.json"
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


def test_a_directory_that_files_a_kernel_under_another_family_is_refused(lib: Path) -> None:
    data = (lib / "index.json").read_bytes()
    start = data.index(b'"scan_f32":[')
    entry = data[start : data.index(b"]", start) + 1]
    _lie(lib, entry, entry.replace(b'"scan"]', b'"softmax"]'))
    kernels = aotc.kernels.over(aotc.load(lib, backend="emulator"))
    assert kernels.scan(np.ones((2, 3))).shape == (2, 3)  # the other kernels of scan are unaffected
    with pytest.raises(IndexFormatError, match=r"kernels\.scan_f32: the directory \(kernel_lines\) points at no line of this kernel"):
        kernels.softmax(np.ones((2, 3)))  # the family that claims it checks it
    with pytest.raises(IndexFormatError, match=r"kernel_lines\.scan_f32: does not give the kernel's family$"):
        LibraryIndex.open(lib)  # read whole (aotc inspect): the directory is held to the table
