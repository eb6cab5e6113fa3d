"""Architecture names, and which lane builds which."""

from __future__ import annotations

import pytest

from aotc.archs import MIN_ARCH_CUDA12, parse_arch, parse_arch_list

from aotc.errors import ArchError


def test_volta_needs_the_cuda12_lane() -> None:
    with pytest.raises(ArchError, match=r"^architecture 70 is below sm_75, the oldest CUDA 13 supports \(build it in the CUDA 12 lane: AOTC_CUDA=12\)$"):
        parse_arch(70)
    assert parse_arch(70, MIN_ARCH_CUDA12) == "70"
    assert parse_arch_list("70;75,120", MIN_ARCH_CUDA12) == ("70", "75", "120")


def test_below_every_lane_is_refused_without_lane_advice() -> None:
    with pytest.raises(ArchError, match=r"^architecture 61 is below sm_70, the oldest CUDA 12 supports$"):
        parse_arch(61, MIN_ARCH_CUDA12)
    with pytest.raises(ArchError, match=r"below sm_75, the oldest CUDA 13 supports$"):
        parse_arch(61)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (8.6, "looks like a compute capability; write 86"),
        ("8.6", "looks like a compute capability; write 86"),
        ("sm_80", "is not of the form 80, 90a or 100f"),
        ("86a", "arch-specific 'a' builds exist from sm_90 on"),
        ("90f", "family 'f' builds exist from sm_100 on"),
        (True, "must be a number like 80"),
    ],
)
def test_malformed_architectures(value: object, message: str) -> None:
    with pytest.raises(ArchError, match=message):
        parse_arch(value)


def test_lists_are_sorted_and_duplicates_refused() -> None:
    assert parse_arch_list("120 80;90a") == ("80", "90a", "120")
    with pytest.raises(ArchError, match="repeats 80"):
        parse_arch_list("80,80")
    with pytest.raises(ArchError, match="empty"):
        parse_arch_list(" ; ")
