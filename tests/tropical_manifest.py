"""Manifests of the tests' own small tropical libraries: the shipped tropical
family's declaration (kernels/manifest.yaml: its signature and launch, on
the shipped templates) over other semirings, points and tiles. Not a
conftest.py, so it is imported by name, like ``index_support``."""

from __future__ import annotations

from pathlib import Path

__all__ = ["SIGNATURE_AND_LAUNCH", "tropical_manifest"]

_SHIPPED = (Path(__file__).resolve().parents[1] / "kernels" / "manifest.yaml").read_text()
# The family's signature: and launch: sections, as shipped (its backward: names the shipped semirings).
SIGNATURE_AND_LAUNCH = _SHIPPED[_SHIPPED.index("    signature:\n") : _SHIPPED.index("\n    backward:\n")].rstrip("\n")
SIGNATURE_AND_LAUNCH = "\n".join(line for line in SIGNATURE_AND_LAUNCH.splitlines() if not line.startswith("    #")) + "\n"

SMALL_TILE = "{block_m: 32, block_n: 32, block_k: 8, thread_m: 4, thread_n: 4}"


def tropical_manifest(library: str, semirings: dict[str, str], matrix: list[str], *, tile: str = SMALL_TILE, head: str = "", backward: str = "", splits: bool = True) -> str:
    """A manifest of one family ``gemm`` over ``semirings`` (name -> its table
    entry), whose points are the ``matrix`` blocks (each names every axis it
    restricts: an axis left out is all its values) at one ``tile``; ``head``
    adds top-level lines (``archs:``, ``templates:``); ``backward`` names the
    semirings (a YAML list) whose f32 argmax kernels take gradients through
    backward_a and backward_b, and whose forward routes through argmax, as
    the shipped family's do. ``splits=False`` leaves out the split offsets
    (``block_y0``, ``block_z0``): a kernel then takes exactly its arrays and
    sizes, as tests that count a launcher's parameters want."""
    counting = [name for name, spec in semirings.items() if "counting: true" in spec]
    lines = [
        f"library: {library}",
        *([head.rstrip("\n")] if head else []),
        "semirings:",
        *(f"  {name}: {spec}" for name, spec in semirings.items()),
        "families:",
        "  gemm:",
        "    template: gemm.cu.j2",
        "    axes:",
        f"      semiring: [{', '.join(semirings)}]",
        "      dtype: [f32, f64, i32, i64, bool]",
        "      pass: [forward, argmax, backward_a, backward_b]",
        "      variant: [single, batched, packed]",
        '    name: "gemm_{semiring}_{dtype}_{pass}{suffix}"',
        "    matrix:",
        *(f"      - {block}" for block in matrix),
        "    constants:",
        f'      - {{{tile.strip()[1:-1]}, stages: 2, suffix: "", lanes: 1}}',
        *([f"      - {{when: {{semiring: [{', '.join(counting)}]}}, lanes: 2}}"] if counting else []),
        "      - {when: {variant: batched}, suffix: _batched}",
        "      - {when: {variant: packed}, suffix: _packed}",
    ]
    gradients = ""
    if backward:
        when = f"semiring: {backward}, dtype: f32"
        gradients = (
            "    backward:\n"
            f"      - {{when: {{pass: argmax, {when}}}, axes: {{pass: backward_a}}, saves: [Kstar, B]}}\n"
            f"      - {{when: {{pass: argmax, {when}}}, axes: {{pass: backward_b}}, saves: [Kstar, A]}}\n"
            f"      - {{when: {{pass: forward, {when}}}, through: {{pass: argmax}}}}\n"
        )
    signature = SIGNATURE_AND_LAUNCH if splits else "".join(line for line in SIGNATURE_AND_LAUNCH.splitlines(True) if "split:" not in line)
    return "\n".join(lines) + "\n" + signature + gradients
