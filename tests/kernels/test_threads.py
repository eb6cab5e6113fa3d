"""A library's first tensor calls from several threads at once: one thread
registers its PyTorch ops (aotc.kernels._torch_ops.register, under a lock),
the others wait for it and find them; every call is right, none refused."""

from __future__ import annotations

from typing import Any

import pytest

from declared_support import rowops, run_fresh  # noqa: F401 - fixtures

pytest.importorskip("torch", reason="PyTorch is not installed (tox installs the CPU build)")

FIRST_CALLS = """\
import sys
import threading
import torch
import aotc.kernels

kernels = aotc.kernels.load(sys.argv[1], backend="emulator")
x = torch.randn(4, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
want = torch.softmax(x, dim=-1)
start, failures = threading.Barrier(6), []


def first_use() -> None:
    start.wait()
    try:
        for _ in range(5):
            g = x.clone().requires_grad_()
            got = kernels.softmax(g)  # recorded: forward and backward through the ops
            got.sum().backward()
            assert torch.allclose(got, want), "wrong result"
    except Exception as exc:  # noqa: BLE001 - each thread's failure, reported below
        failures.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")


threads = [threading.Thread(target=first_use) for _ in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not failures, failures
print("six first uses, one registration")
"""


def test_first_tensor_calls_from_several_threads_share_one_registration(rowops: Any, tmp_path: Any) -> None:  # noqa: F811
    assert run_fresh(tmp_path, FIRST_CALLS, str(rowops.library.folder)) == "six first uses, one registration"
