"""The toolkit-free compile path: NVRTC + nvFatbin from the nvidia wheels.

Needs no GPU. Each CUDA major's tests skip, saying why, unless its wheels are
installed in this interpreter: nvidia-cuda-nvrtc-cu12 + nvidia-nvfatbin-cu12
for 12, nvidia-cuda-nvrtc + nvidia-nvfatbin for 13. Listing a fatbin needs
cuobjdump (nvidia-cuda-cuobjdump, or a CUDA toolkit).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aotc.build import nvrtc_fatbin
from aotc.build.resources import parse_resource_report
from aotc.build.codegen import render_kernel
from aotc.build.sass import find_tool
from aotc.errors import BuildError
from aotc.build.manifest import load_manifest
from conftest import REPO, aotc_env, require_nvrtc

KERNEL = "gemm_counting_f32_forward"


def require_toolchain(major: int) -> nvrtc_fatbin.Toolchain:
    require_nvrtc(major)
    return nvrtc_fatbin.load_toolchain(major)


def cuobjdump() -> str:
    """cuobjdump from the nvidia-cuda-cuobjdump wheel, else PATH; else skip."""
    found = find_tool("nvidia-cuda-cuobjdump", "cuobjdump")
    if found is None:
        pytest.skip("no cuobjdump: pip install nvidia-cuda-cuobjdump")
    return found


@pytest.fixture(scope="module")
def kernel_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real generated kernel from the repository's manifest."""
    manifest = load_manifest(REPO / "kernels" / "manifest.yaml")
    kernel = next(k for k in manifest.kernels if k.name == KERNEL)
    path = tmp_path_factory.mktemp("gen") / f"{KERNEL}.cu"
    path.write_text(render_kernel(manifest, kernel))
    return path


