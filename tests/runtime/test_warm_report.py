"""``aotc warm``'s report: progress in place on a terminal, a line per kernel elsewhere."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from aotc import cli
from aotc.runtime.warm import COMPILED, FAILED, HIT, NOT_NEEDED, WarmResult
from aotc.runtime.warm_report import LineReport, ProgressReport, make_report
from runtime_support import make_library

KERNELS = ["gemm_maxplus_f32_forward", "gemm_maxplus_f32_forward_batched", "gemm_minplus_f32_forward"]
RESULTS = [
    WarmResult(KERNELS[0], COMPILED, "", 1.25),
    WarmResult(KERNELS[1], NOT_NEEDED, "SASS sm_80 runs on sm_86"),
    WarmResult(KERNELS[2], FAILED, "NVRTC said no"),
]


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _report(err: io.StringIO) -> tuple[str, str]:
    out = io.StringIO()
    report = make_report(KERNELS, out, err)
    for result in RESULTS:
        report.result(result)
    report.finish()
    return out.getvalue(), err.getvalue()


def test_a_terminal_gets_progress_in_place() -> None:
    out, err = _report(Terminal())
    assert err == (
        f"\r[1/3] {KERNELS[0]} compiled\x1b[K"
        f"\r[2/3] {KERNELS[1]} not needed\x1b[K"
        f"\r\x1b[K  failed      {KERNELS[2]}  NVRTC said no\n"  # a failure keeps a line of its own
        f"\r[3/3] {KERNELS[2]} failed\x1b[K"
        "\r\x1b[K"  # cleared for the summary
    )
    assert out == "  not needed  1 kernel: SASS sm_80 runs on sm_86\n"


def test_elsewhere_each_kernel_gets_a_line() -> None:
    out, err = _report(io.StringIO())
    width = len(KERNELS[1])
    assert out.splitlines() == [
        f"  compiled    {KERNELS[0]:<{width}}  1.25 s",
        f"  not needed  {KERNELS[1]}  SASS sm_80 runs on sm_86",
    ]
    assert err == f"  failed      {KERNELS[2]:<{width}}  NVRTC said no\n"
    assert "\r" not in out + err


def test_the_choice_follows_isatty() -> None:
    assert isinstance(make_report(KERNELS, io.StringIO(), Terminal()), ProgressReport)
    assert isinstance(make_report(KERNELS, io.StringIO(), io.StringIO()), LineReport)
    assert isinstance(make_report(KERNELS, io.StringIO(), object()), LineReport)  # type: ignore[arg-type]


def test_not_needed_reasons_are_counted_once() -> None:
    out = io.StringIO()
    report = ProgressReport(KERNELS, out, Terminal())
    for kernel in KERNELS:
        report.result(WarmResult(kernel, NOT_NEEDED, "SASS sm_80 runs on sm_86"))
    report.result(WarmResult("extra", HIT, "already in the cache"))
    report.finish()
    assert out.getvalue() == "  not needed  3 kernels: SASS sm_80 runs on sm_86\n"


# -- through the command ----------------------------------------------------------------


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_library(tmp_path_factory.mktemp("rt"))  # SASS and PTX for 8.0 only


def _warm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, err: io.StringIO, *args: str) -> tuple[int, str, str]:
    out = io.StringIO()
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AOTC_JIT", "")
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    code = cli.main(["warm", *args])
    return code, out.getvalue(), err.getvalue()


def test_warm_on_a_terminal_shows_progress(lib: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, out, err = _warm(monkeypatch, tmp_path, Terminal(), "--arch", "9.0", "--library", str(lib), "--kernel", KERNELS[2], "-j", "1")
    assert code == 0, err
    assert err == f"\r[1/1] {KERNELS[2]} compiled\x1b[K\r\x1b[K"
    assert out.startswith("warming rt")
    assert "1 kernel: 1 compiled, 0 hits, 0 not needed, 0 failed" in out
    assert f"  compiled    {KERNELS[2]}" not in out

    code, out, err = _warm(monkeypatch, tmp_path, Terminal(), "--arch", "8.6", "--library", str(lib))
    assert code == 0, err
    assert err.count("\r[") == 3 and f"\r[3/3] {KERNELS[2]} not needed" in err
    assert "  not needed  3 kernels: SASS sm_80 runs on sm_86 (same major, older minor)" in out.splitlines()


def test_warm_in_a_log_keeps_a_line_per_kernel(lib: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, out, err = _warm(monkeypatch, tmp_path, io.StringIO(), "--arch", "8.6", "--library", str(lib))
    assert code == 0, err
    assert err == ""
    for kernel in KERNELS:
        assert f"  not needed  {kernel:<{len(KERNELS[1])}}  SASS sm_80 runs on sm_86 (same major, older minor)" in out.splitlines()
    assert "\r" not in out
