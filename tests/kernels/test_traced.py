"""aotc/kernels/_traced.py: torch.compile(fullgraph=True) as the very first use
of a declared library in a fresh process, where dynamo meets the first-use
work (reading the index, making the bindings, registering the ops) that it
cannot trace."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from declared_support import rowops, run_fresh  # noqa: F401 - fixtures

torch = pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")


def test_the_mark_is_the_one_assume_constant_result_sets() -> None:
    from aotc.kernels._traced import constant_when_traced

    def ours() -> None: ...

    def torchs() -> None: ...

    constant_when_traced(ours)
    torch.compiler.assume_constant_result(torchs)
    assert {k: v for k, v in vars(ours).items()} == {k: v for k, v in vars(torchs).items()} == {"_dynamo_marked_constant": True}


FIRST_USE = """\
import sys
import torch
import aotc.kernels

kernels = aotc.kernels.load(sys.argv[1], backend="emulator")  # reads the index's top level only
compiled = torch.compile(lambda x: kernels.scan(kernels.softmax(x)), fullgraph=True, backend="aot_eager")
x = torch.randn(3, 7, dtype=torch.float64)
got = compiled(x)
assert torch.allclose(got, torch.softmax(x, dim=-1).cumsum(-1)), got
train = torch.compile(lambda x, g, h: kernels.scale_shift(x, g, h).square().sum(), fullgraph=True, backend="aot_eager")
x, g, h = (torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in ((4, 5), (5,), (5,)))
train(x, g, h).backward()
assert torch.allclose(h.grad, 2 * (x * g + h).sum(0)), h.grad
print("compiled first use:", tuple(got.shape))
"""


def test_a_compiled_first_use_in_a_fresh_process(rowops: Any, tmp_path: Any) -> None:  # noqa: F811
    """The rowops README's own torch.compile(lambda x: rowops.scan(rowops.softmax(x)),
    fullgraph=True), and a compiled training step, before any eager call."""
    assert run_fresh(tmp_path, FIRST_USE, rowops.library.folder) == "compiled first use: (3, 7)"


TROPICAL_FIRST_USE = textwrap.dedent("""\
    import sys
    import torch
    import aotc
    from aotc import tropical

    library = aotc.load(sys.argv[1], backend="emulator")  # its index's top level: no binding or handle is made yet
    a = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    step = torch.compile(lambda a, b: tropical.over(library).matmul(a, b, "maxplus").sum(), fullgraph=True, backend="aot_eager")
    step(a, b).backward()
    assert a.grad.sum() == 20 and b.grad.sum() == 20, (a.grad, b.grad)  # one winning k for each of the 20 entries
    print("compiled tropical first use")
""")


def test_a_compiled_first_use_of_tropical_in_a_fresh_process(tmp_path: Any) -> None:
    from conftest import installed_library

    assert run_fresh(tmp_path, TROPICAL_FIRST_USE, str(installed_library())) == "compiled tropical first use"


EVERY_FUNCTION = textwrap.dedent("""\
    import sys
    import torch
    import aotc
    from aotc import reference, tropical

    tropical.set_library(aotc.load(sys.argv[1], backend="emulator"))  # the index's top level: no handle, binding or op yet
    a = torch.randn(5, 6, dtype=torch.float64)
    b = torch.randn(6, 4, dtype=torch.float64)
    want_c, want_k = reference.matmul_argmax(a.numpy(), b.numpy(), "maxplus")
    calls = {
        "matmul": lambda: tropical.matmul(a, b),
        "matmul_argmax": lambda: tropical.matmul_argmax(a, b, "maxplus"),
        "matmul_backward": lambda: tropical.matmul_backward(torch.ones(5, 4, dtype=torch.float64), torch.from_numpy(want_k), a, b),
    }
    got = torch.compile(calls[sys.argv[2]], fullgraph=True, backend="aot_eager")()
    if sys.argv[2] == "matmul_backward":
        want = reference.matmul_backward(torch.ones(5, 4, dtype=torch.float64).numpy(), want_k, a.numpy(), b.numpy(), "maxplus")
        assert all((g.numpy() == w).all() for g, w in zip(got, want)), got
    else:
        assert ((got[0] if isinstance(got, tuple) else got).numpy() == want_c).all(), got
    print("compiled first use:", sys.argv[2])
""")


@pytest.mark.parametrize("function", ["matmul", "matmul_argmax", "matmul_backward"])
def test_a_compiled_first_use_of_every_tropical_function(tmp_path: Any, function: str) -> None:
    """torch.compile(fullgraph=True) as the very first use of each public tensor
    function, in a fresh process: matmul_backward chooses its kernel and its
    gradient steps where dynamo does not trace (its tables filled once)."""
    from conftest import installed_library

    assert run_fresh(tmp_path, EVERY_FUNCTION, str(installed_library()), function) == f"compiled first use: {function}"
