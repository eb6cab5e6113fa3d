"""aotc.tropical with PyTorch tensors: CPU tensors run on the emulator, autograd included."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
import pytest

from aotc import reference, tropical
from tropical_support import MINMUL, other  # noqa: F401 - `other` is a fixture

torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

# aotc.tropical's functions run on the emulated library (conftest).
pytestmark = pytest.mark.usefixtures("tropical_on_emulator")


def test_torch_tensors_in_torch_tensors_out() -> None:
    a = torch.randn(6, 5)
    b = torch.randn(3, 5, 4)
    c = tropical.matmul(a, b, "minplus")
    assert isinstance(c, torch.Tensor) and c.shape == (3, 6, 4) and c.dtype == torch.float32
    np.testing.assert_array_equal(c.numpy(), reference.matmul(a.numpy(), b.numpy(), "minplus"))
    c, k = tropical.matmul_argmax(a.double(), b.double())
    assert k.dtype == torch.int32


def test_a_str_valued_enum_names_its_semiring() -> None:
    # Refused before as "expected a semiring name (str) ... got 'maxplus'".
    class SemiringName(str, enum.Enum):
        MAXPLUS = "maxplus"

    a, b = torch.randn(5, 3), torch.randn(3, 6)
    expected = reference.matmul(a.numpy(), b.numpy(), "maxplus")
    np.testing.assert_array_equal(tropical.matmul(a, b, SemiringName.MAXPLUS).numpy(), expected)
    c = tropical.matmul(a.requires_grad_(), b, SemiringName.MAXPLUS)
    c.sum().backward()
    assert a.grad is not None and a.grad.shape == a.shape


@pytest.mark.parametrize("semiring", ["maxplus", "minplus", "maxmul"])
@pytest.mark.parametrize("batched", [False, True])
def test_autograd_matches_finite_differences(semiring: str, batched: bool) -> None:
    # Distinct values keep every argmax away from ties, where the product is smooth.
    generator = torch.Generator().manual_seed(5)
    shape_a, shape_b = ((2, 6, 7), (7, 5)) if batched else ((6, 7), (7, 5))
    a = (torch.randperm(int(np.prod(shape_a)), generator=generator).double() / 7 + 1).reshape(shape_a).requires_grad_()
    b = (torch.randperm(int(np.prod(shape_b)), generator=generator).double() / 5 + 1).reshape(shape_b).requires_grad_()
    assert torch.autograd.gradcheck(lambda x, y: tropical.matmul(x, y, semiring), (a, b), eps=1e-6, atol=1e-6)


def test_loss_backward_reaches_the_winning_entries() -> None:
    a = torch.tensor([[0.0, 5.0], [1.0, -1.0]], requires_grad=True)
    b = torch.tensor([[0.0, 0.0], [1.0, -9.0]], requires_grad=True)
    c = tropical.matmul(a, b)  # max-plus
    c.sum().backward()
    # c = [[6, 0], [1, 1]] with k* = [[1, 0], [0, 0]]: c00 takes a[0,1] and
    # b[1,0]; c01 takes a[0,0] and b[0,1]; c10 and c11 take a[1,0], and b[0,0], b[0,1].
    assert a.grad.tolist() == [[1.0, 1.0], [2.0, 0.0]]
    assert b.grad.tolist() == [[1.0, 2.0], [1.0, 0.0]]


def test_autograd_refuses_out() -> None:
    a = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(ValueError, match="out: not supported while autograd records"):
        tropical.matmul(a, torch.ones(3, 2), out=torch.empty(2, 2))


def test_autograd_through_a_second_library_uses_its_kernels(other: Any) -> None:  # noqa: F811 - the fixture imported above
    # min-times has no kernels in the default library: every pass must come from `other`.
    generator = torch.Generator().manual_seed(8)
    a = (torch.randperm(6 * 7, generator=generator).float() / 7 + 1).reshape(6, 7).requires_grad_()
    b = (torch.randperm(7 * 5, generator=generator).float() / 5 + 1).reshape(7, 5).requires_grad_()
    c = tropical.over(other).matmul(a, b, "minmul")
    c.sum().backward()
    want_c, want_k = reference.matmul_argmax(a.detach().numpy(), b.detach().numpy(), MINMUL)
    want_a, want_b = reference.matmul_backward(np.ones_like(want_c), want_k, a.detach().numpy(), b.detach().numpy(), MINMUL)
    np.testing.assert_array_equal(c.detach().numpy(), want_c)
    np.testing.assert_allclose(a.grad.numpy(), want_a, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), want_b, rtol=1e-6)


def test_empty_tensor_products_launch_nothing() -> None:
    c, k = tropical.matmul_argmax(torch.ones(2, 0, dtype=torch.float64), torch.ones(0, 3, dtype=torch.float64))
    assert c.tolist() == [[-np.inf] * 3] * 2 and k.tolist() == [[-1] * 3] * 2 and k.dtype == torch.int32
    assert tropical.matmul(torch.ones(0, 2, 3), torch.ones(3, 4)).shape == (0, 2, 4)
    pairs = tropical.matmul(torch.ones(2, 0, 2), torch.ones(0, 1, 2), "counting")
    assert pairs.tolist() == [[[-np.inf, 0.0]]] * 2


def test_out_sharing_memory_with_an_input_is_refused() -> None:
    a = torch.ones(2, 2)
    with pytest.raises(ValueError, match=r"^tropical\.matmul: out: shares memory with a; pass a separate array$"):
        tropical.matmul(a, torch.ones(2, 2), out=a)
    with pytest.raises(ValueError, match=r"^tropical\.matmul_argmax: k_out: shares memory with out"):
        buffer = torch.zeros(8)
        tropical.matmul_argmax(a, a, out=buffer[:4].view(2, 2), k_out=buffer[2:6].view(torch.int32).view(2, 2))


# vmap runs an op once an example (PyTorch says so, "a performance drop"); jacrev vmaps the gradient ops.
@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")
def test_torch_func_transforms_agree_with_backward() -> None:
    """matmul is differentiated through argmax (its k* kept for the backward):
    torch.func.grad, vjp, jacrev and vmap of grad each give loss.backward()'s gradient."""
    a, b = torch.randn(4, 3, dtype=torch.float64), torch.randn(3, 5, dtype=torch.float64)
    weights = torch.arange(20, dtype=torch.float64).reshape(4, 5)

    def loss(a: Any, b: Any) -> Any:
        return (tropical.matmul(a, b) * weights).sum()

    leaves = [a.clone().requires_grad_(), b.clone().requires_grad_()]
    loss(*leaves).backward()
    want = [t.grad for t in leaves]
    for got in (torch.func.grad(loss, argnums=(0, 1))(a, b), torch.func.vjp(tropical.matmul, a, b)[1](weights)):
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
    jacobian = torch.func.jacrev(lambda x: tropical.matmul(x, b))(a)  # (4, 5) by (4, 3)
    torch.testing.assert_close((jacobian * weights[..., None, None]).sum((0, 1)), want[0])
    per_example = torch.func.vmap(torch.func.grad(lambda x: loss(x, b)))(torch.stack([a, a]))
    torch.testing.assert_close(per_example[1], want[0])
