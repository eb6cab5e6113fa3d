from __future__ import annotations

import pytest

from aotc.build.resources import parse_resource_report
from aotc.errors import BuildError

REPORT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k_argmax' for 'sm_90'
ptxas info    : Function properties for k_argmax
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 202 registers, used 1 barriers, 16384 bytes smem
ptxas info    : Compile time = 103.367 ms
ptxas info    : Compiling entry function 'other' for 'sm_90'
    8 bytes stack frame, 8 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers
ptxas info    : Compiling entry function 'k_argmax' for 'sm_75'
ptxas info    : Function properties for k_argmax
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 8192 bytes smem, 416 bytes cmem[0]
"""


def test_report_is_split_by_architecture_and_symbol() -> None:
    assert parse_resource_report(REPORT, "k_argmax") == {
        "90": {"stack_bytes": 0, "spill_stores": 0, "spill_loads": 0, "registers": 202, "shared_bytes": 16384},
        "75": {"stack_bytes": 8, "spill_stores": 4, "spill_loads": 12, "registers": 128, "shared_bytes": 8192},
    }
    assert parse_resource_report(REPORT, "other")["90"]["spill_stores"] == 8
    assert parse_resource_report("", "missing") == {}  # no report (none asked for): nothing to hold it to


def test_a_kernel_compiled_under_a_mangled_name_is_refused() -> None:
    """A template that leaves out ``extern "C"`` builds, and runs on the emulator
    (which compiles it as C++), but its entry function is C++'s mangled name,
    which no GPU finds by the kernel's: the build refuses it, naming the fix."""
    mangled = REPORT.replace("k_argmax", "_Z8k_argmaxPKfPfi")
    with pytest.raises(BuildError) as info:
        parse_resource_report(mangled, "k_argmax")
    assert str(info.value) == (
        "kernel k_argmax: its compiled entry function is '_Z8k_argmaxPKfPfi', not 'k_argmax': "
        'declare it extern "C" (a C++ name is mangled, and a GPU finds a kernel by its name)'
    )
