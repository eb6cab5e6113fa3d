from __future__ import annotations

from aotc.build.resources import parse_resource_report

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
    assert parse_resource_report(REPORT, "missing") == {}
