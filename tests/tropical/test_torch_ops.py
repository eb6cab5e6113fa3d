"""The tropical library's custom ops (aotc/kernels/_torch_ops.py, one per
layout of its gemm family: torch.ops.tropical.gemm_forward, gemm_argmax,
gemm_backward_a, gemm_backward_b) pass torch.library.opcheck, and
torch.compile(fullgraph=True) traces tropical.matmul with no graph break."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aotc import reference, tropical
from aotc.errors import ArgumentError
from tropical_support import MINMUL, other  # noqa: F401 - `other` is a fixture

torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")

# opcheck's tests, named so a failure says which one.
OPCHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def distinct(shape: tuple[int, ...], dtype: Any, seed: int, requires_grad: bool = False) -> Any:
    """Distinct values: every argmax is tie-free, so gradients are well defined."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.randperm(int(np.prod(shape)), generator=generator).to(dtype) / 7 + 1
    return values.reshape(shape).requires_grad_(requires_grad)


def ops(api: Any = None) -> Any:
    """``torch.ops.tropical``, registered for the module functions' library (or ``api``'s)."""
    import aotc.kernels

    return aotc.kernels.over((api or tropical._api()).library).torch_ops()  # noqa: SLF001 - the module functions' handle


CASES = [  # (semiring, dtype, shape of a, shape of b)
    ("maxplus", torch.float32, (5, 7), (7, 4)),
    ("minplus", torch.float64, (3, 5, 7), (7, 4)),
    ("maxmul", torch.float32, (5, 7), (3, 7, 4)),
    ("maxplus", torch.float64, (2, 5, 7), (2, 7, 4)),
]


