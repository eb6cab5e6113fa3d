"""Kernel libraries for the runtime tests, and a backend that records launches.

``make_library`` renders the fixture manifest (tests/packages/runtime) with
the real templates and indexes it with stand-in fatbins: the sources are real
(NVRTC compiles them), the fatbins are bytes that only the noop backend
accepts. No nvcc is needed. ``build_library`` builds the same project with
CMake and nvcc, for the tests that need real fatbins.

Not a conftest.py: tests/conftest.py is imported as ``conftest`` by other test
modules, and a second conftest here would shadow it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import aotc
from aotc.runtime.backends.noop import NoopBackend

__all__ = ["FIXTURE", "RecordingBackend", "build_library", "cmake_build", "make_library", "rewrite_index", "run_checked_script", "stand_in_library"]

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "packages" / "runtime"


def _project(root: Path) -> Path:
    shutil.copytree(FIXTURE, root)
    shutil.copytree(REPO / "aotc" / "build" / "templates" / "tropical", root / "kernels" / "templates", dirs_exist_ok=True)
    return root


def make_library(
    root: Path, *, sass: tuple[str, ...] = ("80",), ptx: tuple[str, ...] = ("80",), manifest_text: str | None = None
) -> Path:
    """A library folder (index.json, stand-in fatbins, real sources) under ``root``; returns it.

    ``manifest_text`` replaces the fixture's manifest (same templates), for a library of other kernels.
    """
    from aotc.build.manifest import load_manifest

    project = _project(root / "project")
    if manifest_text is not None:
        (project / "kernels" / "manifest.yaml").write_text(manifest_text)
    return stand_in_library(load_manifest(project / "kernels" / "manifest.yaml").with_archs(sass=sass, ptx=ptx), root)


def stand_in_library(manifest: Any, root: Path) -> Path:
    """``manifest``'s kernels rendered into ``root/gen`` and indexed in ``root/lib``
    (returned): real sources, stand-in fatbins, no toolkit table."""
    from aotc.build.codegen import generate, source_name
    from aotc.build.index_writer import build_index, dumps, kernel_entry, seal
    from aotc.index import INDEX_NAME

    gen = root / "gen"
    generate(manifest, gen)
    lib = root / "lib"
    entries = {}
    for kernel in manifest.kernels:
        fatbin = f"stand-in fatbin of {kernel.name}\n".encode()
        source = (gen / source_name(kernel)).read_bytes()
        entry = kernel_entry(kernel, manifest, fatbin, source, {})  # no ptxas report for stand-ins
        for part, data in (("fatbin", fatbin), ("source", source)):
            path = lib / entry[part]["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        entries[kernel.name] = entry
    # The index as an aotc from before the toolkit table wrote it: tests that check
    # the driver add a toolkit themselves (rewrite_index).
    index = build_index(manifest, entries, {})
    del index["toolkit"]
    index["nvcc_version"] = "13.0.88"
    (lib / INDEX_NAME).write_bytes(dumps(seal(index)))
    return lib


def rewrite_index(lib: Path, change: Any, *, reseal: bool = True) -> None:
    """Apply ``change(index)`` to ``lib``'s index.json in place, then rewrite its
    checksums as a build would (``reseal=False`` leaves them: a tampered index)."""
    from aotc.build.index_writer import dumps, seal

    path = lib / "index.json"
    index = json.loads(path.read_text())
    change(index)
    path.write_bytes(dumps(seal(index) if reseal else index))  # the build's layout: one kernel a line


def build_library(root: Path, arch: str = "80") -> Path:
    """The fixture project built with CMake and nvcc for ``arch`` (SASS and PTX); returns the staged library."""
    build = root / "build"
    result = cmake_build(_project(root / "project"), build, arch)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return build / "aotc" / "rt" / "lib"


def cmake_build(project: Path, build: Path, arch: str) -> subprocess.CompletedProcess:
    """Configure ``project`` against this aotc for ``arch`` (SASS and PTX), asserting
    that works, and return the build step's result (a test may expect it to fail)."""
    configure = [
        "cmake", "-S", str(project), "-B", str(build), "-G", "Ninja",
        f"-Daotc_DIR={aotc.cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}",
        f"-DAOTC_ARCHS={arch}", f"-DAOTC_PTX_ARCHS={arch}",
    ]  # fmt: skip
    result = subprocess.run(configure, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=900)


class RecordingBackend(NoopBackend):
    """The noop backend, remembering what was loaded and launched."""

    name = "recording"

    def __init__(self, capability: tuple[int, int] = (8, 0), driver_version: tuple[int, int] = (13, 0)) -> None:
        super().__init__(capability, driver_version)
        self.modules: list[tuple[str, str]] = []  # (name, sha256 of the image)
        self.launches: list[tuple[Any, ...]] = []

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] = ()) -> Any:
        assert symbols == (name,)  # generated kernels are extern "C": the symbol is the name
        self.modules.append((name, hashlib.sha256(image).hexdigest()))
        return super().load_module(image, name=name, symbols=symbols)

    def launch(self, function: Any, shape: Any, stream: Any, params: bytes) -> None:
        grid, block, shared_bytes = shape
        self.launches.append((function, grid, block, shared_bytes, stream, params))


def gpu_library(tmp_path_factory: Any, name: str) -> Path:
    """The tropical library the GPU tests run: the installed one, else one built
    for this GPU's arch (skips, saying why, without nvcc)."""
    import pytest

    from aotc.runtime.backends import get_backend

    installed = aotc.library_dir("tropical")
    if (installed / "index.json").is_file():
        return installed
    if shutil.which("nvcc") is None:
        pytest.skip("no installed tropical library, and no nvcc to build the fixture library")
    major, minor = get_backend("cuda-python").device().capability
    return build_library(tmp_path_factory.mktemp(name), arch=f"{major}{minor}")


def run_checked_script(script: str, checks: str, *, asan: bool) -> list[str]:
    """The lines ``script`` prints in a fresh Python under ``AOTC_EMULATOR_CHECK=checks``,
    with AddressSanitizer loaded first where ``asan``; it must exit 0."""
    from aotc.runtime.emulator.checks import asan_environment
    from conftest import aotc_env

    env = aotc_env({**(asan_environment() if asan else {}), "AOTC_EMULATOR_CHECK": checks})
    if not asan:  # a test process under AddressSanitizer (tox's checked run) must not pass it on
        for name in ("LD_PRELOAD", "ASAN_OPTIONS", "PYTHONMALLOC"):
            env.pop(name, None)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()
