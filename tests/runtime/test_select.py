from __future__ import annotations

import pytest

from aotc.errors import AotcError, IndexFormatError, NoKernelImageError
from aotc.runtime.select import (
    ImageChoice,
    ImageKind,
    JitPolicy,
    KernelImages,
    Platform,
    explain_selection,
    jit_policy_from_env,
    select_image,
)

__all__: list[str] = []

EXACT = ImageKind.SASS_EXACT
COMPATIBLE = ImageKind.SASS_COMPATIBLE
NVRTC = ImageKind.NVRTC_JIT
DRIVER = ImageKind.DRIVER_JIT

# The default matrix of a wheel built with CUDA 13.0.
MATRIX = ("75", "80", "86", "90", "90a", "100f", "120")
NVRTC_13 = frozenset({(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (12, 0), (12, 1)})
NVRTC_NEXT = NVRTC_13 | {(13, 0)}

# id, sass, ptx, ptx toolkit, capability, driver, nvrtc archs, policy, kind, arch
CHOICES = [
    ("exact-86", MATRIX, ("120",), (13, 0), (8, 6), (13, 0), None, "auto", EXACT, "86"),
    ("exact-75", MATRIX, ("120",), (13, 0), (7, 5), (13, 0), NVRTC_13, "auto", EXACT, "75"),
    ("compatible-86-from-80", ("75", "80"), (), (13, 0), (8, 6), (13, 0), None, "auto", COMPATIBLE, "80"),
    ("compatible-89-highest-86", ("80", "86"), (), (13, 0), (8, 9), (13, 0), None, "auto", COMPATIBLE, "86"),
    ("90a-exact-on-90", ("80", "90a"), (), (13, 0), (9, 0), (13, 0), None, "auto", EXACT, "90a"),
    ("90a-beats-90-on-90", ("90", "90a"), (), (13, 0), (9, 0), (13, 0), None, "auto", EXACT, "90a"),
    ("90a-not-compatible-on-91", ("90", "90a"), (), (13, 0), (9, 1), (13, 0), None, "auto", COMPATIBLE, "90"),
    ("100f-exact-on-100", MATRIX, ("120",), (13, 0), (10, 0), (13, 0), None, "auto", EXACT, "100f"),
    ("100f-family-on-103", MATRIX, ("120",), (13, 0), (10, 3), (13, 0), None, "auto", COMPATIBLE, "100f"),
    ("120-compatible-on-121", MATRIX, ("120",), (13, 0), (12, 1), (13, 0), NVRTC_13, "auto", COMPATIBLE, "120"),
    ("120f-family-on-121", ("100f", "120f"), (), (13, 0), (12, 1), (13, 0), None, "auto", COMPATIBLE, "120f"),
    ("newer-device-driver-jit", MATRIX, ("90", "120"), (13, 0), (13, 0), (13, 1), None, "auto", DRIVER, "120"),
    ("newer-device-nvrtc-preferred", MATRIX, ("120",), (13, 0), (13, 0), (13, 1), NVRTC_NEXT, "auto", NVRTC, "130"),
    ("nvrtc-too-old-falls-to-driver", MATRIX, ("120",), (13, 0), (13, 0), (13, 1), NVRTC_13, "auto", DRIVER, "120"),
    ("old-driver-falls-to-nvrtc", ("75",), ("75",), (13, 0), (8, 0), (12, 8), NVRTC_13, "auto", NVRTC, "80"),
    ("driver-jit-on-older-than-sass", ("80",), ("75",), (13, 0), (7, 5), (13, 0), None, "auto", DRIVER, "75"),
    ("driver-jit-highest-ptx-at-or-below", (), ("75", "86", "120"), (13, 0), (9, 0), (13, 0), None, "auto", DRIVER, "86"),
    ("driver-jit-90a-ptx-on-exactly-90", (), ("86", "90a"), (13, 0), (9, 0), (13, 0), None, "auto", DRIVER, "90a"),
    ("driver-jit-90a-ptx-not-on-100", (), ("86", "90a"), (13, 0), (10, 0), (13, 0), None, "auto", DRIVER, "86"),
    ("driver-jit-100f-ptx-in-family", (), ("90", "100f"), (13, 0), (10, 3), (13, 0), None, "auto", DRIVER, "100f"),
    ("driver-jit-100f-ptx-not-on-120", (), ("90", "100f"), (13, 0), (12, 0), (13, 0), None, "auto", DRIVER, "90"),
    ("jetson-87-exact", ("80", "86", "87"), (), (13, 0), (8, 7), (13, 0), None, "auto", EXACT, "87"),
    ("jetson-87-nvrtc-not-86-sass", MATRIX, ("120",), (13, 0), (8, 7), (13, 0), NVRTC_13 | {(8, 7)}, "auto", NVRTC, "87"),
    ("jetson-87-driver-jits-80-ptx", ("80", "86"), ("80",), (13, 0), (8, 7), (13, 0), None, "auto", DRIVER, "80"),
    ("thor-110-not-100-sass", ("100",), ("100",), (13, 0), (11, 0), (13, 0), None, "auto", DRIVER, "100"),
    ("desktop-89-skips-jetson-87-sass", ("80", "87"), (), (13, 0), (8, 9), (13, 0), None, "auto", COMPATIBLE, "80"),
    ("off-still-uses-sass", MATRIX, ("120",), (13, 0), (12, 1), (13, 0), NVRTC_13, "off", COMPATIBLE, "120"),
    ("nvrtc-policy-still-uses-sass", MATRIX, ("120",), (13, 0), (8, 6), (13, 0), NVRTC_13, "nvrtc", EXACT, "86"),
    ("nvrtc-policy-skips-driver", MATRIX, ("120",), (13, 0), (13, 0), (13, 1), NVRTC_NEXT, "nvrtc", NVRTC, "130"),
    ("driver-policy-skips-nvrtc", MATRIX, ("120",), (13, 0), (13, 0), (13, 1), NVRTC_NEXT, "driver", DRIVER, "120"),
]


@pytest.mark.parametrize(
    ("sass", "ptx", "toolkit", "capability", "driver", "nvrtc", "policy", "kind", "arch"),
    [pytest.param(*case[1:], id=case[0]) for case in CHOICES],
)
def test_select_image(sass, ptx, toolkit, capability, driver, nvrtc, policy, kind, arch) -> None:
    kernel = KernelImages(sass, ptx, toolkit, name="maxplus_f32_fwd")
    choice = select_image(kernel, Platform(capability, driver, nvrtc), policy)
    assert (choice.kind, choice.arch) == (kind, arch)
    assert choice.reason and "\n" not in choice.reason
    assert explain_selection(kernel, Platform(capability, driver, nvrtc), policy) == choice


# id, sass, ptx, ptx toolkit, capability, driver, nvrtc archs, policy, fragments the message must hold
FAILURES = [
    (
        "device-older-than-everything",
        ("75", "80", "86"), ("120",), (13, 0), (7, 0), (13, 0), None, "auto",
        ["sm_70", "SASS [75, 80, 86]", "PTX [120]", "NVRTC is not installed", "older than sm_75", "pip install aotc-cuda12x"],
    ),
    (
        "nvrtc-cannot-target-70",
        ("75", "80"), ("75",), (13, 0), (7, 0), (13, 0), NVRTC_13, "auto",
        ["sm_70", "cannot compile for sm_70", "older than sm_75", "pip install aotc-cuda12x"],
    ),
    (
        "maxwell-has-no-lane",
        ("75", "80"), ("75",), (13, 0), (5, 2), (13, 0), NVRTC_13, "auto",
        ["sm_52", "older than sm_75", "no fix in aotc", "sm_70 and newer", "use a newer GPU"],
    ),
    (
        "jetson-87-never-runs-86-sass",
        ("80", "86"), (), (13, 0), (8, 7), (13, 0), None, "auto",
        ["sm_87", "Jetson", "aotc[jit]", "AOTC_ARCHS=87"],
    ),
    (
        "desktop-89-never-runs-jetson-87-sass",
        ("87",), (), (13, 0), (8, 9), (13, 0), None, "auto",
        ["sm_89", "Jetson", "AOTC_ARCHS=89"],
    ),
    (
        "90a-never-compatible-on-91",
        ("90a",), (), (13, 0), (9, 1), (13, 0), None, "auto",
        ["sm_91", "SASS [90a]", "PTX []", "AOTC_ARCHS=91"],
    ),
    (
        "sass-never-crosses-major",
        ("75", "90"), (), (13, 0), (8, 6), (13, 0), None, "auto",
        ["sm_86", "SASS [75, 90]", "AOTC_ARCHS=86"],
    ),
    (
        "old-driver-no-nvrtc",
        MATRIX, ("120",), (13, 0), (13, 0), (12, 8), None, "auto",
        ["sm_130", "driver CUDA 12.8 is older than CUDA 13.0", "update the NVIDIA driver", "aotc[jit]", "AOTC_ARCHS=130"],
    ),
    (
        "off-never-jits",
        MATRIX, ("120",), (13, 0), (13, 0), (13, 1), NVRTC_NEXT, "off",
        ["AOTC_JIT=off", "sm_130", "JIT is disabled", "AOTC_ARCHS=130"],
    ),
    (
        "nvrtc-policy-without-nvrtc",
        MATRIX, ("120",), (13, 0), (13, 0), (13, 1), None, "nvrtc",
        ["AOTC_JIT=nvrtc", "NVRTC is not installed", "aotc[jit]"],
    ),
    (
        "nvrtc-policy-unsupported-arch",
        MATRIX, ("120",), (13, 0), (13, 0), (13, 1), NVRTC_13, "nvrtc",
        ["AOTC_JIT=nvrtc", "this NVRTC cannot compile for sm_130"],
    ),
    (
        "driver-policy-old-driver",
        MATRIX, ("120",), (13, 0), (13, 0), (12, 8), NVRTC_NEXT, "driver",
        ["AOTC_JIT=driver", "driver CUDA 12.8 is older than CUDA 13.0", "AOTC_ARCHS=130"],
    ),
    (
        "driver-policy-no-ptx-below",
        MATRIX, ("120",), (13, 0), (7, 0), (13, 0), NVRTC_13, "driver",
        ["AOTC_JIT=driver", "no PTX at or below sm_70"],
    ),
]


@pytest.mark.parametrize(
    ("sass", "ptx", "toolkit", "capability", "driver", "nvrtc", "policy", "fragments"),
    [pytest.param(*case[1:], id=case[0]) for case in FAILURES],
)
def test_no_image(sass, ptx, toolkit, capability, driver, nvrtc, policy, fragments) -> None:
    kernel = KernelImages(sass, ptx, toolkit, name="maxplus_f32_fwd")
    platform = Platform(capability, driver, nvrtc)
    with pytest.raises(NoKernelImageError) as info:
        select_image(kernel, platform, policy)
    message = str(info.value)
    assert "\n" not in message
    assert "maxplus_f32_fwd" in message
    for fragment in fragments:
        assert fragment in message
    assert explain_selection(kernel, platform, policy) == ImageChoice(ImageKind.UNAVAILABLE, "", message)


@pytest.mark.parametrize("capability", [(7, 0), (7, 2), (6, 1)])
def test_devices_older_than_cuda_13_get_no_impossible_fix(capability) -> None:
    # CUDA 13 neither builds nor JIT-compiles for them: no rebuild, no JIT extra helps.
    kernel = KernelImages(("75", "80"), ("75",), (13, 0))
    for nvrtc in (None, NVRTC_13):
        message = explain_selection(kernel, Platform(capability, (13, 0), nvrtc)).reason
        assert "AOTC_ARCHS" not in message
        assert "aotc[jit]" not in message
        assert "older than sm_75" in message


def test_nvrtc_fix_only_when_nvrtc_could_help() -> None:
    kernel = KernelImages(("75",), (), (13, 0))
    message = explain_selection(kernel, Platform((7, 0), (13, 0)), "off").reason
    assert "aotc[jit]" not in message
    assert "this kernel" in message


@pytest.mark.parametrize(
    ("environ", "policy"),
    [
        pytest.param({}, JitPolicy.AUTO, id="unset"),
        pytest.param({"AOTC_JIT": ""}, JitPolicy.AUTO, id="empty"),
        pytest.param({"AOTC_JIT": "auto"}, JitPolicy.AUTO, id="auto"),
        pytest.param({"AOTC_JIT": "nvrtc"}, JitPolicy.NVRTC, id="nvrtc"),
        pytest.param({"AOTC_JIT": "driver"}, JitPolicy.DRIVER, id="driver"),
        pytest.param({"AOTC_JIT": " OFF "}, JitPolicy.OFF, id="off-case-and-space"),
    ],
)
def test_jit_policy_from_env(environ, policy) -> None:
    assert jit_policy_from_env(environ) is policy


@pytest.mark.parametrize("value", ["on", "nvcc", "0", "auto\nx"])
def test_jit_policy_from_env_rejects(value) -> None:
    with pytest.raises(AotcError, match="AOTC_JIT") as info:
        jit_policy_from_env({"AOTC_JIT": value})
    message = str(info.value)
    assert "\n" not in message
    assert "auto, nvrtc, driver, off" in message


@pytest.mark.parametrize(
    ("sass", "ptx", "bad"),
    [
        pytest.param(("80", "8.6"), (), "SASS arch '8.6'", id="dotted"),
        pytest.param(("sm_90",), (), "SASS arch 'sm_90'", id="prefixed"),
        pytest.param(("90b",), (), "SASS arch '90b'", id="bad-suffix"),
        pytest.param(("9",), (), "SASS arch '9'", id="no-minor"),
        pytest.param(("80",), ("",), "PTX arch ''", id="empty-ptx"),
        pytest.param(("80",), (120,), "PTX arch 120", id="not-a-string"),
    ],
)
def test_malformed_arch(sass, ptx, bad) -> None:
    with pytest.raises(AotcError) as info:
        KernelImages(sass, ptx, (13, 0), name="maxplus_f32_fwd")
    message = str(info.value)
    assert bad in message
    assert "maxplus_f32_fwd" in message
    assert "\n" not in message


def test_arch_list_must_not_be_a_bare_string() -> None:
    with pytest.raises(IndexFormatError, match="'80'"):
        KernelImages("80", (), (13, 0))


def test_values_are_frozen_and_hashable() -> None:
    kernel = KernelImages(["80", "86"], ["86"], [13, 0])
    assert kernel == KernelImages(("80", "86"), ("86",), (13, 0))
    assert hash(kernel) == hash(KernelImages(("80", "86"), ("86",), (13, 0)))
    platform = Platform((8, 6), (13, 0), {(8, 6)})
    assert hash(platform) == hash(Platform((8, 6), (13, 0), frozenset({(8, 6)})))
    with pytest.raises(AttributeError):
        kernel.sass = ("90",)  # type: ignore[misc]
