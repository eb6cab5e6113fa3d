"""Call plans for tensors (made by aotc/kernels/_replay.py from the full call): the tropical:: ops'
kernel reuses a plan on a repeat call, and every check that depends on the
tensors themselves still runs. Also the route into the ops: a call autograd
does not record skips the ops' autograd layer, and out= is versioned like
torch's own."""

from __future__ import annotations

import numpy as np
import pytest

import aotc.kernels
from aotc import reference, tropical
from aotc.errors import ArgumentError, ArgumentTypeError
from tropical_support import other  # noqa: F401 - `other` is a fixture

torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

pytestmark = pytest.mark.usefixtures("tropical_on_emulator")


def _plans() -> dict:
    return tropical._api()._forward.plans.tagged("torch")  # noqa: SLF001 - the cache under test: the forward binding's


def _expected(a: torch.Tensor, b: torch.Tensor, semiring: str = "maxplus") -> np.ndarray:
    return reference.matmul(a.detach().numpy(), b.detach().numpy(), semiring)


def test_a_repeat_call_reuses_its_plan_and_reads_the_new_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = torch.randn(9, 5), torch.randn(5, 7)
    before = len(_plans())
    first = tropical.matmul(a, b)
    assert len(_plans()) == before + 1
    np.testing.assert_array_equal(first.numpy(), _expected(a, b))
    # From here on a call that left the plan for the full path would fail.
    monkeypatch.setattr("aotc.kernels._torch_ops.launch", lambda *args: pytest.fail("took the full path"))
    for _ in range(3):  # new tensors, same shapes: the plan, with these tensors' pointers
        a2, b2 = torch.randn(9, 5), torch.randn(5, 7)
        c = tropical.matmul(a2, b2)
        assert c is not first and c.shape == (9, 7) and c.dtype == torch.float32
        np.testing.assert_array_equal(c.numpy(), _expected(a2, b2))
    monkeypatch.undo()
    out = torch.empty(9, 7)
    assert tropical.matmul(a, b, out=out) is out
    out2 = torch.empty(9, 7)
    assert tropical.matmul(a.clone(), b, out=out2) is out2
    np.testing.assert_array_equal(out2.numpy(), _expected(a, b))
    assert len(_plans()) == before + 2  # allocating and out=: one plan each


def test_the_key_tells_dtypes_and_strides_apart() -> None:
    a, b = torch.randn(4, 6), torch.randn(6, 3)
    tropical.matmul(a, b)
    # Same shapes: a float64 pair, and a b whose rows are padded (another row stride).
    a64, b64 = a.double(), b.double()
    np.testing.assert_array_equal(tropical.matmul(a64, b64).numpy(), _expected(a64, b64))
    padded = torch.randn(6, 5)[:, :3]
    np.testing.assert_array_equal(tropical.matmul(a, padded).numpy(), _expected(a, padded))
    broadcast = torch.randn(2, 4, 6)  # batched a against the same 2-D b
    np.testing.assert_array_equal(tropical.matmul(broadcast, b).numpy(), _expected(broadcast, b))


