"""What ``gemm_side_by_side.py`` runs, and its images: aotc's kernels rendered
from this checkout, both sides compiled by one nvcc, and each parameter block
held to its cubin's records. None of it needs a GPU."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gemm_peer

from aotc.build import sass
from aotc.build.codegen import render_kernel
from aotc.build.manifest import load_manifest
from aotc.runtime.backends.params import ParamLayout

__all__ = ["Unit", "build", "check_params", "render"]

REPO = Path(__file__).resolve().parents[1]


class Unit:
    """One aotc product kernel, as the run launches it, and its peer (or None)."""

    __slots__ = ("argmax", "batched", "block", "counting", "dtype", "grid", "layout", "name", "params", "peer", "peer_layout", "semiring", "source")

    def __init__(self, kernel, source: Path) -> None:
        axes = dict(kernel.axes)
        self.name, self.source = kernel.name, source
        self.semiring, self.dtype = axes["semiring"], axes["dtype"]
        self.argmax, self.batched = axes["pass"] == "argmax", axes["variant"] == "batched"
        self.counting = self.semiring == "counting"
        self.params = tuple(p.name for p in kernel.params)
        self.layout = ParamLayout("@" + "".join(p.pack for p in kernel.params))
        self.block, self.grid = kernel.launch.block, kernel.launch.grid
        self.peer = gemm_peer.peer_kernel(self.semiring, self.dtype, self.argmax, self.batched)
        self.peer_layout = ParamLayout(gemm_peer.param_format(self.argmax, self.batched))

    def grid_for(self, extents: dict[str, int]) -> tuple[int, int, int]:
        """The launch grid over ``extents`` (M, N, batch), as the index's launch rule gives it."""
        dims = [-(-(int(extent) if extent.isdigit() else extents[extent]) // tile) for extent, tile in self.grid]
        return tuple(max(dim, 1) for dim in dims)  # type: ignore[return-value]


def render(kernel_filter: str, out: Path, peer_cu: Path, *, extra: tuple[str, ...] = ()) -> list[Unit]:
    """The product kernels with a peer counterpart (and those of the ``extra``
    semirings, timed alone) whose names contain ``kernel_filter``, rendered into ``out``."""
    manifest = load_manifest(REPO / "kernels" / "manifest.yaml")
    out.mkdir(parents=True, exist_ok=True)
    units = []
    for kernel in manifest.kernels:
        axes = dict(kernel.axes)
        if axes.get("pass") not in ("forward", "argmax") or axes.get("variant") not in ("single", "batched"):
            continue
        if kernel_filter not in kernel.name:
            continue
        source = out / f"{kernel.name}.cu"
        unit = Unit(kernel, source)
        if unit.peer is None and not (unit.semiring in extra and not unit.batched):
            continue
        source.write_text(render_kernel(manifest, kernel))
        units.append(unit)
    return units


def _nvcc() -> str:
    found = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if Path(p).exists()), None)
    if not found:
        raise SystemExit("gemm_side_by_side: nvcc not found on PATH")
    return found


def build(units: list[Unit], peer_cu: Path, arch: str, build_dir: Path, *, source: bool = False) -> dict[str, Path]:
    """{"aotc:<kernel>": image, "peer": image}: cubins for sm_``arch`` by
    ``nvcc -cubin`` (kept by content, so a rerun compiles nothing), or with
    ``source`` the .cu files themselves (the emulator's images)."""
    sources = {f"aotc:{unit.name}": unit.source for unit in units}
    if any(unit.peer for unit in units):
        sources["peer"] = peer_cu
    if source:
        return sources
    nvcc = _nvcc()
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    build_dir.mkdir(parents=True, exist_ok=True)

    def one(item: tuple[str, Path]) -> tuple[str, Path]:
        name, path = item
        key = hashlib.sha256(path.read_bytes() + arch.encode() + version.encode()).hexdigest()[:16]
        cubin = build_dir / f"{name.replace(':', '-')}.sm_{arch}.{key}.cubin"
        if not cubin.exists():
            command = [nvcc, "-cubin", f"-arch=sm_{arch}", "--resource-usage", "-o", f"{cubin}.part", str(path)]
            # Without LD_PRELOAD: nvcc, a host program, crashes under a preloaded
            # AddressSanitizer (the emulator's memory check preloads it).
            env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"gemm_side_by_side: {' '.join(command)} failed:\n{done.stderr[-3000:]}")
            (build_dir / f"{cubin.name}.ptxas.txt").write_text(done.stdout + done.stderr)
            os.replace(f"{cubin}.part", cubin)
        return name, cubin

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return dict(pool.map(one, sources.items()))


def _sizes(layout: ParamLayout) -> list[tuple[int, int]]:
    return [(offset, struct.calcsize("@" + code)) for offset, code in zip(layout.offsets, layout.codes)]


def check_params(units: list[Unit], built: dict[str, Path], arch: str) -> list[str]:
    """One line per kernel whose parameter block (offset and size of each
    parameter, as this run packs it) differs from its cubin's records."""
    tools = sass.find_tools()
    if isinstance(tools, str):
        raise SystemExit(f"gemm_side_by_side: {tools}")
    expected = [(f"aotc:{u.name}", u.name, _sizes(u.layout)) for u in units]
    expected += sorted({("peer", u.peer, tuple(_sizes(u.peer_layout))) for u in units if u.peer})  # type: ignore[misc]
    records = {name: tools.params(image) for name, image in built.items()}
    problems = []
    for image, kernel, want in expected:
        got = records[image].get(kernel)
        if got is None:
            problems.append(f"gemm_side_by_side: {kernel} is not in {built[image].name}")
        elif list(got) != list(want):
            problems.append(f"gemm_side_by_side: {kernel}: its cubin takes (offset, size) {got}, this run packs {list(want)}")
    return problems
