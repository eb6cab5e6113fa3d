"""aotc's tropical GEMM kernels beside the peer's, timed on one GPU in one run.

    python benchmarks/gemm_side_by_side.py --peer-cu PATH             # 4096^3 and 4001x4097x4093, plain and exact
    python benchmarks/gemm_side_by_side.py --peer-cu PATH --plan      # what would run; no GPU
    python benchmarks/gemm_side_by_side.py --peer-cu PATH --compile-only --arch 90   # no GPU
    python benchmarks/gemm_side_by_side.py --peer-cu PATH --once --kernel maxplus_f32_forward --shape 2048  # for ncu

The peer (``gemm_peer.py``) is compiled from the source a run names; aotc's
kernels are rendered from this checkout's manifest, so the kernels timed are
this commit's. Both sides are compiled by the same ``nvcc -cubin`` for the
GPU's arch (its defaults: -O3, no fast math: aotc's fatbin flags, and the
SASS the peer's own NVRTC call gets), and every parameter block is checked
against its cubin's parameter records (offset and size of each) before
anything launches. Both launch through aotc's cuda-python backend.

Inputs are as ``gemm_gpu.py``'s: integers in [-1000, 1000) ("plain": every
aotc tile takes its plain loop) and the same with one value per 8 k rows and
32 columns that no plain tile takes (NaN, 2^28 for i32, 2^60 for i64:
"exact"; 32, not 64, since counting f64's blocks are 32 columns wide now).
Before timing, every kernel runs on a square and a ragged small shape against
the NumPy reference (``aotc.reference``): aotc on plain and exact inputs, the
peer on plain ones (non-negative for max-times), since it neither propagates
NaN nor saturates. A wrong result is printed as such, and still timed.

Each time is the median of launches each waited for (2 warm-ups; at most
``--budget`` seconds of launches per row after 5). The issue limit is
``gemm_gpu.py``'s: SMs x clock x 128 / 2 terms/s (one add and one max per
term). The approach (pairs, inputs, checks, the limit) follows the reference
harness the issue came with (``peer_side_by_side.py``); this is the project's
own version of it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import namedtuple
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout's aotc, not an installed one
sys.path.insert(0, str(HERE))

import gemm_peer  # noqa: E402
from gemm_side_by_side_build import Unit, build, check_params, render  # noqa: E402

from aotc import reference  # noqa: E402

NUMPY = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}
NOT_PLAIN = {"f32": np.nan, "f64": np.nan, "i32": 1 << 28, "i64": 1 << 60}
DEFAULT_SHAPES = ("4096", "4001x4097x4093")
EXTRA = ("counting",)  # aotc kernels with no peer counterpart, timed alone
Shape = namedtuple("Shape", "batch m n k")
Row = namedtuple("Row", "unit shape tiles")


def parse_shape(text: str) -> Shape:
    """``"4096"`` is 4096^3; ``"MxNxK"``; ``"B*N"`` a batch of B N^3 products."""
    try:
        if "*" in text:
            batch, n = map(int, text.split("*"))
            return Shape(batch, n, n, n)
        sizes = [int(part) for part in text.split("x")]
    except ValueError:
        raise SystemExit(f"gemm_side_by_side: --shape {text!r}: expected N, MxNxK or B*N") from None
    if len(sizes) not in (1, 3) or min(sizes) < 1:
        raise SystemExit(f"gemm_side_by_side: --shape {text!r}: expected N, MxNxK or B*N")
    return Shape(0, *(sizes * 3 if len(sizes) == 1 else sizes))


def label(shape: Shape) -> str:
    sizes = f"{shape.m}^3" if shape.m == shape.n == shape.k else f"{shape.m}x{shape.n}x{shape.k}"
    return f"{shape.batch}*{sizes}" if shape.batch else sizes


def plan(units: list[Unit], shapes: list[Shape], tiles: tuple[str, ...]) -> list[Row]:
    """Every (kernel, shape, inputs) to time: single kernels on single shapes,
    batched ones on batched shapes."""
    rows = [Row(unit, shape, tile) for shape in shapes for unit in units if unit.batched == bool(shape.batch) for tile in tiles]
    # Rows that share inputs run together (each set is made and uploaded once).
    order = {unit.name: n for n, unit in enumerate(units)}
    return sorted(rows, key=lambda r: (shapes.index(r.shape), r.unit.counting, r.unit.dtype, tiles.index(r.tiles), order[r.unit.name]))


# --------------------------------------------------------------------------- inputs and checks


def inputs(rng: np.random.Generator, unit: Unit, shape: Shape, tiles: str, *, nonneg: bool = False) -> tuple[np.ndarray, np.ndarray]:
    lead = (shape.batch,) if shape.batch else ()
    lanes = (2,) if unit.counting else ()
    low = 0 if nonneg else -1000
    a = rng.integers(low, 1000, size=(*lead, shape.m, shape.k, *lanes)).astype(NUMPY[unit.dtype])
    b = rng.integers(low, 1000, size=(*lead, shape.k, shape.n, *lanes)).astype(NUMPY[unit.dtype])
    if unit.counting:
        a[..., 1], b[..., 1] = 1, 1
    if tiles == "exact":  # k tiles are at least 8 deep, column blocks at least 32 wide: every tile
        (b[..., 0] if unit.counting else b)[..., ::8, ::32] = NOT_PLAIN[unit.dtype]
    return a, b


class Buffers:
    """Device arrays of one (kernel, shape, inputs): A and B, and each side's C and k*."""

    def __init__(self, backend, unit: Unit, shape: Shape, a: np.ndarray, b: np.ndarray) -> None:
        self.backend, self.unit, self.shape = backend, unit, shape
        lead = (shape.batch,) if shape.batch else ()
        self.c_like = np.empty(lead + (shape.m, shape.n) + ((2,) if unit.counting else ()), NUMPY[unit.dtype])
        self.k_like = np.empty((*lead, shape.m, shape.n), np.int32)
        self.pointers = {"A": self._upload(a), "B": self._upload(b)}
        for side in ("aotc", "peer"):
            self.pointers[f"{side}:C"] = backend.alloc(self.c_like.nbytes)
            self.pointers[f"{side}:Kstar"] = backend.alloc(self.k_like.nbytes)

    def _upload(self, array: np.ndarray) -> int:
        pointer = self.backend.alloc(array.nbytes)
        self.backend.copy_to_device(pointer, np.ascontiguousarray(array))
        return pointer

    def result(self, side: str) -> tuple[np.ndarray, np.ndarray]:
        c, kstar = np.empty_like(self.c_like), np.empty_like(self.k_like)
        self.backend.copy_to_host(c, self.pointers[f"{side}:C"])
        self.backend.copy_to_host(kstar, self.pointers[f"{side}:Kstar"])
        return c, kstar

    def side(self, side: str) -> dict[str, int]:
        return {"A": self.pointers["A"], "B": self.pointers["B"], "C": self.pointers[f"{side}:C"], "Kstar": self.pointers[f"{side}:Kstar"]}

    def free(self) -> None:
        for pointer in self.pointers.values():
            self.backend.free(pointer)