@pytest.mark.parametrize(("semiring", "dtype", "shape_a", "shape_b"), CASES)
def test_opcheck_forward_ops(semiring: str, dtype: Any, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> None:
    a = distinct(shape_a, dtype, 1, requires_grad=True)
    b = distinct(shape_b, dtype, 2, requires_grad=True)
    for op in (ops().gemm_forward.default, ops().gemm_argmax.default):
        results = torch.library.opcheck(op, (a, b), {"semiring": semiring}, test_utils=OPCHECKS)
        assert results == dict.fromkeys(OPCHECKS, "SUCCESS")


@pytest.mark.parametrize(("semiring", "dtype", "shape_a", "shape_b"), CASES)
def test_opcheck_out_and_backward_ops(semiring: str, dtype: Any, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> None:
    a, b = distinct(shape_a, dtype, 1), distinct(shape_b, dtype, 2)
    c, k = tropical.matmul_argmax(a, b, semiring)
    samples = [
        (ops().gemm_forward.out, (a, b), {"out": torch.empty_like(c)}),
        (ops().gemm_argmax.out, (a, b), {"out": torch.empty_like(c), "k_out": torch.empty_like(k)}),
        (ops().gemm_backward_a.default, (torch.rand_like(c), k, b), {}),
        (ops().gemm_backward_b.default, (torch.rand_like(c), k, a), {}),
    ]
    for op, args, kwargs in samples:
        results = torch.library.opcheck(op, args, {**kwargs, "semiring": semiring}, test_utils=OPCHECKS)
        assert results == dict.fromkeys(OPCHECKS, "SUCCESS")


@pytest.mark.parametrize(("semiring", "shape_a", "shape_b"), [("maxplus", (3, 4), (4, 2)), ("maxmul", (2, 3, 4), (4, 2))])
def test_double_backward_is_refused_in_one_line(semiring: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> None:
    # The backward kernels declare no backward of their own: a second derivative is refused, never wrong.
    a, b = distinct(shape_a, torch.float64, 11, True), distinct(shape_b, torch.float64, 12, True)
    grad_a, grad_b = torch.autograd.grad(tropical.matmul(a, b, semiring).sum(), (a, b), create_graph=True)
    refusal = r"^gemm_backward_[ab]: its manifest declares no backward for it, so it cannot be differentiated$"  # the op autograd recorded
    with pytest.raises(ArgumentError, match=refusal):
        torch.autograd.grad((grad_a.square().sum() + grad_b.square().sum()), (a, b))


def test_opcheck_a_counting_semiring() -> None:
    # (value, count) pairs: the fake op gives the result its trailing axis of 2.
    a, b = torch.rand(2, 4, 3, 2), torch.rand(3, 5, 2)
    for op in (ops().gemm_forward.default, ops().gemm_argmax.default):
        assert torch.library.opcheck(op, (a, b), {"semiring": "counting"}, test_utils=OPCHECKS) == dict.fromkeys(OPCHECKS, "SUCCESS")


def test_the_ops_of_a_second_library_use_its_kernels(other: Any) -> None:  # noqa: F811 - the fixture imported above
    # min-times has kernels only in `other`: its handle's key picks them.
    a, b = distinct((6, 7), torch.float32, 3, True), distinct((7, 5), torch.float32, 4, True)
    api = tropical.over(other)
    other_ops = ops(api)  # a library of its own name: its own namespace, torch.ops.other
    assert other_ops is not ops()
    # Its argmax kernels are min-times' alone: an op's schema takes only the axes that choose among its kernels.
    assert torch.library.opcheck(other_ops.gemm_argmax.default, (a, b), test_utils=OPCHECKS) == dict.fromkeys(
        OPCHECKS, "SUCCESS"
    )
    want_c, want_k = reference.matmul_argmax(a.detach().numpy(), b.detach().numpy(), MINMUL)
    c, k = other_ops.gemm_argmax(a, b)
    np.testing.assert_array_equal(c.detach().numpy(), want_c)
    np.testing.assert_array_equal(k.numpy(), want_k)


# Dynamo reports an error the fake op raised as its own, quoting ours.
TRACE_ERROR = torch._dynamo.exc.TorchRuntimeError  # noqa: SLF001


def test_a_semiring_the_library_lacks_is_refused_while_tracing() -> None:
    a = torch.rand(3, 4)
    # tropical's own check, in Python dynamo traces: reported as dynamo reports an exception it observed.
    with pytest.raises(torch._dynamo.exc.Unsupported, match=r"semiring: unknown 'minmul' \(known: maxplus, "):  # noqa: SLF001
        torch.compile(lambda x: tropical.matmul(x, x.T, "minmul"), fullgraph=True, backend="aot_eager")(a)
    with pytest.raises(TRACE_ERROR, match=r"gemm_forward: semiring: 'nowhere' is not one of its values \(maxplus, "):
        torch.compile(lambda x: ops().gemm_forward(x, x.T, semiring="nowhere"), fullgraph=True, backend="aot_eager")(a)


def test_a_mismatched_shape_is_refused_while_tracing() -> None:
    with pytest.raises(TRACE_ERROR, match=r"b: shape \(5, 2\) gives K=5, but a gave K=4"):
        torch.compile(lambda x, y: tropical.matmul(x, y), fullgraph=True, backend="aot_eager")(torch.rand(3, 4), torch.rand(5, 2))


def test_an_explicit_stream_runs_outside_the_ops_and_refuses_autograd() -> None:
    a, b = distinct((3, 4), torch.float32, 13), distinct((4, 2), torch.float32, 14)
    want = reference.matmul(a.numpy(), b.numpy(), "maxplus")
    np.testing.assert_array_equal(tropical.matmul(a, b, stream=0).numpy(), want)
    with pytest.raises(ValueError, match=r"stream: not supported while autograd records; use `with torch.cuda.stream\(s\):`"):
        tropical.matmul(a.requires_grad_(), b, stream=0)
    with pytest.raises(ValueError, match=r"k_out: not supported while autograd records; call under torch\.no_grad"):
        tropical.matmul_argmax(a, b, k_out=torch.empty(3, 2, dtype=torch.int32))


def test_argmax_with_one_of_out_and_k_out_allocates_the_other() -> None:
    a, b = distinct((2, 3, 4), torch.float64, 15), distinct((4, 5), torch.float64, 16)
    k_out = torch.empty(2, 3, 5, dtype=torch.int32)
    c, k = tropical.matmul_argmax(a, b, "minplus", k_out=k_out)
    want_c, want_k = reference.matmul_argmax(a.numpy(), b.numpy(), "minplus")
    assert k is k_out and c.dtype == torch.float64
    np.testing.assert_array_equal(c.numpy(), want_c)
    np.testing.assert_array_equal(k.numpy(), want_k)


def loss(a: Any, b: Any) -> Any:
    c = tropical.matmul(a, b, "maxplus")
    return (c * c).sum()


# Importing inductor warns about its own use of torch.jit; nothing of ours.
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("batched", [False, True])
def test_compiled_backward_matches_eager_with_no_graph_break(batched: bool) -> None:
    shape_a = (3, 6, 7) if batched else (6, 7)
    a, b = distinct(shape_a, torch.float32, 5, True), distinct((7, 5), torch.float32, 6, True)
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    want = loss(a, b)
    want.backward()
    # inductor (a C++ compiler is here) for the code around the ops; fullgraph=True fails on any break.
    got = torch.compile(loss, fullgraph=True, backend="inductor")(a2, b2)
    got.backward()
    # Inductor sums in its own order: the loss agrees to rounding, the gradients
    # (2c scattered along k*, which only the ops compute) exactly.
    torch.testing.assert_close(got, want)
    assert torch.equal(a2.grad, a.grad) and torch.equal(b2.grad, b.grad)


def test_one_dynamic_graph_calls_the_ops_for_every_shape() -> None:
    graphs: list[str] = []

    def recording(gm: Any, example_inputs: Any) -> Any:
        graphs.append(gm.code)
        return gm.forward

    compiled = torch.compile(loss, fullgraph=True, dynamic=True, backend=recording)
    for m in (3, 5):
        a, b = distinct((m, 4), torch.float32, m, True), distinct((4, 2), torch.float32, 17, True)
        torch.testing.assert_close(compiled(a, b), loss(a, b))
    assert len(graphs) == 1 and "tropical.gemm_argmax" in graphs[0]


def test_compiled_out_matches_eager() -> None:
    a, b = distinct((4, 6), torch.float64, 7), distinct((6, 3), torch.float64, 8)

    def product(x: Any, y: Any, out: Any) -> Any:
        tropical.matmul(x, y, "minplus", out=out)
        return out + 1

    out = torch.empty(4, 3, dtype=torch.float64)
    got = torch.compile(product, fullgraph=True, backend="aot_eager")(a, b, out)
    want = reference.matmul(a.numpy(), b.numpy(), "minplus")
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(got.numpy(), want + 1)


@pytest.mark.gpu
def test_opcheck_on_cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the ops run on CUDA tensors only with a GPU")
    from aotc.runtime.library import load

    api = tropical.over(load("tropical"))
    a = distinct((2, 33, 17), torch.float32, 9, True).cuda().detach().requires_grad_()
    b = distinct((17, 20), torch.float32, 10, True).cuda().detach().requires_grad_()
    for op in (ops(api).gemm_forward.default, ops(api).gemm_argmax.default):
        assert torch.library.opcheck(op, (a, b), {"semiring": "maxplus"}, test_utils=OPCHECKS) == dict.fromkeys(OPCHECKS, "SUCCESS")
