"""A declared family's ``backward:`` (aotc.build._backward_fields): gradients of
several kernels and routes, resolved per point to kernel names, and each
misuse refused by `aotc list` in one line naming the entry's key."""

from __future__ import annotations

from pathlib import Path

import pytest

from aotc.build._backward_fields import Gradient
from aotc.build.manifest import load_manifest
from aotc.index import LibraryIndex
from aotc.index.views import Backward
from declared_support import REPO, declared_library, refused, write_project

# tropical's shape in small: argmax keeps k*, two kernels take it back to grad_A and grad_B,
# and the forward pass is differentiated through argmax.
GRADS = """\
library: grads
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  mm:
    template: mm.cu.j2
    axes: {dtype: [f32, i32], pass: [forward, argmax, grad_a, grad_b]}
    name: "mm_{dtype}_{pass}"
    exclude: [{dtype: i32, pass: [grad_a, grad_b]}]
    signature:
      - when: {pass: [forward, argmax]}
        A: {array: dtype, role: in, shape: [M, K]}
        B: {array: dtype, role: in, shape: [K, N]}
        C: {array: dtype, role: out, shape: [M, N]}
        Kstar: {array: i32, role: out, shape: [M, N], when: {pass: argmax}}
        M: i32
        N: i32
        K: i32
      - when: {pass: grad_a}
        grad_C: {array: dtype, role: in, shape: [M, N]}
        Kstar: {array: i32, role: in, shape: [M, N]}
        B: {array: dtype, role: in, shape: [K, N]}
        grad_A: {array: dtype, role: out, shape: [M, K], fill: 0}
        M: i32
        N: i32
        K: i32
      - when: {pass: grad_b}
        grad_C: {array: dtype, role: in, shape: [M, N]}
        Kstar: {array: i32, role: in, shape: [M, N]}
        A: {array: dtype, role: in, shape: [M, K]}
        grad_B: {array: dtype, role: out, shape: [K, N], fill: 0}
        M: i32
        N: i32
        K: i32
    launch: {grid: [M], block: [32]}
    backward:
      - {when: {pass: argmax, dtype: f32}, axes: {pass: grad_a}, saves: [Kstar, B]}
      - {when: {pass: argmax, dtype: f32}, axes: {pass: grad_b}, saves: [Kstar, A]}
      - {when: {pass: forward, dtype: f32}, through: {pass: argmax}}
"""
TEMPLATE = {"templates/mm.cu.j2": 'extern "C" __global__ void {{ kernel_name }}({{ params }}) {}\n'}
ROUTE = "      - {when: {pass: forward, dtype: f32}, through: {pass: argmax}}\n"
FIRST = "      - {when: {pass: argmax, dtype: f32}, axes: {pass: grad_a}, saves: [Kstar, B]}\n"
GRAD_A_B = "        Kstar: {array: i32, role: in, shape: [M, N]}\n        B: {array: dtype, role: in, shape: [K, N]}\n"
KSTAR = "        Kstar: {array: i32, role: in, shape: [M, N]}\n"
# grad_a's arrays and scalars, after grad_C.
GRAD_A = GRAD_A_B + "        grad_A: {array: dtype, role: out, shape: [M, K], fill: 0}\n        M: i32\n        N: i32\n        K: i32\n"


def grads(tmp_path: Path, old: str = "", new: str = "") -> Path:
    assert old in GRADS, old
    return write_project(tmp_path, {"manifest.yaml": GRADS.replace(old, new, 1), **TEMPLATE})


def test_each_point_resolves_to_its_kernels_or_its_route(tmp_path: Path) -> None:
    found = {k.name: k.backward for k in load_manifest(grads(tmp_path)).kernels}
    assert found == {
        "mm_f32_forward": Gradient(through="mm_f32_argmax"),
        "mm_f32_argmax": Gradient((("mm_f32_grad_a", ("Kstar", "B")), ("mm_f32_grad_b", ("Kstar", "A")))),
        "mm_f32_grad_a": None,
        "mm_f32_grad_b": None,
        "mm_i32_forward": None,  # no entry matches: no gradient
        "mm_i32_argmax": None,
    }


