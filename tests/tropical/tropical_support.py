"""A second kernel library beside the default one, for the tropical API's tests:
import the ``other`` fixture into a test module to use it."""

from __future__ import annotations

from typing import Any

import pytest

from aotc import reference

OTHER_MANIFEST = """\
# Another project's library: semirings the default library lacks, and one it has.
library: other
archs: {sass: [80], ptx: [80]}
semirings:
  maxmin:  {add: max, mul: min, zero: -inf, one: +inf}
  maxplus: {add: max, mul: add, zero: -inf, one: 0}
  minmul:  {add: min, mul: mul, zero: +inf, one: 1}
dtypes: [f32]
families:
  gemm:
    template: gemm.cu.j2
    matrix:
      - {semiring: [maxmin, maxplus], dtype: [f32], pass: [forward], variant: [single]}
      - {semiring: [minmul], dtype: [f32], pass: [argmax, backward_a, backward_b], variant: [single]}
    tiles:
      default: {block_m: 32, block_n: 32, block_k: 8, thread_m: 4, thread_n: 4}
"""
MINMUL = reference.semiring_from_ops("min", "mul", "+inf", "1", name="minmul")


@pytest.fixture(scope="module")
def other(emulated_tropical: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A second library, loaded from its folder the way another project's is."""
    import aotc
    from aotc.runtime.emulator.backend import EmulatorBackend
    from runtime.runtime_support import make_library

    folder = make_library(tmp_path_factory.mktemp("other"), manifest_text=OTHER_MANIFEST)  # real sources
    return aotc.load(folder, backend=EmulatorBackend(cache=emulated_tropical.backend.cache))
