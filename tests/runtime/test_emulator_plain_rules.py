"""Each plain-tile rule of the counting and and/or kernels, broken on purpose,
must fail the differential check on the emulator; unbroken, they must pass.

The rules and why they are exact are in docs/design.md ("Plain tiles"). Every
mutation below edits one rule in the shipped templates; if one went unnoticed,
the patterned cases of the differential matrix would not be testing that rule.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from aotc import reference
from aotc.build.codegen import render_kernel
from aotc.build.manifest import load_manifest
from aotc.runtime.cache import DiskCache
from aotc.runtime.emulator.backend import EmulatorBackend
from conftest import REPO
from kernel_harness import NUMPY_DTYPES, Case, DeviceArrays, assert_same, operands
from tropical_manifest import tropical_manifest

MANIFEST = tropical_manifest(
    "planted_rules",
    {"counting": "{add: max, mul: add, zero: -inf, one: 0, counting: true}", "andor": "{add: or, mul: and, zero: false, one: true}"},
    ["{semiring: counting, dtype: f32, pass: [forward, argmax], variant: single}", "{semiring: andor, dtype: bool, pass: [forward, argmax], variant: single}"],
)

PLAIN_OK = 'return x {{ "<" if semiring.zero == "-inf" else ">" }} {{ highest if semiring.zero == "-inf" else lowest }};'
# name: (text in common/semiring.cuh.j2, its replacement, the semiring it breaks)
MUTATIONS = {
    # A NaN value folded plainly is skipped (NaN > v is false), not propagated.
    "nan-let-in": (PLAIN_OK, 'return !(x {{ ">=" if semiring.zero == "-inf" else "<=" }} {{ highest if semiring.zero == "-inf" else lowest }});', "counting"),
    # +inf + -inf makes a NaN inside a plain fold.
    "inf-let-in": (PLAIN_OK, "return x == x;", "counting"),
    # Plain folds add the counts of zero-valued terms; finishing must reset them.
    "zero-count-kept": ("    else if (acc.v == AOTC_ZERO)\n        acc.c = (T)0;", "", "counting"),
    # A strictly better term restarts the count from -0, so that -0 + c is c.
    "count-sign-lost": ("acc.c = (T)-0.0;", "acc.c = (T)0;", "counting"),
    # Bytes other than 0/1 folded with & and | without normalizing.
    "bytes-folded-raw": ("E aotc_e_load(E x) { return x != 0; }", "E aotc_e_load(E x) { return x; }", "andor"),
}
CASES = {"counting": Case(45, 37, 61, pattern="pairs"), "andor": Case(45, 37, 61, pattern="bytes")}
DTYPE = {"counting": "f32", "andor": "bool"}


def _run(tmp_path: Path, mutation: str | None, semiring: str, pass_name: str) -> None:
    """Render, compile and launch one kernel (mutated or not); assert it matches the reference."""
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "aotc" / "build" / "templates" / "tropical", templates)
    if mutation:
        old, new, _ = MUTATIONS[mutation]
        header = templates / "common" / "semiring.cuh.j2"
        text = header.read_text()
        assert text.count(old) == 1, f"the mutation {mutation!r} no longer matches the template"
        header.write_text(text.replace(old, new))
    (tmp_path / "manifest.yaml").write_text(MANIFEST)
    manifest = load_manifest(tmp_path / "manifest.yaml")
    kernel = next(k for k in manifest.kernels if dict(k.axes)["semiring"] == semiring and dict(k.axes)["pass"] == pass_name)
    backend = EmulatorBackend(cache=DiskCache(tmp_path / "cache"))
    function = backend.get_function(backend.load_module(render_kernel(manifest, kernel).encode(), name=kernel.name), kernel.symbol)

    case, dtype = CASES[semiring], DTYPE[semiring]
    sr = reference.SEMIRINGS[semiring]
    a, b = operands(case, dtype, sr, seed=11)
    c = np.zeros((case.m, case.n, 2) if sr.counting else (case.m, case.n), NUMPY_DTYPES[dtype])
    kstar = np.zeros((case.m, case.n), np.int32)
    memory = DeviceArrays(backend)
    try:
        values = {"A": memory.upload(a), "B": memory.upload(b), "C": memory.upload(c), "Kstar": memory.upload(kstar)}
        values.update(M=case.m, N=case.n, K=case.k, lda=case.k, ldb=case.n, ldc=case.n, ldk=case.n, block_y0=0, block_z0=0)
        params = struct.pack("@" + "".join(p.pack for p in kernel.params), *(values[p.name] for p in kernel.params))
        tile = dict(kernel.constants)
        grid = (-(-case.n // tile["block_n"]), -(-case.m // tile["block_m"]), 1)
        backend.launch(function, (grid, kernel.launch.block, 0), None, params)
        got_c = memory.download(values["C"], c)
        got_k = memory.download(values["Kstar"], kstar)
    finally:
        memory.free()
    if pass_name == "forward":
        assert_same(got_c, reference.matmul(a, b, sr), sr)
    else:
        want_c, want_k = reference.matmul_argmax(a, b, sr)
        assert_same(got_c, want_c, sr)
        np.testing.assert_array_equal(got_k, want_k)


@pytest.mark.parametrize("pass_name", ["forward", "argmax"])
@pytest.mark.parametrize("semiring", ["counting", "andor"])
def test_the_unmutated_template_passes(tmp_path: Path, semiring: str, pass_name: str) -> None:
    _run(tmp_path, None, semiring, pass_name)


BROKEN = [
    pytest.param(name, pass_name, id=f"{name}-{pass_name}")
    for name in MUTATIONS
    # argmax takes a better term's count as it is: no -0 to keep.
    for pass_name in (("forward",) if name == "count-sign-lost" else ("forward", "argmax"))
]


@pytest.mark.parametrize(("mutation", "pass_name"), BROKEN)
def test_a_mutated_rule_is_caught(tmp_path: Path, mutation: str, pass_name: str) -> None:
    with pytest.raises(AssertionError, match=r"(?i)mismatch|count signs"):
        _run(tmp_path, mutation, MUTATIONS[mutation][2], pass_name)
