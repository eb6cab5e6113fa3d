"""benchmarks/gemm_profile.py's table, from ncu logs in its CSV form (``--csv
--page raw --print-units base``): no GPU, no ncu."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import gemm_profile


def _log(rows: list[dict[str, str]]) -> str:
    """An ncu raw CSV: its own messages, a header, a units row, one row per kernel."""
    head = ["ID", "Kernel Name", *gemm_profile.METRICS]
    text = io.StringIO()
    text.write("==PROF== Connected to process 4242\n")
    writer = csv.writer(text, quoting=csv.QUOTE_ALL)
    writer.writerow(head)
    writer.writerow(["", "", *("" for _ in gemm_profile.METRICS)])
    for n, row in enumerate(rows):
        writer.writerow([str(n), row["name"], *(row.get(metric, "") for metric in gemm_profile.METRICS)])
    return text.getvalue()


def test_one_line_per_kernel_with_its_figures(tmp_path: Path) -> None:
    aotc = {
        "name": "gemm_maxplus_f32_forward(const float *, ...)",
        "gpu__time_duration.sum": "1500000",  # ns
        "sm__cycles_elapsed.avg.per_second": "1755000000",
        "smsp__inst_executed.sum": str(2048**3 * 2.5 / 32),  # 2.5 instructions a term
        "smsp__inst_executed_op_shared_ld.sum": "1000",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "4000",
        "smsp__warp_issue_stalled_barrier_per_warp_active.pct": "12.5",
        "smsp__warp_issue_stalled_wait_per_warp_active.pct": "30",
        "smsp__warp_issue_stalled_selected_per_warp_active.pct": "20",
        "smsp__warp_issue_stalled_no_instruction_per_warp_active.pct": "1",
        "launch__registers_per_thread": "128",
    }
    peer = {"name": "tropical_maxplus_f32_nn", "gpu__time_duration.sum": "2000000"}
    (tmp_path / "ncu_maxplus_f32_forward.csv").write_text(_log([aotc, peer, {**aotc, "gpu__time_duration.sum": "1600000"}, peer]))
    (tmp_path / "ncu_maxplus_f64_forward.csv").write_text("==ERROR== ERR_NVGPUCTRPERM\n")
    (tmp_path / "ncu_maxplus_f64_forward.err").write_text("==ERROR== ERR_NVGPUCTRPERM - no permission to read the counters\n")
    lines = gemm_profile.summarize(tmp_path, 2048).splitlines()
    rows = [line.split(" | ") for line in lines[4:]]
    assert [row[:5] for row in rows[:4]] == [
        ["| gemm_maxplus_f32_forward", "plain", "1.500", "1755", "2.50"],
        ["| tropical_maxplus_f32_nn", "plain", "2.000", "-", "-"],
        ["| gemm_maxplus_f32_forward", "exact", "1.600", "1755", "2.50"],
        ["| tropical_maxplus_f32_nn", "exact", "2.000", "-", "-"],
    ]
    assert rows[0][-3:] == ["128", "4.00", "wait 30, selected 20, barrier 12.5 |"]
    assert lines[-1] == "| maxplus_f64_forward: no profile | ==ERROR== ERR_NVGPUCTRPERM - no permission to read the counters |"
