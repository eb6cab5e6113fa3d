"""aotc/_cuda_headers.py: the include folder NVRTC is given for the headers of the dtype table's C types."""

from __future__ import annotations

from pathlib import Path

import pytest

from aotc import _cuda_headers
from aotc.errors import BuildError

SOURCE = b'#include <cuda_bf16.h>\n#include <cuda_fp16.h>\nextern "C" __global__ void k(__half x) {}\n'


def _toolkit(root: Path, *headers: str) -> Path:
    include = root / "include"
    include.mkdir(parents=True)
    for header in headers:
        (include / header).write_text("// stand-in\n")
    return include


def test_a_source_without_them_gets_no_option() -> None:
    assert _cuda_headers.include_options(b'extern "C" __global__ void k(float x) {}\n', "k.cu") == ()


def test_the_first_folder_holding_every_header_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    half_only = _toolkit(tmp_path / "old", "cuda_fp16.h")
    both = _toolkit(tmp_path / "new", "cuda_fp16.h", "cuda_bf16.h")
    monkeypatch.setattr(_cuda_headers, "_candidates", lambda: [str(tmp_path / "none"), str(half_only), str(both)])
    assert _cuda_headers.include_options(SOURCE, "k.cu") == (f"-I{both}",)
    assert _cuda_headers.include_options(b"#include <cuda_fp16.h>\n", "k.cu") == (f"-I{half_only}",)


def test_cuda_home_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    include = _toolkit(tmp_path, "cuda_fp16.h", "cuda_bf16.h")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert _cuda_headers.include_options(SOURCE, "k.cu") == (f"-I{include}",)


def test_no_folder_is_one_line_naming_the_file_and_the_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cuda_headers, "_candidates", lambda: [])
    with pytest.raises(BuildError) as info:
        _cuda_headers.include_options(SOURCE, "k.cu")
    message = str(info.value)
    assert message.startswith("k.cu: includes cuda_bf16.h, cuda_fp16.h, which NVRTC does not have built in") and "\n" not in message