def run_tool(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aotc.build.nvrtc_fatbin", *map(str, args)],
        env=aotc_env(env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def listing(fatbin: Path) -> tuple[set[str], set[str]]:
    """(ELF, PTX) entry names cuobjdump lists, e.g. ({'sm_80'}, {'sm_90'})."""
    out = subprocess.run(
        [cuobjdump(), "--list-elf", "--list-ptx", str(fatbin)], capture_output=True, text=True, check=True
    ).stdout
    elf, ptx = set(), set()
    for line in out.splitlines():
        # "ELF file    1: gemm_counting_f32_forward.sm_80.cubin", "PTX file    1: ....sm_90.ptx"
        name = line.split(":", 1)[-1].strip()
        if line.startswith("ELF file"):
            elf.add(name.split(".")[-2])
        elif line.startswith("PTX file"):
            ptx.add(name.split(".")[-2])
    return elf, ptx


@pytest.mark.parametrize(("major", "sass", "ptx"), [(12, ["70", "80"], ["90"]), (13, ["75"], ["120"])])
def test_fatbin_holds_sass_and_ptx(major: int, sass: list[str], ptx: list[str], kernel_source: Path, tmp_path: Path) -> None:
    require_toolchain(major)
    out, resources = tmp_path / f"{KERNEL}.fatbin", tmp_path / f"{KERNEL}.resources.txt"
    # --werror as in the nvcc build: the generated kernels compile cleanly, and
    # NVRTC 12's notice that sm_70 is deprecated does not count.
    result = run_tool(
        "--cuda", major, "--sass", ",".join(sass), "--ptx", ",".join(ptx), "--werror",
        "--out", out, "--resources", resources, kernel_source,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert listing(out) == ({f"sm_{a}" for a in sass}, {f"sm_{a}" for a in ptx})
    # ptxas' report, in the format the index reads from nvcc builds, per SASS arch.
    report = parse_resource_report(resources.read_text(), KERNEL)
    assert sorted(report) == sorted(sass)
    assert all(entry["registers"] > 0 for entry in report.values())
    assert "Compile time" not in resources.read_text()


def test_version_names_the_libraries() -> None:
    tool = require_toolchain(12)
    result = run_tool("--cuda", "12", "--version")
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert line.startswith(f"nvrtc {tool.nvrtc_version} (") and "libnvrtc.so.12" in line
    assert "nvfatbin " in line and "libnvfatbin.so.12" in line
    assert tool.nvrtc_version.count(".") == 2  # the full version, from the wheel


@pytest.mark.parametrize("major", [12, 13])
def test_output_is_deterministic_and_rewritten_only_on_change(major: int, kernel_source: Path, tmp_path: Path) -> None:
    require_toolchain(major)
    args = ("--cuda", major, "--sass", "75,80", "--ptx", "80")
    first, second = tmp_path / "a" / "k.fatbin", tmp_path / "b" / "k.fatbin"
    assert run_tool(*args, "--out", first, kernel_source).returncode == 0
    assert run_tool(*args, "--out", second, kernel_source).returncode == 0
    assert first.read_bytes() == second.read_bytes()
    # Same bytes again: the file is left alone, so ninja's restat sees no change.
    before = first.stat().st_mtime_ns
    os.utime(first, ns=(before - 10**9, before - 10**9))
    assert run_tool(*args, "--out", first, kernel_source).returncode == 0
    assert first.stat().st_mtime_ns == before - 10**9


def test_each_compression_mode_is_smaller_than_none(kernel_source: Path, tmp_path: Path) -> None:
    require_toolchain(13)
    # The default compresses large entries (the PTX), as nvcc does; "size" compresses everything harder.
    args = ("--cuda", "13", "--sass", "80", "--ptx", "80")
    sizes = {}
    for mode in ("none", "default", "size"):
        out = tmp_path / f"{mode}.fatbin"
        assert run_tool(*args, f"--compress={mode}", "--out", out, kernel_source).returncode == 0
        assert listing(out) == ({"sm_80"}, {"sm_80"})
        sizes[mode] = out.stat().st_size
    assert sizes["size"] < sizes["default"] < sizes["none"]


def test_werror_fails_on_a_warning(tmp_path: Path) -> None:
    require_toolchain(12)
    source = tmp_path / "warns.cu"
    source.write_text('extern "C" __global__ void k(float* x) { int unused; x[0] = 1.0f; }\n')
    out = tmp_path / "warns.fatbin"
    lenient = run_tool("--cuda", "12", "--sass", "80", "--out", out, source)
    assert lenient.returncode == 0, lenient.stderr
    assert "declared but never referenced" in lenient.stderr  # shown, not fatal
    out.unlink()
    strict = run_tool("--cuda", "12", "--sass", "80", "--werror", "--out", out, source)
    assert strict.returncode == 1
    last = strict.stderr.strip().splitlines()[-1]
    assert last.startswith("aotc: error: warns.cu: NVRTC warned (sm_80) and --werror is set:")
    assert "declared but never referenced" in last
    assert not out.exists()


def test_compile_error_is_one_line(tmp_path: Path) -> None:
    require_toolchain(12)
    source = tmp_path / "broken.cu"
    source.write_text('extern "C" __global__ void k(float* x) { x[0] = nope; }\n')
    result = run_tool("--cuda", "12", "--sass", "80", "--out", tmp_path / "broken.fatbin", source)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("aotc: error: NVRTC 12.") and "broken.cu for sm_80" in last and "nope" in last


# A block reduction through the toolkit's own headers, as a template may write it.
TOOLKIT_HEADERS = """\
#include <cuda/std/cstdint>
#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void row_sum(const float* x, float* out, cuda::std::int32_t n) {
  namespace cg = cooperative_groups;
  using Reduce = cub::BlockReduce<float, 128>;
  __shared__ typename Reduce::TempStorage scratch;
  float v = threadIdx.x < n ? x[threadIdx.x] : 0.0f;
  float total = Reduce(scratch).Sum(v);
  cg::this_thread_block().sync();
  if (threadIdx.x == 0) out[0] = total;
}
"""


def test_toolkit_headers_compile_and_a_host_header_says_what_stands_in(tmp_path: Path) -> None:
    """libcu++, cooperative groups and CUB's block primitives compile under NVRTC (the
    toolkit's include and cccl folders, aotc._cuda_headers); a host header cannot, and
    the one-line error names the cuda/std header to include instead."""
    require_toolchain(13)
    source = tmp_path / "row_sum.cu"
    source.write_text(TOOLKIT_HEADERS)
    result = run_tool("--cuda", "13", "--sass", "80", "--werror", "--out", tmp_path / "row_sum.fatbin", source)
    assert result.returncode == 0, result.stderr
    source.write_text(TOOLKIT_HEADERS.replace("<cuda/std/cstdint>", "<cstdint>").replace("cuda::std::", "std::"))
    result = run_tool("--cuda", "13", "--sass", "80", "--out", tmp_path / "host.fatbin", source)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("aotc: error: NVRTC 13.") and 'cannot open source file "cstdint"' in last, last
    assert last.endswith("include <cuda/std/cstdint> instead, or build with AOTC_COMPILER=nvcc)"), last


def test_unsupported_arch_is_refused(kernel_source: Path, tmp_path: Path) -> None:
    require_toolchain(13)
    result = run_tool("--cuda", "13", "--sass", "70", "--out", tmp_path / "k.fatbin", kernel_source)
    assert result.returncode == 1
    assert "cannot compile for SASS 70" in result.stderr.strip().splitlines()[-1]


def test_missing_library_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(nvrtc_fatbin.ENV_NVRTC, raising=False)
    with pytest.raises(BuildError, match=r"libnvrtc\.so\.12 not found .*nvidia-cuda-nvrtc-cu12.*AOTC_NVRTC_LIBRARY"):
        nvrtc_fatbin.find_library("nvrtc", 12, search=[tmp_path])
    with pytest.raises(BuildError, match=r"libnvfatbin\.so\.13 not found .*nvidia-nvfatbin.*AOTC_NVFATBIN_LIBRARY"):
        nvrtc_fatbin.find_library("nvfatbin", 13, search=[tmp_path])
    # Through the CLI: an override that points nowhere; one line, naming the variable.
    result = run_tool("--cuda", "12", "--version", env={nvrtc_fatbin.ENV_NVRTC: str(tmp_path / "nope.so")})
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"aotc: error: AOTC_NVRTC_LIBRARY={tmp_path / 'nope.so'} is not a file")


def test_wheel_layouts_are_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cu12 wheels: nvidia/cuda_nvrtc/lib, nvidia/nvfatbin/lib; CUDA 13: nvidia/cu13/lib."""
    monkeypatch.delenv(nvrtc_fatbin.ENV_NVRTC, raising=False)
    monkeypatch.delenv(nvrtc_fatbin.ENV_NVFATBIN, raising=False)
    for relative in ("cuda_nvrtc/lib/libnvrtc.so.12", "nvfatbin/lib/libnvfatbin.so.12", "cu13/lib/libnvrtc.so.13"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).touch()
    assert nvrtc_fatbin.find_library("nvrtc", 12, [tmp_path]) == (tmp_path / "cuda_nvrtc/lib/libnvrtc.so.12", False)
    assert nvrtc_fatbin.find_library("nvfatbin", 12, [tmp_path])[0] == tmp_path / "nvfatbin/lib/libnvfatbin.so.12"
    assert nvrtc_fatbin.find_library("nvrtc", 13, [tmp_path])[0] == tmp_path / "cu13/lib/libnvrtc.so.13"
    monkeypatch.setenv(nvrtc_fatbin.ENV_NVRTC, str(tmp_path / "cu13/lib/libnvrtc.so.13"))
    assert nvrtc_fatbin.find_library("nvrtc", 12, []) == (tmp_path / "cu13/lib/libnvrtc.so.13", True)
