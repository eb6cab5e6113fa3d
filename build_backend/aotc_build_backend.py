"""aotc's build backend: scikit-build-core, plus what a CUDA lane needs.

Two additions, both keyed on the lane (``AOTC_CUDA``: 13, the default, or 12;
a ``-C cmake.define.AOTC_CUDA=12`` config setting or the environment variable):

- **Build requirements.** When no nvcc of the lane's CUDA major is found here,
  the build asks pip for the NVRTC and nvFatbin wheels, and compiles with them
  (``aotc.build.toolchain``). pip installs them into its isolated build environment,
  so ``pip install .`` needs no CUDA toolkit at all.
- **The CUDA 12 wheel's name and pins.** Following CuPy's ``cupy-cuda12x``,
  the CUDA 12 lane is the distribution ``aotc-cuda12x``, depending on the
  CUDA 12 builds of cuda-bindings and NVRTC; the CUDA 13 lane is plain
  ``aotc``. A project's name can't be dynamic in pyproject.toml, so the
  metadata and the finished wheel are renamed here, with the ``wheel``
  library (which keeps SOURCE_DATE_EPOCH, so builds stay reproducible).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from scikit_build_core import build as _skbuild

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

_ROOT = Path(__file__).resolve().parents[1]
_PROJECT = "aotc"

# What the CUDA 12 lane's wheel depends on instead (by requirement name).
_CU12_REQUIREMENTS = {
    "cuda-bindings": "cuda-bindings>=12.4,<13",
    "nvidia-cuda-nvrtc": "nvidia-cuda-nvrtc-cu12>=12.8,<13",
}

build_sdist = _skbuild.build_sdist
get_requires_for_build_sdist = _skbuild.get_requires_for_build_sdist


def _setting(config_settings: dict | None, name: str, default: str) -> str:
    settings = config_settings or {}
    for key in (f"cmake.define.{name}", name):
        if settings.get(key):
            return str(settings[key])
    return os.environ.get(name) or default


def _toolchain():  # a module
    # The source tree's aotc, for its compiler search: the same answer CMake gets later.
    if str(_ROOT) not in sys.path:
        sys.path.insert(0, str(_ROOT))
    from aotc.build import toolchain

    return toolchain


def _lane(config_settings: dict | None) -> str:
    return _setting(config_settings, "AOTC_CUDA", "13")


def _lane_requirements(config_settings: dict | None) -> list[str]:
    toolchain = _toolchain()
    requirements = toolchain.lane_requirements(_lane(config_settings), _setting(config_settings, "AOTC_COMPILER", "auto"))
    if _lane(config_settings) != "13":
        requirements.append("wheel>=0.42")  # renames the finished wheel
    return requirements


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    return [*_skbuild.get_requires_for_build_wheel(config_settings), *_lane_requirements(config_settings)]


def get_requires_for_build_editable(config_settings: dict | None = None) -> list[str]:
    return [*_skbuild.get_requires_for_build_editable(config_settings), *_lane_requirements(config_settings)]


def _distribution(config_settings: dict | None) -> str:
    return _toolchain().CUDA_LANES.get(_lane(config_settings), {}).get("wheel", _PROJECT)


def _lane_metadata(text: str, name: str) -> str:
    """METADATA of the CUDA 12 lane: its name, and the CUDA 12 builds of the CUDA packages."""
    text = re.sub(r"^Name: .*$", f"Name: {name}", text, count=1, flags=re.MULTILINE)

    def pin(match: re.Match[str]) -> str:
        requirement, marker = match[1], match[2] or ""
        base = re.match(r"[A-Za-z0-9_.-]+", requirement)[0]
        return f"Requires-Dist: {_CU12_REQUIREMENTS.get(base, requirement)}{marker}"

    return re.sub(r"^Requires-Dist: ([^;\n]+?)(\s*;.*)?$", pin, text, flags=re.MULTILINE)


def _dist_info_name(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}.dist-info"


def _rename_dist_info(directory: Path, dist_info: str, name: str) -> str:
    version = dist_info.removesuffix(".dist-info").split("-", 1)[1]
    new = _dist_info_name(name, version)
    metadata = directory / dist_info / "METADATA"
    metadata.write_text(_lane_metadata(metadata.read_text(encoding="utf-8"), name), encoding="utf-8")
    (directory / dist_info).rename(directory / new)
    return new


def _rename_wheel(wheel_directory: str, filename: str, name: str) -> str:
    from wheel.wheelfile import WheelFile

    source = Path(wheel_directory) / filename
    version, tags = filename.removesuffix(".whl").split("-", 2)[1:]
    target = Path(wheel_directory) / f"{name.replace('-', '_')}-{version}-{tags}.whl"
    old_info, new_info = _dist_info_name(_PROJECT, version), _dist_info_name(name, version)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / target.name
        with WheelFile(source) as wheel_in, WheelFile(out, "w") as wheel_out:
            for item in wheel_in.infolist():
                if item.filename == f"{old_info}/RECORD":
                    continue  # WheelFile writes a new one
                data = wheel_in.read(item.filename)
                arcname = item.filename
                if arcname.startswith(f"{old_info}/"):
                    arcname = new_info + arcname[len(old_info) :]
                    if arcname.endswith("/METADATA"):
                        data = _lane_metadata(data.decode("utf-8"), name).encode("utf-8")
                wheel_out.writestr(arcname, data)
        source.unlink()
        shutil.move(str(out), target)
    return target.name


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict | None = None) -> str:
    dist_info = _skbuild.prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    name = _distribution(config_settings)
    return dist_info if name == _PROJECT else _rename_dist_info(Path(metadata_directory), dist_info, name)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: dict | None = None) -> str:
    dist_info = _skbuild.prepare_metadata_for_build_editable(metadata_directory, config_settings)
    name = _distribution(config_settings)
    return dist_info if name == _PROJECT else _rename_dist_info(Path(metadata_directory), dist_info, name)


def build_wheel(wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None) -> str:
    name = _distribution(config_settings)
    # A renamed metadata directory is ours, not scikit-build-core's: let it write its own.
    filename = _skbuild.build_wheel(wheel_directory, config_settings, metadata_directory if name == _PROJECT else None)
    return filename if name == _PROJECT else _rename_wheel(wheel_directory, filename, name)


def build_editable(wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None) -> str:
    name = _distribution(config_settings)
    filename = _skbuild.build_editable(wheel_directory, config_settings, metadata_directory if name == _PROJECT else None)
    return filename if name == _PROJECT else _rename_wheel(wheel_directory, filename, name)