def aotc_values(unit: Unit, shape: Shape, pointers: dict[str, int]) -> tuple[int, ...]:
    """aotc's arguments, in its declared order, for row-major operands with no padding."""
    m, n, k = shape.m, shape.n, shape.k
    values = {**pointers, "M": m, "N": n, "K": k, "lda": k, "ldb": n, "ldc": n, "ldk": n, "batch": shape.batch, "block_y0": 0, "block_z0": 0}
    values.update(batch_stride_A=m * k, batch_stride_B=k * n, batch_stride_C=m * n, batch_stride_Kstar=m * n)
    return tuple(values[name] for name in unit.params)


def launchers(backend, functions: dict[str, object], unit: Unit, buffers: Buffers) -> dict[str, object]:
    """One call per side that launches its kernel on ``buffers``."""
    shape = buffers.shape
    grid = unit.grid_for({"M": shape.m, "N": shape.n, "K": shape.k, "batch": shape.batch})
    aotc_params = unit.layout.pack(*aotc_values(unit, shape, buffers.side("aotc")))
    calls = {"aotc": lambda: backend.launch(functions["aotc:" + unit.name], (grid, unit.block, 0), None, aotc_params)}
    if unit.peer:
        peer = gemm_peer.param_values(buffers.side("peer"), shape.m, shape.n, shape.k, shape.batch, unit.argmax)
        peer_params = unit.peer_layout.pack(*peer)
        peer_shape = gemm_peer.launch_shape(unit.dtype, shape.m, shape.n, shape.batch)
        calls["peer"] = lambda: backend.launch(functions["peer:" + unit.peer], peer_shape, None, peer_params)
    return calls


