"""A second kernel library beside the default one, for the tropical API's tests:
import the ``other`` fixture into a test module to use it."""

from __future__ import annotations

from typing import Any

import pytest

from aotc import reference
from tropical_manifest import tropical_manifest

# Another project's library: semirings the default library lacks, and one it has.
OTHER_MANIFEST = tropical_manifest(
    "other",
    {"maxmin": "{add: max, mul: min, zero: -inf, one: +inf}", "maxplus": "{add: max, mul: add, zero: -inf, one: 0}", "minmul": "{add: min, mul: mul, zero: +inf, one: 1}"},
    ["{semiring: [maxmin, maxplus], dtype: f32, pass: forward, variant: single}", "{semiring: minmul, dtype: f32, pass: [argmax, backward_a, backward_b], variant: single}"],
    head="archs: {sass: [80], ptx: [80]}",
    backward="[minmul]",
)
MINMUL = reference.semiring_from_ops("min", "mul", "+inf", "1", name="minmul")


# The one `other` library of the session. Each test module that imports the
# fixture has a fixture of its own, whatever its scope; a process registers one
# library of a name (its torch.ops namespace), so they all return this one.
_LOADED: list[Any] = []


@pytest.fixture(scope="session")
def other(emulated_tropical: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A second library, loaded from its folder the way another project's is."""
    import aotc
    from aotc.runtime.emulator.backend import EmulatorBackend
    from runtime.runtime_support import make_library

    if not _LOADED:
        folder = make_library(tmp_path_factory.mktemp("other"), manifest_text=OTHER_MANIFEST)  # real sources
        _LOADED.append(aotc.load(folder, backend=EmulatorBackend(cache=emulated_tropical.backend.cache)))
    return _LOADED[0]