def test_the_index_records_kernel_names(tmp_path: Path) -> None:
    index = LibraryIndex.open(declared_library(tmp_path, grads(tmp_path / "project")))
    assert index.kernel("mm_f32_argmax").backward == Backward((("mm_f32_grad_a", ("Kstar", "B")), ("mm_f32_grad_b", ("Kstar", "A"))), "")
    assert index.kernel("mm_f32_forward").backward == Backward((), "mm_f32_argmax")
    assert index.kernel("mm_i32_forward").backward is None


def test_a_mapping_names_another_familys_kernel_at_the_same_axes(tmp_path: Path) -> None:
    rowops = {k.name: k.backward for k in load_manifest(REPO / "examples" / "rowops" / "kernels" / "manifest.yaml").kernels}
    assert rowops["softmax_f64"] == Gradient((("softmax_backward_f64", ("y",)),))
    assert rowops["scan_f32"] is None


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (FIRST, FIRST + FIRST, "backward[1]: at mm_f32_argmax, grad_A is computed by mm_f32_grad_a and by mm_f32_grad_a"),
        (ROUTE, "      - {when: {pass: [forward, argmax], dtype: f32}, through: {pass: argmax}}\n", "backward[2]: at mm_f32_argmax, this route matches beside gradient kernels (families.mm.backward[0])"),
        (FIRST, "      - {when: {pass: [forward, argmax]}, through: {pass: argmax}}\n" + FIRST, "backward[3]: at mm_f32_forward, families.mm.backward[0] routes the point through another kernel, so no other entry may match it"),
        (ROUTE, "      - {when: {pass: forward, dtype: f32}, through: {pass: grad_a}}\n", "backward[2].through: at mm_f32_forward, mm_f32_grad_a does not compute C (out, f32) as mm_f32_forward does"),
        (ROUTE, "      - {when: {pass: forward}, through: {pass: argmax}}\n", "backward[2].through: at mm_i32_forward, mm_i32_argmax has no gradient: a route leads to gradient kernels"),
        (ROUTE, "      - {when: {pass: forward, dtype: f32}, through: {pass: forward}}\n", "backward[2].through: at mm_f32_forward, names the kernel itself"),
        (ROUTE, "      - {when: {pass: forward, dtype: f32}, through: {pass: nope}}\n", "backward[2].through.pass: 'nope' is not a value of axis pass (declared: forward, argmax, grad_a, grad_b)"),
        (ROUTE, "      - {when: {pass: forward, dtype: f32}, through: {size: 4}}\n", "backward[2].through.size: unknown key"),
        (ROUTE, "      - {when: {pass: forward, dtype: f32}, through: {pass: argmax}, saves: [A]}\n", "backward[2].saves: a route (through:) takes only when"),
        (FIRST, "      - {when: {pass: argmax}, axes: {pass: grad_a}, saves: [Kstar, B]}\n", "backward[0]: at mm_i32_argmax, names no kernel of mm (pass=grad_a)"),
        (FIRST, "      - {when: {pass: argmax, dtype: f32}, axes: {pass: grad_a}, saves: [Kstar]}\n", "backward[0]: at mm_f32_argmax, mm_f32_grad_a's parameter B is neither the gradient of a result (grad_C, grad_Kstar) nor a saved array (saves: Kstar)"),
        (FIRST, "      - {when: {pass: argmax, dtype: f32}, axes: {pass: grad_a}, saves: [Kstar, grad_C]}\n", "backward[0].saves: 'grad_C' is not an array of mm_f32_argmax (arrays: A, B, C, Kstar)"),
        (FIRST, "      - {when: {pass: argmax, dtype: f32}, axes: {pass: [grad_a]}, saves: [Kstar, B]}\n", "backward[0].axes.pass: expected one value of mm's axis pass, got a list"),
        (FIRST, "      - {when: {pass: argmax, dtype: f32}, family: nope, saves: [Kstar, B]}\n", "backward[0].family: 'nope' is not a declared family of this manifest (declared: mm)"),
        (GRAD_A_B, GRAD_A_B + "        scale: f32\n", "backward[0]: at mm_f32_argmax, mm_f32_grad_a's parameter scale (f32) is an argument mm_f32_argmax does not take"),
        # P sizes only grad_A, and the forward call binds no size P: no one could pass it.
        (
            GRAD_A,
            KSTAR + "        grad_A: {array: dtype, role: out, shape: [M, P], fill: 0}\n        M: i32\n        N: i32\n        K: i32\n        P: i32\n",
            "backward[0]: at mm_f32_argmax, mm_f32_grad_a's parameter P sizes only out arrays, yet mm_f32_argmax binds no size of that name from its in arrays",
        ),
        (
            GRAD_A,
            KSTAR + "        grad_A: {array: dtype, role: out, shape: [M, N], fill: 0}\n        M: i32\n        N: i32\n        K: f32\n",
            "backward[0]: at mm_f32_argmax, mm_f32_grad_a's parameter K (f32) is a size mm_f32_argmax binds from its arrays: an integer",
        ),
    ],
)
def test_each_misuse_is_one_line_naming_the_entry(tmp_path: Path, old: str, new: str, expected: str) -> None:
    message = refused(grads(tmp_path, old, new))
    assert message.startswith(f"{tmp_path / 'manifest.yaml'}:")
    assert f"families.mm.{expected}" in message, message


