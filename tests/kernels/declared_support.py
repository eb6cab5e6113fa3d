"""Declared-family libraries for the tests: the rowops and warpnorm examples, and small manifests.

``declared_library`` renders a manifest's kernels with the real codegen and
indexes them with stand-in fatbins, as ``runtime_support.make_library`` does
for the tropical fixture: the emulator compiles the real sources, so no nvcc
is needed. Not a conftest.py (see runtime_support).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runtime.runtime_support import stand_in_library

__all__ = [
    "AXPY",
    "BADD",
    "RAGGED",
    "ROWOPS",
    "SIZES",
    "WARPNORM",
    "axpy",
    "badd",
    "declared_library",
    "ragged",
    "reference",
    "row_sums",
    "rowops",
    "run_fresh",
    "warpnorm",
    "warpnorm_reference",
    "write_project",
]  # fmt: skip

REPO = Path(__file__).resolve().parents[2]
ROWOPS = REPO / "examples" / "rowops" / "kernels"
WARPNORM = REPO / "examples" / "warpnorm" / "kernels"
# Sparse and ragged kernels: shape expressions (rows + 1) and tied extents.
RAGGED = REPO / "tests" / "packages" / "ragged"
# Row sums whose gradient kernel takes a size of the forward call, and saves nothing.
SIZES = REPO / "tests" / "packages" / "sizes"

# A family with an inout array, a float argument and a product grid: y += alpha * x.
AXPY = {
    "manifest.yaml": """\
library: axpylib
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  axpy:
    template: axpy.cu.j2
    axes: {dtype: [f32, f64], threads: [64, 128]}
    name: "axpy_{dtype}_{threads}"
    signature:
      x: {array: dtype, role: in, shape: [rows, n]}
      y: {array: dtype, role: inout, shape: [rows, n]}
      rows: i32
      n: i32
      alpha: f64
    launch:
      grid: ["cdiv(rows * n, threads)"]
      block: [threads]
""",
    "templates/axpy.cu.j2": """\
// {{ kernel_name }}: y += alpha * x over {{ dtype }}, one thread an element.
extern "C" __global__ void __launch_bounds__({{ threads }}) {{ kernel_name }}({{ params }})
{
    long long i = (long long)blockIdx.x * {{ threads }} + threadIdx.x;
    if (i < (long long)rows * n) y[i] += ({{ ctype.x }})alpha * x[i];
}
""",
}


# A backward that covers one input of two: y = x * w, whose gradient kernel
# computes grad_x only (as an embedding bag may differentiate its table and not
# its per-sample weights).
PARTIAL = {
    "manifest.yaml": """\
library: partial
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  mulw:
    template: mulw.cu.j2
    axes: {dtype: [f64]}
    signature:
      x: {array: dtype, role: in, shape: [n]}
      w: {array: dtype, role: in, shape: [n]}
      y: {array: dtype, role: out, shape: [n]}
      n: i32
    launch: {grid: ["cdiv(n, 128)"], block: [128]}
    backward: {family: mulw_grad_x, saves: [w]}
  mulw_grad_x:
    template: mulw.cu.j2
    axes: {dtype: [f64]}
    signature:
      grad_y: {array: dtype, role: in, shape: [n]}
      w: {array: dtype, role: in, shape: [n]}
      grad_x: {array: dtype, role: out, shape: [n]}
      n: i32
    launch: {grid: ["cdiv(n, 128)"], block: [128]}
""",
    "templates/mulw.cu.j2": """\
// {{ kernel_name }}: the first array times the second, elementwise (y = x * w; grad_x = grad_y * w).
extern "C" __global__ void __launch_bounds__(128) {{ kernel_name }}({{ params }})
{
    long long i = (long long)blockIdx.x * 128 + threadIdx.x;
{% if family == "mulw" %}
    if (i < n) y[i] = x[i] * w[i];
{% else %}
    if (i < n) grad_x[i] = grad_y[i] * w[i];
{% endif %}
}
""",
}


# Arrays read where they lie: y[b, r, c] = x[b, r, c] + bias[b, c], with declared strides.
# x takes any strides; bias must be dense along c; either may leave out the batch (broadcast).
BADD = {
    "manifest.yaml": """\
library: badd
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  badd:
    template: badd.cu.j2
    axes: {dtype: [f32, f64]}
    name: "badd_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [batch, rows, cols], optional: [batch], strides: [sxb, sxr, sxc]}
      bias: {array: dtype, role: in, shape: [batch, cols], optional: [batch], strides: [sbb, 1]}
      y: {array: dtype, role: out, shape: [batch, rows, cols], optional: [batch]}
      batch: i32
      rows: i32
      cols: i32
      sxb: i64
      sxr: i64
      sxc: i64
      sbb: i64
    launch:
      grid: ["cdiv(batch * rows * cols, 128)"]
      block: [128]
