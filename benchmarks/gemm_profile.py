"""One Nsight Compute pass per kernel class, aotc's kernel beside the peer's, and one table of them.

    python benchmarks/gemm_profile.py --peer-cu PATH --out DIR   # ncu on every class at 2048^3
    python benchmarks/gemm_profile.py --peer-cu PATH --plan      # the ncu commands; no GPU
    python benchmarks/gemm_profile.py --summarize DIR            # the table from DIR's ncu_*.csv

Each pass runs ``gemm_side_by_side.py --once`` on one class under ``ncu``: aotc's
kernel on plain, then exact inputs, each followed by the peer's on the same
inputs. A kernel's first row is therefore "plain" and its second "exact". Per
kernel the table gives: time, the SM clock it ran at, instructions per term
(warp instructions x 32 / terms: the SASS count's dynamic twin, the per-tile
work included), issue-active %, each pipe's share of its peak, achieved
occupancy, registers, shared-memory wavefronts per shared load (the floor is
1 per 4-byte and 4 per 16-byte load; more is bank conflicts), and the three
largest stall reasons. ncu never changes a GPU setting here
(``--clock-control none``), and each pass has a timeout; a pass that fails
says why in the table and the rest go on. The metric list and the table
follow the reference harness the issue came with (``device_plan.sh``,
``ncu_summary.py``).
"""

from __future__ import annotations

import argparse
import csv
import glob
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLASSES = (
    "maxplus_f32_forward", "maxplus_f32_argmax", "maxplus_f64_forward", "maxplus_i32_forward",
    "maxplus_i64_forward", "maxmul_i64_forward", "counting_f64_forward",
)  # fmt: skip
PIPES = ("alu", "fma", "fmaheavy", "fp64", "xu", "lsu")
STALLS = ("barrier", "long_scoreboard", "short_scoreboard", "wait", "math_pipe_throttle", "mio_throttle", "not_selected", "selected", "dispatch_stall", "no_instruction", "branch_resolving")  # fmt: skip
METRICS = (
    "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "smsp__inst_executed.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread", "smsp__inst_executed_op_shared_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    *(f"sm__inst_executed_pipe_{pipe}.avg.pct_of_peak_sustained_active" for pipe in PIPES),
    *(f"smsp__warp_issue_stalled_{stall}_per_warp_active.pct" for stall in STALLS),
)  # fmt: skip


def find_ncu() -> str | None:
    candidates = [shutil.which("ncu"), "/usr/local/cuda/bin/ncu", *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))]
    return next((c for c in candidates if c and Path(c).is_file()), None)


def known_metrics(ncu: str) -> tuple[str, ...]:
    """The metrics this ncu knows for this GPU: one unknown name fails a whole pass."""
    listed = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=60).stdout
    names = {line.split()[0] for line in listed.splitlines() if line.strip()}
    return tuple(m for m in METRICS if m.split(".")[0] in names or m.startswith(("launch__", "gpu__time_duration")))


def command(ncu: str, metrics: tuple[str, ...], kind: str, shape: int, peer_cu: Path, build_dir: Path, log: Path) -> list[str]:
    side_by_side = [sys.executable, str(HERE / "gemm_side_by_side.py"), "--once", "--kernel", kind, "--shape", str(shape)]
    side_by_side += ["--peer-cu", str(peer_cu), "--build-dir", str(build_dir)]
    profile = [ncu, "--clock-control", "none", "--kernel-name", "regex:^(gemm|tropical)_", "--section", "WarpStateStats"]
    return [*profile, "--metrics", ",".join(metrics), "--csv", "--page", "raw", "--print-units", "base", "--log-file", str(log), *side_by_side]


# --------------------------------------------------------------------------- the table


def rows_of(path: Path) -> list[dict[str, str]]:
    """The profiled kernels of one ``ncu --csv --page raw`` log, in launch order."""
    lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    start = next((n for n, line in enumerate(lines) if '"Kernel Name"' in line), None)
    if start is None:
        return []
    head, *body = list(csv.reader(lines[start:]))
    rows = [dict(zip(head, cells)) for cells in body if len(cells) == len(head)]
    return [row for row in rows if row.get("ID", "").strip().isdigit()]  # not the units row, nor ncu's messages