def test_a_gradient_kernel_takes_the_forward_calls_sizes_by_name(tmp_path: Path) -> None:
    """Without B, K sizes only grad_A: grad_a takes the K the forward call bound from
    A and B, as it takes an argument, and saves no operand for it."""
    first = FIRST.replace("saves: [Kstar, B]", "saves: [Kstar]")
    path = write_project(tmp_path, {"manifest.yaml": GRADS.replace(GRAD_A_B, KSTAR, 1).replace(FIRST, first, 1), **TEMPLATE})
    kernels = {k.name: k for k in load_manifest(path).kernels}
    assert kernels["mm_f32_argmax"].backward == Gradient((("mm_f32_grad_a", ("Kstar",)), ("mm_f32_grad_b", ("Kstar", "A"))))
    k = next(p for p in kernels["mm_f32_grad_a"].signature.params if p.name == "K")
    assert (k.dim, k.extent) == (False, True)


def test_tropicals_argmax_names_its_two_kernels_and_its_forward_its_route() -> None:
    kernels = {k.name: k for k in load_manifest(REPO / "kernels" / "manifest.yaml").kernels}
    assert kernels["gemm_maxmul_f64_argmax_batched"].backward == Gradient(
        (("gemm_maxmul_f64_backward_a_batched", ("Kstar", "B")), ("gemm_maxmul_f64_backward_b_batched", ("Kstar", "A")))
    )
    assert kernels["gemm_minplus_f32_forward"].backward == Gradient(through="gemm_minplus_f32_argmax")
    differentiable = sorted(name for name, k in kernels.items() if k.backward is not None)
    # (maxplus, minplus, maxmul) x (f32, f64) x (forward, argmax) x (single, batched); no integer, bool, counting or backward kernel
    assert len(differentiable) == 24
    assert all(dict(kernels[n].axes)["semiring"] in ("maxplus", "minplus", "maxmul") for n in differentiable)
    assert all(dict(kernels[n].axes)["dtype"] in ("f32", "f64") and dict(kernels[n].axes)["pass"] in ("forward", "argmax") for n in differentiable)


def test_tropicals_parameters_speak_its_public_names() -> None:
    kernels = {k.name: k for k in load_manifest(REPO / "kernels" / "manifest.yaml").kernels}

    def args(name: str) -> list[tuple[str, str]]:
        return [(p.name, p.arg) for p in kernels[name].signature.arrays]

    assert args("gemm_maxplus_f32_argmax_batched") == [("A", "a"), ("B", "b"), ("C", "out"), ("Kstar", "k_out")]
    assert args("gemm_andor_bool_argmax_packed") == [("A", "pa"), ("B", "pb"), ("C", "out"), ("Kstar", "k_out")]
    assert args("gemm_maxplus_f64_backward_a") == [("grad_C", "grad_c"), ("Kstar", "k"), ("B", "b"), ("grad_A", "grad_a")]
    assert args("gemm_maxplus_f64_backward_b") == [("grad_C", "grad_c"), ("Kstar", "k"), ("A", "a"), ("grad_B", "grad_b")]
    assert [p.fill for p in kernels["gemm_maxmul_f32_backward_b_batched"].signature.arrays] == [None, None, None, 0.0]  # it adds into grad_B
    assert all(p.fill is None for p in kernels["gemm_maxplus_f32_argmax"].signature.arrays)