""",
    "templates/badd.cu.j2": """\
// {{ kernel_name }}: y = x + bias over {{ dtype }}, x and bias read by their strides; y is dense.
extern "C" __global__ void __launch_bounds__(128) {{ kernel_name }}({{ params }})
{
    long long i = (long long)blockIdx.x * 128 + threadIdx.x;
    if (i >= (long long)batch * rows * cols) return;
    long long c = i % cols, r = (i / cols) % rows, b = i / ((long long)cols * rows);
    y[i] = x[b * sxb + r * sxr + c * sxc] + bias[b * sbb + c];
}
""",
}


def write_project(root: Path, files: dict[str, str]) -> Path:
    """``files`` (relative path -> text) under ``root``; returns the manifest's path."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "manifest.yaml"


def refused(path: Path) -> str:
    """The one-line error ``load_manifest(path)`` refuses the manifest with."""
    from aotc.build.manifest import load_manifest
    from aotc.errors import ManifestError

    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def run_fresh(folder: Path, script: str, *args: str) -> str:
    """``script`` run in a fresh interpreter on the emulator, with ``args``;
    its stdout, stripped, once it has exited 0."""
    from conftest import aotc_env

    path = folder / "script.py"
    path.write_text(script)
    done = subprocess.run(
        [sys.executable, str(path), *args], env=aotc_env({"AOTC_BACKEND": "emulator"}), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def declared_library(root: Path, manifest_path: Path) -> Path:
    """The library of ``manifest_path``: real sources, stand-in fatbins, a sealed index."""
    from aotc.build.manifest import load_manifest

    shutil.rmtree(root / "lib", ignore_errors=True)
    return stand_in_library(load_manifest(manifest_path), root)


def _reference(example: str) -> Any:
    """An example's NumPy references, without its package (which loads its built library)."""
    spec = importlib.util.spec_from_file_location(f"{example}_reference", REPO / "examples" / example / example / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _reference("rowops")
warpnorm_reference = _reference("warpnorm")


# One library of each name per process, whichever test modules use the fixture:
# a fixture imported into several modules is made once per module, and torch.ops
# holds one library of a name.
_made: dict[str, Any] = {}


def _emulated_once(name: str, tmp_path_factory: pytest.TempPathFactory, manifest: Path | dict[str, str]) -> Any:
    """The bindings of the library of ``manifest`` (a manifest's path, or a
    project's files to write) on the emulator, made the first time ``name`` is asked for."""
    import aotc
    import aotc.kernels

    if name not in _made:
        root = tmp_path_factory.mktemp(name)
        path = manifest if isinstance(manifest, Path) else write_project(root / "project", manifest)
        _made[name] = aotc.kernels.over(aotc.load(declared_library(root, path), backend="emulator"))
    return _made[name]


@pytest.fixture(scope="session")
def rowops(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The rowops example's library on the emulator; one per process (its torch ops are named rowops)."""
    return _emulated_once("rowops", tmp_path_factory, ROWOPS / "manifest.yaml")


@pytest.fixture(scope="session")
def warpnorm(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The warpnorm example's library on the emulator; one per process (its torch ops are named warpnorm)."""
    return _emulated_once("warpnorm", tmp_path_factory, WARPNORM / "manifest.yaml")


@pytest.fixture(scope="session")
def ragged(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The ragged test package's library on the emulator; one per session (its torch ops are named ragged)."""
    return _emulated_once("ragged", tmp_path_factory, RAGGED / "manifest.yaml")


@pytest.fixture(scope="session")
def row_sums(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The sizes test package's library on the emulator; one per session (its torch ops are named sizes)."""
    return _emulated_once("sizes", tmp_path_factory, SIZES / "manifest.yaml")


@pytest.fixture(scope="session")
def badd(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The strided BADD family's library on the emulator; one per session (its torch ops are named badd)."""
    return _emulated_once("badd", tmp_path_factory, BADD)


@pytest.fixture(scope="session")
def partial(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A family whose backward computes the gradient of one input of two; one per session (its torch ops are named partial)."""
    return _emulated_once("partial", tmp_path_factory, PARTIAL)


@pytest.fixture(scope="session")
def axpy(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The AXPY family's library on the emulator; one per session (its torch ops are named axpylib)."""
    return _emulated_once("axpy", tmp_path_factory, AXPY)