def check(backend, functions: dict[str, object], unit: Unit, rng: np.random.Generator) -> str:
    """'ok', or what differs from the reference, on a square and a ragged small shape."""
    shapes = [Shape(2, 96, 160, 72)] if unit.batched else [Shape(0, 128, 128, 128), Shape(0, 96, 160, 72)]
    semiring = reference.SEMIRINGS[unit.semiring]
    problems = []
    for shape in shapes:
        for tiles, sides in (("plain", ("aotc", "peer")), ("exact", ("aotc",))):
            a, b = inputs(rng, unit, shape, tiles, nonneg=unit.semiring == "maxmul" and tiles == "plain")
            want_c, want_k = reference.matmul_argmax(a, b, semiring)
            buffers = Buffers(backend, unit, shape, a, b)
            try:
                calls = launchers(backend, functions, unit, buffers)
                for side in (s for s in sides if s in calls):
                    calls[side]()
                    backend.synchronize()
                    c, kstar = buffers.result(side)
                    if not np.array_equal(c, want_c, equal_nan=True):
                        problems.append(f"{side} C differs ({label(shape)}, {tiles})")
                    elif unit.argmax and not np.array_equal(kstar, want_k):
                        problems.append(f"{side} k* differs ({label(shape)}, {tiles})")
            finally:
                buffers.free()
    return "; ".join(problems) or "ok"


def _with_inputs(backend, rows: list[Row], rng: np.random.Generator):
    """(row, its device buffers), the inputs made and uploaded once for each
    run of rows that share them (dtype, pairs or not, shape, inputs)."""
    key, buffers = None, None
    try:
        for row in rows:
            wanted = (row.unit.dtype, row.unit.counting, row.shape, row.tiles)
            if wanted != key:
                if buffers:
                    buffers.free()
                key, buffers = wanted, Buffers(backend, row.unit, row.shape, *inputs(rng, row.unit, row.shape, row.tiles))
            yield row, buffers
    finally:
        if buffers:
            buffers.free()


def time_ms(backend, call, repeats: int, budget_s: float) -> float:
    for _ in range(2):
        call()
    backend.synchronize()
    times: list[float] = []
    while len(times) < repeats and (len(times) < 5 or sum(times) < budget_s * 1e3):
        start = time.perf_counter()
        call()
        backend.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


# --------------------------------------------------------------------------- the run


def run(args: argparse.Namespace, backend, units: list[Unit], rows: list[Row], built: dict[str, Path]) -> int:
    device = backend.device()
    limit = device.sm_count * device.clock_khz * 1e3 * 128 / 2
    functions = {}
    for unit_name, image in built.items():
        module = backend.load_module(image.read_bytes(), name=unit_name)
        symbols = [unit_name.split(":", 1)[1]] if unit_name.startswith("aotc:") else sorted({u.peer for u in units if u.peer})
        for symbol in symbols:
            functions[f"{unit_name.split(':')[0]}:{symbol}"] = backend.get_function(module, symbol)
    print(device.describe())
    print(f"issue limit for one add + one max per term: {limit / 1e12:.2f} Tterm/s")
    rng = np.random.default_rng(0)
    if args.once:
        for row, buffers in _with_inputs(backend, rows, rng):
            for call in launchers(backend, functions, row.unit, buffers).values():
                call()
            backend.synchronize()
            print(f"launched {row.unit.name} {label(row.shape)} {row.tiles}")
        return 0
    checks = {} if args.no_check else {unit.name: check(backend, functions, unit, rng) for unit in units}
    bad = {name: text for name, text in checks.items() if text != "ok"}
    print(f"checked {len(checks)} kernels (and their peers) against the reference: {len(checks) - len(bad)} ok" + "".join(f"\n  {n}: {t}" for n, t in bad.items()))
    head = f"| kernel | peer | shape | inputs | aotc ms | peer ms | aotc % of limit | peer % of limit | peer / aotc |\n{'| --- ' * 9}|"
    print(head)
    table, records, peer_times = [head], [], {}
    for row, buffers in _with_inputs(backend, rows, rng):
        unit, shape = row.unit, row.shape
        calls = launchers(backend, functions, unit, buffers)
        aotc_ms = time_ms(backend, calls["aotc"], args.repeats, args.budget)
        key = (unit.peer, shape, row.tiles)
        if "peer" in calls and key not in peer_times:
            peer_times[key] = time_ms(backend, calls["peer"], args.repeats, args.budget)
        peer_ms = peer_times.get(key) if unit.peer else None
        terms = max(shape.batch, 1) * shape.m * shape.n * shape.k
        # A share of the limit where the device reports a clock (the emulator's is 0).
        aotc_share = terms / (aotc_ms / 1e3) / limit if limit else None
        peer_share = terms / (peer_ms / 1e3) / limit if limit and peer_ms else None
        percent = lambda share: f"{share:.1%}" if share is not None else "-"  # noqa: E731
        cells = [f"{aotc_ms:.3f}", f"{peer_ms:.3f}" if peer_ms else "-", percent(aotc_share), percent(peer_share), f"{peer_ms / aotc_ms:.2f}" if peer_ms else "-"]
        line = f"| {unit.name.removeprefix('gemm_')} | {unit.peer or '-'} | {label(shape)} | {row.tiles} | " + " | ".join(cells) + " |"
        print(line, flush=True)
        table.append(line)
        records.append({"kernel": unit.name, "peer": unit.peer, "shape": shape._asdict(), "tiles": row.tiles, "aotc_ms": aotc_ms, "peer_ms": peer_ms, "aotc_share": aotc_share, "peer_share": peer_share, "check": checks.get(unit.name)})  # fmt: skip
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "side_by_side.md").write_text(f"{device.describe()}\n\n" + "\n".join(table) + "\n")
        summary = {"device": device.describe(), "limit_terms_per_s": limit, "checks": checks, "rows": records}
        (args.out / "side_by_side.json").write_text(json.dumps(summary, indent=1))
        print(f"wrote {args.out / 'side_by_side.md'} and side_by_side.json")
    return 1 if bad else 0


