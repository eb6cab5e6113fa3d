"""Floating-point contraction is the same on the GPU as on the emulator: none.

nvcc contracts ``a * b + c`` into one fused multiply-add by default
(``--fmad=true``), which rounds once where the emulator's host code
(``-ffp-contract=off``) rounds twice; the max-times backward sums then differ
in the last bits, although docs/design.md promises bit-identical fixed-order
sums. The templates round such products with ``__fmul_rn``/``__dmul_rn``,
which are never fused, so the SASS of every shipped kernel holds no FFMA or
DFMA. Reads the library under test (the installed one, or AOTC_TEST_LIBRARY)
with cuobjdump; needs no GPU.
"""

from __future__ import annotations

import json
import re

from sass_support import sass_tools
from conftest import installed_library

from aotc.runtime.emulator.compile import COMPILE_FLAGS

_FUSED = re.compile(r"\b(?:FFMA|DFMA)\b")


def test_the_emulator_does_not_contract() -> None:
    assert "-ffp-contract=off" in COMPILE_FLAGS


def test_no_shipped_kernel_fuses_a_multiply_into_an_add() -> None:
    library = installed_library()
    tools = sass_tools()
    kernels = json.loads((library / "index.json").read_text())["kernels"]
    floating = {name: entry for name, entry in kernels.items() if entry["axes"]["dtype"] in ("f32", "f64")}
    assert any(entry["axes"]["pass"].startswith("backward") for entry in floating.values())
    fused = []
    for name, entry in sorted(floating.items()):
        arch = entry["sass"][0]
        count = len(_FUSED.findall(tools.sass(library / entry["fatbin"]["file"], arch)))
        if count:
            fused.append(f"{name} (sm_{arch}): {count}")
    assert not fused, "fused multiply-adds, which the emulator would round differently: " + ", ".join(fused)
