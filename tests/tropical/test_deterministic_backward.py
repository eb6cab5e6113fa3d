"""The backward kernels give the same bits run to run and whatever order the
blocks run in: each thread owns a row of grad_A or a column of grad_B and adds
its terms in a fixed order (AOTC_EMULATOR_BLOCK_ORDER reorders the blocks)."""

from __future__ import annotations

import numpy as np
import pytest

from aotc import tropical

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")

ORDERS = ["in-order", "reverse", "shuffle:1", "shuffle:2", "shuffle:3"]


def crafted(shape_c: tuple[int, ...], k: int, dtype: str, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """grad_c with magnitudes 1e-8 to 1e8 and k* sending most terms of a row (and
    a column) to one k: sums of these differ in the last bits when their order
    changes. Some k* are -1 (no gradient)."""
    rng = np.random.default_rng(seed)
    grad_c = (rng.choice([-1.0, 1.0], shape_c) * 10.0 ** rng.uniform(-8, 8, shape_c)).astype(dtype)
    kstar = np.where(rng.random(shape_c) < 0.8, 0, rng.integers(-1, k, shape_c)).astype(np.int32)
    return grad_c, kstar


def run_in_orders(monkeypatch: pytest.MonkeyPatch, *args: object) -> list[tuple[np.ndarray, np.ndarray]]:
    runs = []
    for order in [ORDERS[0], *ORDERS]:  # in order twice: run to run
        monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", order)
        runs.append(tropical.matmul_backward(*args))
    return runs


def assert_bit_identical(runs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    for grad_a, grad_b in runs[1:]:
        assert grad_a.tobytes() == runs[0][0].tobytes()
        assert grad_b.tobytes() == runs[0][1].tobytes()


@pytest.mark.parametrize("semiring", ["maxplus", "maxmul"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_are_bit_identical_in_any_block_order(monkeypatch: pytest.MonkeyPatch, semiring: str, dtype: str) -> None:
    # 300 rows and 600 columns: several blocks along each owner axis.
    m, k, n = 300, 4, 600
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    grad_c, kstar = crafted((m, n), k, dtype)
    runs = run_in_orders(monkeypatch, grad_c, kstar, a, b, semiring)
    assert_bit_identical(runs)
    if semiring == "maxplus":
        # The fixed order is left to right along a row of grad_c, top to bottom along a column.
        row = np.zeros(k, dtype=dtype)
        for j in range(n):
            if kstar[7, j] >= 0:
                row[kstar[7, j]] += grad_c[7, j]
        column = np.zeros(k, dtype=dtype)
        for i in range(m):
            if kstar[i, 11] >= 0:
                column[kstar[i, 11]] += grad_c[i, 11]
        assert runs[0][0][7].tobytes() == row.tobytes()
        assert runs[0][1][:, 11].tobytes() == column.tobytes()


@pytest.mark.parametrize("broadcast", ["a", "b"])
def test_a_broadcast_operand_sums_its_gradient_over_the_batch_in_order(monkeypatch: pytest.MonkeyPatch, broadcast: str) -> None:
    # A 2-D operand against a batch: its gradient has batch stride 0, one matrix
    # that every batch adds into. The owner walks the batch in order.
    batch, m, k, n = 6, 40, 3, 50
    rng = np.random.default_rng(9)
    a = rng.standard_normal((m, k) if broadcast == "a" else (batch, m, k)).astype(np.float32)
    b = rng.standard_normal((k, n) if broadcast == "b" else (batch, k, n)).astype(np.float32)
    grad_c, kstar = crafted((batch, m, n), k, "float32")
    runs = run_in_orders(monkeypatch, grad_c, kstar, a, b, "maxplus")
    assert_bit_identical(runs)
    grad_a, grad_b = runs[0]
    assert grad_a.shape == a.shape and grad_b.shape == b.shape
    if broadcast == "a":
        want = np.zeros(k, dtype=np.float32)
        for z in range(batch):
            for j in range(n):
                if kstar[z, 5, j] >= 0:
                    want[kstar[z, 5, j]] += grad_c[z, 5, j]
        assert grad_a[5].tobytes() == want.tobytes()
    else:
        want = np.zeros(k, dtype=np.float32)
        for z in range(batch):
            for i in range(m):
                if kstar[z, i, 8] >= 0:
                    want[kstar[z, i, 8]] += grad_c[z, i, 8]
        assert grad_b[:, 8].tobytes() == want.tobytes()


def test_torch_autograd_in_deterministic_mode_gives_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")
    # Column 0 of a wins every k: each row's gradient is one long sum.
    rng = np.random.default_rng(4)
    a_values = rng.standard_normal((130, 3)).astype(np.float32)
    a_values[:, 0] += 100
    b_values = rng.standard_normal((3, 260)).astype(np.float32)
    grad_c, _ = crafted((130, 260), 3, "float32")
    grads = []
    saved = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        for order in ["in-order", "in-order", "reverse", "shuffle:4"]:
            monkeypatch.setenv("AOTC_EMULATOR_BLOCK_ORDER", order)
            a, b = torch.tensor(a_values, requires_grad=True), torch.tensor(b_values, requires_grad=True)
            tropical.matmul(a, b, "maxplus").backward(torch.from_numpy(grad_c))
            grads.append((a.grad.numpy().tobytes(), b.grad.numpy().tobytes()))
    finally:
        torch.use_deterministic_algorithms(saved)
    assert all(g == grads[0] for g in grads[1:])
    assert np.frombuffer(grads[0][0], np.float32).reshape(130, 3)[:, 1:].tobytes() == bytes(130 * 2 * 4)
