"""Products whose grid is past CUDA's limits (65535 blocks on y or z) launch
in parts: tropical's kernels declare a split offset on each axis
(kernels/manifest.yaml, ``block_y0`` and ``block_z0``), and the binder sets
it to each part's first block index (aotc/kernels/_decision.py, ``launches``).
Graph and sequence workloads have such shapes: a tall matrix (8.4 million
rows by one column) and many small products (a batch of 70,000). Before,
these were refused ("past CUDA's limits ... split the work"); the emulator
refuses a grid past the limits as a GPU does, so a part too large fails here;
the launches each part makes are counted in tests/kernels/test_launches.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aotc import reference, tropical
from conftest import installed_library

installed_library()  # skips this module, saying why, where there is no library

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")
RNG = np.random.default_rng(65535)


def test_a_tall_product_launches_in_parts() -> None:
    a = RNG.normal(size=(8_400_000, 1)).astype(np.float32)
    b = RNG.normal(size=(1, 1)).astype(np.float32)
    c = tropical.matmul(a, b)  # f32 tiles of 128 rows: 65,625 blocks on y, in parts of 65,535 and 90
    np.testing.assert_array_equal(c, a + b)


def test_a_batch_of_70000_products_launches_in_parts() -> None:
    a = RNG.normal(size=(70_000, 2, 3)).astype(np.float32)
    b = RNG.normal(size=(70_000, 3, 2)).astype(np.float32)
    c, k = tropical.matmul_argmax(a, b, "minplus")
    want_c, want_k = reference.matmul_argmax(a, b, "minplus")
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(k, want_k)


def test_a_broadcast_operand_sums_its_gradient_over_every_part() -> None:
    """The gradient of b, broadcast over a batch of 70,000, is one sum over
    the batch: the kernel's z = 0 owner walks the whole batch, and the
    second part's blocks (z from 65535) leave it to that owner."""
    a = RNG.normal(size=(70_000, 1, 2)).astype(np.float32)
    b = RNG.normal(size=(2, 1)).astype(np.float32)
    _, k = tropical.matmul_argmax(a, b)
    grad_c = RNG.normal(size=(70_000, 1, 1)).astype(np.float32)
    grad_a, grad_b = tropical.matmul_backward(grad_c, k, a, b)
    np.testing.assert_array_equal(grad_a, reference.matmul_backward_a(grad_c, k, a, b, "maxplus"))
    np.testing.assert_allclose(grad_b, reference.matmul_backward_b(grad_c, k, a, b, "maxplus"), rtol=1e-4)


def test_tensors_launch_in_parts_and_replay_every_part_from_a_plan(full_path: list[str]) -> None:
    """A call of more than one launch leaves a plan that replays every part
    (each at its offsets): the repeats take it, and are as right as the first."""
    torch = pytest.importorskip("torch")
    a = torch.from_numpy(RNG.normal(size=(70_000, 1, 1)))
    b = torch.from_numpy(RNG.normal(size=(70_000, 1, 1)))
    for _ in range(3):
        torch.testing.assert_close(tropical.matmul(a, b), a + b)
    assert full_path == ["gemm_forward"]


def test_the_decision_holds_every_part(emulated_tropical: Any) -> None:
    """Both axes past their limits: four parts, each with its offsets, and
    nothing allocated to decide it."""
    from aotc.kernels._decision import decided

    layout = tropical.over(emulated_tropical).family.layouts["gemm_forward"]
    decision = decided(layout, {"a": (70_000, 8_400_000, 1), "b": (1, 1)}, {"a": "f32", "b": "f32"}, {"semiring": "maxplus"}, {}, {})
    assert decision.grid == (1, 65625, 70_000)
    assert decision.launches == (
        ((1, 65535, 65535), (("block_y0", 0), ("block_z0", 0))),
        ((1, 90, 65535), (("block_y0", 65535), ("block_z0", 0))),
        ((1, 65535, 4465), (("block_y0", 0), ("block_z0", 65535))),
        ((1, 90, 4465), (("block_y0", 65535), ("block_z0", 65535))),
    )
    empty = decided(layout, {"a": (0, 3), "b": (3, 2)}, {"a": "f32", "b": "f32"}, {"semiring": "maxplus"}, {}, {})
    assert empty.launches == () and empty.out_shapes == {"out": (0, 2)}
