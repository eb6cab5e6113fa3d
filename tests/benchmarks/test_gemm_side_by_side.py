"""The GPU run's side-by-side benchmark (benchmarks/gemm_side_by_side.py), in
the parts that need no GPU: its plan, its compile, and its parameter blocks
held to each cubin; and the whole run on the CPU emulator, with a stand-in for
the peer (peer_stand_in.cu: the peer's interface, naive code of our own)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from aotc.runtime.backends.params import ParamLayout
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import gemm_side_by_side as side_by_side
import gemm_side_by_side_build as side_by_side_build

STAND_IN = Path(__file__).resolve().parent / "peer_stand_in.cu"
# The stand-in's three kernels are max-plus f32's: forward, argmax, batched argmax.
KERNEL = "maxplus_f32"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def test_the_plan_needs_no_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert side_by_side.main(["--peer-cu", str(STAND_IN), "--plan", "--kernel", "f32_"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # 3 semirings x (forward, argmax), and counting's 2 alone; 4096^3 and the
    # ragged shape; plain and exact inputs.
    assert lines[-1] == "32 rows"
    assert sum(line.split()[1] == "-" for line in lines[:-1]) == 8
    assert lines[0].split() == ["gemm_maxplus_f32_forward", "tropical_maxplus_f32_nn", "4096^3", "plain"]
    assert any(line.split()[:3] == ["gemm_maxmul_f32_argmax", "tropical_maxmul_f32_nn_with_argmax", "4001x4097x4093"] for line in lines)


def test_aotc_kernels_without_a_peer_are_timed_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert side_by_side.main(["--peer-cu", str(STAND_IN), "--plan", "--kernel", "counting_f64_forward", "--tiles", "plain"]) == 0
    assert capsys.readouterr().out.split("\n")[0].split() == ["gemm_counting_f64_forward", "-", "4096^3", "plain"]


def test_a_missing_peer_source_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AOTC_PEER_CU", raising=False)
    with pytest.raises(SystemExit, match=r"^gemm_side_by_side: no peer source: pass --peer-cu PATH or set AOTC_PEER_CU"):
        side_by_side.main(["--plan"])
    with pytest.raises(SystemExit, match=r"^gemm_side_by_side: the peer's source is not a file: .*nothing\.cu$"):
        side_by_side.main(["--plan", "--peer-cu", str(tmp_path / "nothing.cu")])


def test_shapes() -> None:
    assert side_by_side.parse_shape("4096") == (0, 4096, 4096, 4096)
    assert side_by_side.parse_shape("4001x4097x4093") == (0, 4001, 4097, 4093)
    assert side_by_side.parse_shape("64*512") == (64, 512, 512, 512)
    with pytest.raises(SystemExit, match="--shape '4x4': expected N, MxNxK or B\\*N"):
        side_by_side.parse_shape("4x4")


@needs_nvcc
def test_it_compiles_and_each_launch_matches_its_cubin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Argmax, single and batched: the most parameters (k*, batch strides).
    argv = ["--peer-cu", str(STAND_IN), "--kernel", "maxplus_f32_argmax", "--compile-only", "--arch", "80", "--build-dir", str(tmp_path)]
    assert side_by_side.main(argv) == 0
    assert "parameters of 2 aotc kernels and 2 peer kernels match their cubins" in capsys.readouterr().out
    # The check can fail: a parameter block that differs from a cubin's is named.
    units = side_by_side_build.render("maxplus_f32_argmax", tmp_path / "src", STAND_IN)
    built = side_by_side_build.build(units, STAND_IN, "80", tmp_path)  # kept by content: compiles nothing
    assert side_by_side_build.check_params(units, built, "80") == []
    argmax = next(u for u in units if u.name == "gemm_maxplus_f32_argmax")
    argmax.peer_layout = ParamLayout("@QQQiii")  # no argmax pointer
    argmax.layout = ParamLayout(argmax.layout.format.replace("q", "i", 1))  # lda as an int
    assert side_by_side_build.check_params(units, built, "80") == [
        "gemm_side_by_side: gemm_maxplus_f32_argmax: its cubin takes (offset, size) [(0, 8), (8, 8), (16, 8), (24, 8), "
        "(32, 4), (36, 4), (40, 4), (48, 8), (56, 8), (64, 8), (72, 8), (80, 4)], this run packs [(0, 8), (8, 8), (16, 8), "
        "(24, 8), (32, 4), (36, 4), (40, 4), (44, 4), (48, 8), (56, 8), (64, 8), (72, 4)]",
        "gemm_side_by_side: tropical_maxplus_f32_nn_with_argmax: its cubin takes (offset, size) [(0, 8), (8, 8), (16, 8), "
        "(24, 8), (32, 4), (36, 4), (40, 4)], this run packs [(0, 8), (8, 8), (16, 8), (24, 4), (28, 4), (32, 4)]",
    ]


@pytest.mark.skipif(not os.environ.get("AOTC_PEER_CU"), reason="AOTC_PEER_CU does not name a copy of the peer's source")
@needs_nvcc
def test_the_peers_own_source_compiles_and_matches(tmp_path: Path) -> None:
    argv = ["--kernel", "maxplus_f", "--compile-only", "--arch", "90", "--build-dir", str(tmp_path)]
    assert side_by_side.main(argv) == 0


def _run_on_the_emulator(tmp_path: Path, peer: Path, kernel: str = KERNEL, shapes: tuple[str, ...] = ("40x70x19", "2*24")) -> int:
    from aotc.runtime.cache import DiskCache
    from aotc.runtime.emulator.backend import EmulatorBackend

    backend = EmulatorBackend(cache=DiskCache(tmp_path / "cache"))
    argv = ["--peer-cu", str(peer), "--kernel", kernel, *(f"--shape={shape}" for shape in shapes), "--repeats", "1", "--budget", "0"]
    return side_by_side.main([*argv, "--build-dir", str(tmp_path / "build"), "--out", str(tmp_path / "out")], backend=backend)


def test_the_whole_run_on_the_emulator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run_on_the_emulator(tmp_path, STAND_IN) == 0
    assert "checked 3 kernels (and their peers) against the reference: 3 ok" in capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "side_by_side.json").read_text())
    assert summary["checks"] == {f"gemm_maxplus_f32_{name}": "ok" for name in ("forward", "argmax", "argmax_batched")}
    rows = [(r["kernel"], r["tiles"], r["peer"] is not None, r["peer_ms"] is not None) for r in summary["rows"]]
    assert sorted(rows) == sorted(
        (f"gemm_maxplus_f32_{name}", tiles, True, True) for name in ("forward", "argmax", "argmax_batched") for tiles in ("plain", "exact")
    )
    table = (tmp_path / "out" / "side_by_side.md").read_text().splitlines()
    assert table[2].startswith("| kernel | peer | shape | inputs | aotc ms | peer ms | aotc % of limit | peer % of limit | peer / aotc |")
    assert len(table) == 2 + 2 + 6


def test_a_wrong_peer_fails_its_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Ties take the last k: the integer inputs tie often, so k* differs.
    wrong = tmp_path / "wrong.cu"
    wrong.write_text(STAND_IN.read_text().replace("if (term > best)", "if (term >= best)"))
    assert _run_on_the_emulator(tmp_path, wrong, "maxplus_f32_", ("40x70x19",)) == 1
    out = capsys.readouterr().out
    assert "gemm_maxplus_f32_argmax: peer k* differs (128^3, plain); peer k* differs (96x160x72, plain)" in out
    assert "gemm_maxplus_f32_forward: " not in out