def number(row: dict[str, str], name: str) -> float | None:
    text = row.get(name, "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return None


def cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def summary_lines(rows: list[dict[str, str]], terms: float) -> list[str]:
    seen: Counter[str] = Counter()
    lines = []
    for row in rows:
        name = row.get("Kernel Name", "?").split("(")[0]
        inputs = ("plain", "exact")[min(seen[name], 1)] + ("" if seen[name] < 2 else f" ({seen[name] + 1})")
        seen[name] += 1
        ns, clock, inst = number(row, "gpu__time_duration.sum"), number(row, "sm__cycles_elapsed.avg.per_second"), number(row, "smsp__inst_executed.sum")
        wavefronts, loads = number(row, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), number(row, "smsp__inst_executed_op_shared_ld.sum")
        pipes = [cell(number(row, f"sm__inst_executed_pipe_{p}.avg.pct_of_peak_sustained_active"), ".1f") for p in PIPES]
        stalls = sorted(((number(row, f"smsp__warp_issue_stalled_{s}_per_warp_active.pct"), s) for s in STALLS), key=lambda x: -(x[0] or 0))
        cells = [
            name, inputs, cell(ns and ns / 1e6, ".3f"), cell(clock and clock / 1e6, ".0f"), cell(inst and inst * 32 / terms, ".2f"),
            cell(number(row, "smsp__issue_active.avg.pct_of_peak_sustained_active"), ".1f"), *pipes,
            cell(number(row, "sm__warps_active.avg.pct_of_peak_sustained_active"), ".1f"),
            cell(number(row, "launch__registers_per_thread"), ".0f"), cell(wavefronts and loads and wavefronts / loads, ".2f"),
            ", ".join(f"{s} {v:.3g}" for v, s in stalls[:3] if v is not None) or "-",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def summarize(folder: Path, shape: int) -> str:
    head = ["kernel", "inputs", "ms", "MHz", "instr/term", "issue %", *(f"{p} %" for p in PIPES), "occupancy %", "regs", "wavefronts/LDS", "top stalls (% of warp cycles)"]  # fmt: skip
    out = [f"Nsight Compute at {shape}^3 (ncu --clock-control none)", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for log in sorted(folder.glob("ncu_*.csv")):
        rows = rows_of(log)
        if rows:
            out += summary_lines(rows, float(shape) ** 3)
        else:
            error = log.with_suffix(".err")
            tail = error.read_text(errors="replace").strip().splitlines()[-2:] if error.is_file() else ["no log"]
            out.append(f"| {log.stem.removeprefix('ncu_')}: no profile | " + " ".join(tail)[:300] + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-cu", type=Path, help="the peer's tropical_gemm.cu (default: $AOTC_PEER_CU)")
    parser.add_argument("--out", type=Path, help="where the logs and ncu_summary.md go")
    parser.add_argument("--shape", type=int, default=2048)
    parser.add_argument("--timeout", type=float, default=25, help="seconds per pass at most")
    parser.add_argument("--build-dir", type=Path, default=Path("/tmp/aotc-side-by-side"))
    parser.add_argument("--class", dest="classes", action="append", choices=CLASSES, help="only these (repeatable)")
    parser.add_argument("--plan", action="store_true", help="print each pass's command, and stop (no GPU)")
    parser.add_argument("--summarize", type=Path, metavar="DIR", help="print the table of DIR's ncu_*.csv, and stop")
    args = parser.parse_args(argv)
    if args.summarize:
        print(summarize(args.summarize, args.shape), end="")
        return 0
    sys.path.insert(0, str(HERE))
    import gemm_peer

    peer_cu = gemm_peer.peer_source(args.peer_cu)
    ncu = find_ncu()
    if ncu is None and not args.plan:
        print("gemm_profile: ncu not found (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute): no profiles")
        return 0
    out = args.out or Path(".")
    metrics = known_metrics(ncu) if ncu and not args.plan else METRICS
    for kind in args.classes or CLASSES:
        log = out / f"ncu_{kind}.csv"
        argv_ = command(ncu or "ncu", metrics, kind, args.shape, peer_cu, args.build_dir, log)
        if args.plan:
            print(" ".join(argv_))
            continue
        out.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(argv_, capture_output=True, text=True, timeout=args.timeout)
            log.with_suffix(".err").write_text(done.stdout[-4000:] + done.stderr[-4000:])
            verdict = "ok" if done.returncode == 0 else f"exit {done.returncode}"
        except subprocess.TimeoutExpired:
            verdict = f"stopped after {args.timeout:.0f} s"
            log.with_suffix(".err").write_text(verdict + "\n")
        print(f"ncu {kind}: {verdict}", flush=True)
    if not args.plan:
        table = summarize(out, args.shape)
        (out / "ncu_summary.md").write_text(table)
        print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
