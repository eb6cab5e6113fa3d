"""The in-tree build backend: a lane's build requirements, and the CUDA 12 wheel's name and pins."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "build_backend"))
import aotc_build_backend as backend

METADATA = """\
Metadata-Version: 2.4
Name: aotc
Version: 0.1.0
Requires-Dist: jinja2>=3.1
Requires-Dist: cuda-bindings>=13.0
Provides-Extra: jit
Requires-Dist: cuda-bindings>=13.0; extra == "jit"
Requires-Dist: nvidia-cuda-nvrtc>=13.0; extra == "jit"

aotc compiles CUDA kernels. Name: not a header.
"""


def test_cuda12_metadata_renames_and_repins() -> None:
    text = backend._lane_metadata(METADATA, "aotc-cuda12x")  # noqa: SLF001 - the backend's private helpers under test
    assert text.splitlines()[:5] == [
        "Metadata-Version: 2.4",
        "Name: aotc-cuda12x",
        "Version: 0.1.0",
        "Requires-Dist: jinja2>=3.1",
        "Requires-Dist: cuda-bindings>=12.4,<13",
    ]
    assert 'Requires-Dist: cuda-bindings>=12.4,<13; extra == "jit"' in text
    assert 'Requires-Dist: nvidia-cuda-nvrtc-cu12>=12.8,<13; extra == "jit"' in text
    assert text.endswith("aotc compiles CUDA kernels. Name: not a header.\n")


@pytest.mark.parametrize(
    ("settings", "env", "lane"),
    [({}, {}, "13"), ({"cmake.define.AOTC_CUDA": "12"}, {}, "12"), ({}, {"AOTC_CUDA": "12"}, "12"), ({"AOTC_CUDA": "13"}, {"AOTC_CUDA": "12"}, "13")],
)
def test_the_lane_comes_from_config_settings_then_the_environment(
    monkeypatch: pytest.MonkeyPatch, settings: dict, env: dict, lane: str
) -> None:
    monkeypatch.delenv("AOTC_CUDA", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert backend._lane(settings) == lane  # noqa: SLF001 - as above
    assert backend._distribution(settings) == ("aotc" if lane == "13" else "aotc-cuda12x")  # noqa: SLF001 - as above


def test_the_finished_wheel_is_renamed_with_a_fresh_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheelfile = pytest.importorskip("wheel.wheelfile", reason="the wheel package renames lane wheels; pip install wheel")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    source = tmp_path / "aotc-0.1.0-py3-none-any.whl"
    with wheelfile.WheelFile(source, "w") as whl:
        whl.writestr("aotc/__init__.py", "x = 1\n")
        whl.writestr("aotc-0.1.0.dist-info/METADATA", METADATA)
        whl.writestr("aotc-0.1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    name = backend._rename_wheel(str(tmp_path), source.name, "aotc-cuda12x")  # noqa: SLF001 - as above
    assert name == "aotc_cuda12x-0.1.0-py3-none-any.whl"
    assert not source.exists()
    with zipfile.ZipFile(tmp_path / name) as whl:
        names = whl.namelist()
        assert "aotc/__init__.py" in names
        assert "aotc_cuda12x-0.1.0.dist-info/RECORD" in names
        assert not any(n.startswith("aotc-0.1.0.dist-info") for n in names)
        assert "Name: aotc-cuda12x" in whl.read("aotc_cuda12x-0.1.0.dist-info/METADATA").decode()
        record = whl.read("aotc_cuda12x-0.1.0.dist-info/RECORD").decode()
        assert "aotc/__init__.py,sha256=" in record and "aotc-0.1.0.dist-info" not in record
        assert {info.date_time for info in whl.infolist()} == {(2023, 11, 14, 22, 13, 20)}