LAYOUTS = {  # name -> (a, b) made from a generator: each a layout a plan must key apart
    "2-D": lambda g: (torch.randn(7, 5, generator=g), torch.randn(5, 3, generator=g)),
    "padded rows": lambda g: (torch.randn(7, 9, generator=g)[:, 2:7], torch.randn(5, 6, generator=g)[:, ::2].contiguous()),
    "batched a, 2-D b": lambda g: (torch.randn(2, 7, 5, generator=g), torch.randn(5, 3, generator=g)),
    "broadcast batch (stride 0)": lambda g: (torch.randn(1, 7, 5, generator=g).expand(3, 7, 5), torch.randn(3, 5, 3, generator=g)),
    "f64": lambda g: (torch.randn(4, 6, generator=g, dtype=torch.float64), torch.randn(6, 2, generator=g, dtype=torch.float64)),
    "i32": lambda g: (torch.randint(-50, 50, (4, 6), generator=g, dtype=torch.int32), torch.randint(-50, 50, (6, 2), generator=g, dtype=torch.int32)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_repeat_of_a_layout_matches_the_reference(layout: str) -> None:
    # The first call makes the plan; the repeats run it on new values, in place and with out=.
    generator = torch.Generator().manual_seed(len(layout))
    for _ in range(3):
        a, b = LAYOUTS[layout](generator)
        want = _expected(a, b)
        np.testing.assert_array_equal(tropical.matmul(a, b).numpy(), want)
        out = torch.empty(want.shape, dtype=a.dtype)
        assert tropical.matmul(a, b, out=out) is out
        np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("shared", ["a", "b"])
def test_a_planned_call_still_refuses_an_out_sharing_memory(shared: str) -> None:
    a, b, out = torch.ones(4, 4), torch.ones(4, 4), torch.empty(4, 4)
    tropical.matmul(a, b, out=out)
    with pytest.raises(ArgumentError, match=rf"^tropical\.matmul: out: shares memory with {shared}; pass a separate array$"):
        tropical.matmul(a, b, out=a if shared == "a" else b)


def test_a_copied_operand_leaves_a_plan_that_copies_it_again(full_path: list[str]) -> None:
    b = torch.randn(6, 3)
    for _ in range(3):  # column-major: copied to row-major by the full path, then by its plan
        a = torch.randn(6, 5).T
        np.testing.assert_array_equal(tropical.matmul(a, b).numpy(), _expected(a, b))
    assert full_path == ["gemm_forward"]


def test_out_is_versioned_like_torchs_own_out_ops() -> None:
    a, b, out = torch.randn(3, 4), torch.randn(4, 2), torch.empty(3, 2)
    for _ in range(2):  # the full path, then the plan
        version = out._version  # noqa: SLF001 - autograd's version counter
        tropical.matmul(a, b, out=out)
        assert out._version > version  # noqa: SLF001


def test_an_out_of_another_kind_after_a_plan_takes_the_full_path() -> None:
    """The guard read out.requires_grad before out's type: once a tensor call had
    made it, out= a NumPy array raised AttributeError, and out= a list too."""
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    tropical.matmul(a, b)  # the guard, and a plan
    for _ in range(2):
        out = np.empty((3, 2), np.float32)
        assert tropical.matmul(a, b, out=out) is out
        np.testing.assert_array_equal(out, _expected(a, b))
    with pytest.raises(ArgumentTypeError, match=r"^tropical\.matmul: out: expected an array to write the result into, got list$"):
        tropical.matmul(a, b, out=[[0.0, 0.0]] * 3)


def test_out_works_under_inference_mode() -> None:
    # Inference tensors keep no version counter: the bump must not trip on them.
    with torch.inference_mode():
        a, b, out = torch.randn(3, 4), torch.randn(4, 2), torch.empty(3, 2)
        for _ in range(2):
            assert tropical.matmul(a, b, out=out) is out
        np.testing.assert_array_equal(out.numpy(), _expected(a, b))


INFERENCE_RULE = r"out: an inference tensor cannot be written outside torch\.inference_mode\(\) \(PyTorch's rule\)$"


def test_an_inference_tensor_is_refused_as_out_outside_inference_mode() -> None:
    """As torch.mm(a, b, out=t) refuses it. Before, its memory was written without
    a word: on a first call, and by the plans a normal out of the same shape or a
    call inside inference mode had left (the key does not tell them apart)."""
    a, b = torch.randn(5, 6), torch.randn(6, 7)
    with torch.inference_mode():
        held, theirs = torch.full((5, 7), 3.0), torch.empty(5, 7)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        torch.mm(a, b, out=theirs)  # PyTorch's own rule (which it checks once it has written theirs)
    ops = aotc.kernels.over(tropical._library()).torch_ops()  # noqa: SLF001 - the module functions' library: its .out overloads
    for made_by in ("no plan yet", "a normal out", "inference mode"):
        if made_by == "a normal out":
            tropical.matmul(a, b, out=torch.empty(5, 7))
        elif made_by == "inference mode":
            with torch.inference_mode():  # the .out kernel's plan, for a's, b's and held's facts
                tropical.matmul(a, b, out=torch.empty(5, 7))
        for _ in range(2):
            with pytest.raises(ArgumentError, match=rf"^tropical\.matmul: {INFERENCE_RULE}"):
                tropical.matmul(a, b, out=held)
            with pytest.raises(ArgumentError, match=rf"^gemm_forward: {INFERENCE_RULE}"):
                ops.gemm_forward.out(a, b, out=held, semiring="maxplus")
            assert torch.equal(held, torch.full((5, 7), 3.0)), made_by
    with torch.inference_mode():  # inside, PyTorch writes it, and so does aotc
        for _ in range(2):
            assert tropical.matmul(a, b, out=held) is held
    np.testing.assert_array_equal(held.numpy(), _expected(a, b))


def test_a_stream_handle_that_names_no_stream_is_refused_naming_the_call() -> None:
    """The backend's BackendError once reached the caller without the function
    called or the argument at fault; each call (no plan is left) says both."""
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    message = r"^tropical\.matmul: stream: 12345 is no stream of the call's device \(emulator: stream 12345 on device 0: no such stream \(CUDA_ERROR_INVALID_HANDLE\)\)$"
    for _ in range(2):
        with pytest.raises(ArgumentError, match=message):
            tropical.matmul(a, b, stream=12345)
        with pytest.raises(ArgumentError, match=message):
            tropical.matmul(a, b, out=torch.empty(3, 2), stream=12345)


def test_an_out_that_wants_gradients_is_refused_while_autograd_records() -> None:
    a, b, out = torch.randn(3, 4), torch.randn(4, 2), torch.zeros(3, 2, requires_grad=True)
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul: out: not supported while autograd records; call under torch.no_grad\(\)"):
        tropical.matmul(a, b, out=out)
    with torch.no_grad():
        assert tropical.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out.detach().numpy(), _expected(a, b))


def test_a_call_autograd_does_not_record_has_no_graph() -> None:
    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(4, 2)
    with torch.no_grad():
        c = tropical.matmul(a, b)
    assert c.grad_fn is None and not c.requires_grad
    recorded = tropical.matmul(a, b)  # the argmax op, with autograd
    assert recorded.requires_grad and recorded.grad_fn is not None
    np.testing.assert_array_equal(c.numpy(), recorded.detach().numpy())


def test_the_plans_are_per_library_handle(other: object) -> None:  # noqa: F811 - the fixture above
    # Each handle plans its own calls, with its own library's kernels.
    api = tropical.over(other)
    a, b = torch.rand(5, 4) + 1, torch.rand(4, 3) + 1
    for _ in range(2):
        np.testing.assert_array_equal(api.matmul(a, b).numpy(), _expected(a, b))
    assert len(api._forward.plans.tagged("torch")) == 1  # noqa: SLF001


def test_a_training_step_repeats_through_the_argmax_and_backward_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    # Forward while autograd records runs the argmax kernel; backward runs the backward kernels.
    api = tropical._api()  # noqa: SLF001
    backward = [api.family.layouts[name] for name in ("gemm_backward_a", "gemm_backward_b")]
    generator = torch.Generator().manual_seed(3)

    def step() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        # Distinct values: no ties, so the gradients are exact.
        a = (torch.randperm(2 * 6 * 5, generator=generator).float() / 7).reshape(2, 6, 5).requires_grad_()
        b = (torch.randperm(5 * 4, generator=generator).float() / 3).reshape(5, 4).requires_grad_()
        c = tropical.matmul(a, b)
        c.backward(torch.arange(2 * 6 * 4, dtype=torch.float32).reshape(2, 6, 4))
        return a, b, c, a.grad

    def check(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        want_c, k = reference.matmul_argmax(a.detach().numpy(), b.detach().numpy(), "maxplus")
        np.testing.assert_array_equal(c.detach().numpy(), want_c)
        grad_c = np.arange(2 * 6 * 4, dtype=np.float32).reshape(2, 6, 4)
        want_a, want_b = reference.matmul_backward(grad_c, k, a.detach().numpy(), b.detach().numpy(), "maxplus")
        np.testing.assert_array_equal(a.grad.numpy(), want_a)
        np.testing.assert_array_equal(b.grad.numpy(), want_b)

    # The stores dropped first: each starts over when full (MAX_PLANS), which the
    # session's earlier tests may bring about mid-step, so the counts below are this test's.
    for layout in (api._argmax, *backward):  # noqa: SLF001
        layout.plans.clear()
    argmax_before = len(api._argmax.plans.tagged("torch"))  # noqa: SLF001
    backward_before = [len(layout.plans.tagged("torch")) for layout in backward]
    a, b, c, _ = step()
    check(a, b, c)
    assert len(api._argmax.plans.tagged("torch")) == argmax_before + 1  # noqa: SLF001
    assert [len(layout.plans.tagged("torch")) for layout in backward] == [n + 1 for n in backward_before]
    # From here on a step that left its plans for the full paths would fail.
    monkeypatch.setattr("aotc.kernels._torch_ops.launch", lambda *args: pytest.fail("a step took the full path"))
    for _ in range(2):
        a, b, c, _ = step()
        check(a, b, c)


@pytest.mark.gpu
def test_cuda_tensors_are_planned_and_launch_on_torchs_current_stream() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: CUDA tensors need a GPU")
    from aotc.runtime.library import load

    api = tropical.over(load("tropical"))
    a, b = torch.randn(2, 70, 33, device="cuda"), torch.randn(33, 41, device="cuda")
    want = _expected(a.cpu(), b.cpu())
    before = len(api._forward.plans.tagged("torch"))  # noqa: SLF001
    np.testing.assert_array_equal(api.matmul(a, b).cpu().numpy(), want)
    assert len(api._forward.plans.tagged("torch")) == before + 1  # noqa: SLF001 - the GPU path keeps its launch too
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # the plan reads the current stream per call
        torch.cuda._sleep(50_000_000)  # noqa: SLF001 - keeps the side stream busy
        a2 = a * 2
        c = api.matmul(a2, b)
        out = torch.empty_like(c)
        api.matmul(a2, b, out=out)
    side.synchronize()
    np.testing.assert_array_equal(c.cpu().numpy(), _expected(a2.cpu(), b.cpu()))
    np.testing.assert_array_equal(out.cpu().numpy(), c.cpu().numpy())


@pytest.mark.gpu
def test_cuda_training_steps_through_the_plans_match_the_reference() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: CUDA tensors need a GPU")
    from aotc.runtime.library import load

    api = tropical.over(load("tropical"))
    for seed in range(3):  # the first step makes the plans, the others use them
        generator = torch.Generator().manual_seed(seed)
        a = (torch.randperm(3 * 40 * 24, generator=generator).float() / 7).reshape(3, 40, 24)
        b = (torch.randperm(24 * 50, generator=generator).float() / 3).reshape(24, 50)
        ga, gb = a.cuda().requires_grad_(), b.cuda().requires_grad_()
        grad_c = torch.randn(3, 40, 50, generator=generator)
        api.matmul(ga, gb).backward(grad_c.cuda())
        _, k = reference.matmul_argmax(a.numpy(), b.numpy(), "maxplus")
        want_a, want_b = reference.matmul_backward(grad_c.numpy(), k, a.numpy(), b.numpy(), "maxplus")
        np.testing.assert_allclose(ga.grad.cpu().numpy(), want_a, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(gb.grad.cpu().numpy(), want_b, rtol=1e-5, atol=1e-5)
    assert api._argmax.plans.tagged("torch") and api.family.layouts["gemm_backward_a"].plans.tagged("torch")  # noqa: SLF001


@pytest.mark.gpu
def test_a_stream_naming_torchs_current_one_takes_the_ops_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """stream= naming the stream the ops launch on anyway is the op's own call:
    on an H200 the call path for a foreign stream cost 90 us a call, the ops' 20."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: CUDA tensors need a GPU")
    from aotc.kernels import _binding
    from aotc.runtime.library import load

    api = tropical.over(load("tropical"))
    a, b = torch.randn(70, 33, device="cuda"), torch.randn(33, 41, device="cuda")
    want = _expected(a.cpu(), b.cpu())

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the call path for a foreign stream was taken")

    monkeypatch.setattr(_binding.Layout, "run", refuse)  # the direct launch, outside the ops
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for stream in (side, side.cuda_stream):
            np.testing.assert_array_equal(api.matmul(a, b, stream=stream).cpu().numpy(), want)
        ga = a.clone().requires_grad_()
        api.matmul(ga, b, stream=side).sum().backward()  # autograd records: the op's stream allows it
    side.synchronize()
    assert ga.grad is not None
    monkeypatch.undo()
    foreign = torch.cuda.Stream()  # not the current stream: the call path, and autograd refused there
    foreign.wait_stream(torch.cuda.current_stream())
    c = api.matmul(a, b, stream=foreign)
    foreign.synchronize()
    np.testing.assert_array_equal(c.cpu().numpy(), want)
    with pytest.raises(ArgumentError, match=r"^tropical\.matmul: stream: not supported while autograd records"):
        api.matmul(a.clone().requires_grad_(), b, stream=foreign)
