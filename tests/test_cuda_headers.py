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


def test_another_toolkit_header_gets_the_toolkit_and_its_cccl_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``<cooperative_groups.h>`` or ``<cuda/std/cstdint>`` compile under NVRTC given the toolkit's
    folder and its CCCL folder; a wheel's folder of half headers alone is passed over for them."""
    wheel = _toolkit(tmp_path / "wheel", "cuda_fp16.h", "cuda_bf16.h")
    toolkit = _toolkit(tmp_path / "cuda", "cuda_fp16.h", "cuda_bf16.h", "cuda_runtime_api.h")
    (toolkit / "cccl").mkdir()
    monkeypatch.setattr(_cuda_headers, "_candidates", lambda: [str(wheel), str(toolkit)])
    groups = b'#include <cuda_fp16.h>\n  #  include <cooperative_groups.h>\nextern "C" __global__ void k(__half x) {}\n'
    assert _cuda_headers.include_options(groups, "k.cu") == (f"-I{toolkit}", f"-I{toolkit / 'cccl'}")
    assert _cuda_headers.include_options(b"#include <cuda/std/cstdint>\n", "k.cu") == (f"-I{toolkit}", f"-I{toolkit / 'cccl'}")
    # The half headers alone still take the first folder that holds them.
    assert _cuda_headers.include_options(SOURCE, "k.cu") == (f"-I{wheel}",)


def test_without_a_toolkit_another_header_is_left_to_nvrtc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _toolkit(tmp_path / "wheel", "cuda_fp16.h")
    monkeypatch.setattr(_cuda_headers, "_candidates", lambda: [str(wheel)])
    assert _cuda_headers.include_options(b"#include <cooperative_groups.h>\n", "k.cu") == ()
    # A half header it needs is still found where it lies.
    assert _cuda_headers.include_options(b"#include <cuda_fp16.h>\n#include <cuda/atomic>\n", "k.cu") == (f"-I{wheel}",)


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        ('k.cu(1): catastrophic error: could not open source file "cstdint" (no directories in search list)', "include <cuda/std/cstdint> instead"),
        ('k.cu(2): catastrophic error: cannot open source file "math.h"', "include <cuda/std/cmath> instead"),
        ('k.cu(3): catastrophic error: cannot open source file "climits"', "include <cuda/std/climits> instead"),
        ('k.cu(1): catastrophic error: cannot open source file "cub/cub.cuh"', "set CUDA_HOME to one that holds it"),
        ("k.cu(4): error: identifier \"x\" is undefined", ""),
    ],
)  # fmt: skip
def test_a_header_nvrtc_cannot_open_is_answered_with_what_to_do(line: str, hint: str) -> None:
    said = _cuda_headers.missing_header_hint(line)
    assert (hint in said) if hint else said == ""
    assert "\n" not in said