def main(argv: list[str] | None = None, *, backend=None) -> int:
    """``backend``: an aotc backend to launch on (tests), else ``--backend``'s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-cu", type=Path, help=f"the peer's tropical_gemm.cu (default: ${gemm_peer.PEER_ENV})")
    parser.add_argument("--shape", action="append", help="N (N^3), MxNxK, or B*N (a batch of N^3); repeatable")
    parser.add_argument("--kernel", default="", help="only kernels whose name contains this, e.g. maxplus_f32")
    parser.add_argument("--tiles", choices=("plain", "exact", "both"), default="both")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timed launches per row at most (after 5)")
    parser.add_argument("--arch", help="the sm_ number to compile for (default: the GPU's)")
    parser.add_argument("--build-dir", type=Path, default=Path("/tmp/aotc-side-by-side"))
    parser.add_argument("--backend", default="cuda-python", help="aotc backend to launch on (tests: emulator)")
    parser.add_argument("--out", type=Path, help="write side_by_side.md and .json here")
    parser.add_argument("--plan", action="store_true", help="list what would run, and stop (no GPU)")
    parser.add_argument("--compile-only", action="store_true", help="compile and check parameters, and stop (no GPU with --arch)")
    parser.add_argument("--once", action="store_true", help="launch each row's kernels once, untimed (for ncu)")
    parser.add_argument("--no-check", action="store_true", help="skip the small-shape checks against the reference")
    args = parser.parse_args(argv)

    peer_cu = gemm_peer.peer_source(args.peer_cu)
    shapes = [parse_shape(text) for text in args.shape or DEFAULT_SHAPES]
    units = render(args.kernel, args.build_dir / "src", peer_cu, extra=EXTRA)
    rows = plan(units, shapes, ("plain", "exact") if args.tiles == "both" else (args.tiles,))
    if not rows:
        raise SystemExit(f"gemm_side_by_side: no kernel matches --kernel {args.kernel!r} on these shapes")
    if args.plan:
        for row in rows:
            print(f"{row.unit.name:34} {row.unit.peer or '-':40} {label(row.shape):>16} {row.tiles}")
        print(f"{len(rows)} rows")
        return 0
    if backend is None and not args.compile_only:
        from aotc.runtime.backends import get_backend

        backend = get_backend(args.backend)
    arch = args.arch
    if arch is None and backend is not None:
        major, minor = backend.device().capability
        arch = f"{major}{minor}"
    if arch is None:
        raise SystemExit("gemm_side_by_side: --compile-only needs --arch (no GPU is asked)")
    started = time.perf_counter()
    source = backend is not None and backend.image_format == "source"  # the emulator runs the .cu itself
    built = build(units, peer_cu, arch, args.build_dir, source=source)
    print(f"built {len(built)} images for sm_{arch} in {time.perf_counter() - started:.1f} s ({args.build_dir})")
    if not source:
        problems = check_params(units, built, arch)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        print(f"parameters of {len(units)} aotc kernels and {len({u.peer for u in units if u.peer})} peer kernels match their cubins")
    if args.compile_only:
        return 0
    return run(args, backend, units, rows, built)


if __name__ == "__main__":
    sys.exit(main())
