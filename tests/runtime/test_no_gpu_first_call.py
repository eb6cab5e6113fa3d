"""Without a GPU and without ``AOTC_BACKEND``, every entry's first call ends in
one ``NoDeviceError`` line that names ``AOTC_BACKEND=emulator`` (issue 35).

Each entry runs in a fresh process, as a user's script does, against the real
cuda-bindings on a machine with no NVIDIA driver (CI is one): cuda-bindings
13.5 raises from ``cuCtxGetCurrent`` there, where older releases returned an
error code, so a test of ``backend.device()`` alone never saw the traceback a
first call gave.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RunAotc, aotc_env, gpu_problem, installed_library

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("cuda.bindings") is None, reason="needs cuda-bindings, the default backend's"),
    pytest.mark.skipif(not gpu_problem(), reason="needs a machine without a usable GPU (this one has one)"),
]

LIBRARY = installed_library().resolve()
NO_DEVICE = r"no CUDA GPU: .*; to run the kernels on the CPU instead, set AOTC_BACKEND=emulator"
# What jax.jit appends to every exception that leaves a jitted call (JAX_TRACEBACK_FILTERING's note).
JAX_NOTE = ("--------------------", "For simplicity, JAX has removed its internal frames")


def run_script(source: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = aotc_env({"AOTC_CACHE_DIR": str(tmp_path / "cache"), "JAX_PLATFORMS": "cpu"})
    env.pop("AOTC_BACKEND", None)
    return subprocess.run([sys.executable, "-c", source], env=env, capture_output=True, text=True, timeout=300)


def assert_ends_in_no_device(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    if len(lines) > 2 and lines[-1].startswith(JAX_NOTE[1]) and lines[-2] == JAX_NOTE[0]:
        lines = lines[:-2]
    assert re.fullmatch(rf"aotc\.errors\.NoDeviceError: {NO_DEVICE}", lines[-1]), result.stderr[-3000:]
    # Raised as itself: no chained driver exception, no XLA wrapping before it.
    for text in ("During handling of the above exception", "direct cause of the following", "DynamicLibNotFoundError", "buffer callback"):
        assert text not in result.stderr, result.stderr[-3000:]


TROPICAL = f"import aotc\nfrom aotc import tropical\ntropical.set_library(aotc.load({str(LIBRARY)!r}))\n"

FIRST_CALLS = {
    "numpy": "import numpy as np\na = np.ones((4, 3), np.float32)\ntropical.matmul(a, a.T, 'maxplus')",
    "numpy argmax": "import numpy as np\na = np.ones((4, 3))\ntropical.matmul_argmax(a, a.T, 'minplus')",
    "torch autograd": (
        "import torch\na = torch.ones(4, 3, requires_grad=True)\n"
        "tropical.matmul(a, torch.ones(3, 2), 'maxplus').sum().backward()"
    ),
    "jax eager": "import jax.numpy as jnp\ntropical.matmul(jnp.ones((4, 3)), jnp.ones((3, 2)), 'maxplus')",
    "jax.jit(jax.grad)": (
        "import jax, jax.numpy as jnp\n"
        "loss = jax.jit(jax.grad(lambda a, b: tropical.matmul(a, b, 'maxplus').sum()))\n"
        "loss(jnp.ones((4, 3)), jnp.ones((3, 2)))"
    ),
    "a kernel by name": "aotc.load({lib!r}).launch('gemm_maxplus_f32_forward', 0, 0, 0, 1, 1, 1, 1, 1, 1)",
    "preload": "aotc.load({lib!r}).preload()",
}


@pytest.mark.parametrize("entry", FIRST_CALLS)
def test_a_first_call_ends_in_one_line_naming_the_emulator(entry: str, tmp_path: Path) -> None:
    module = {"torch autograd": "torch", "jax eager": "jax", "jax.jit(jax.grad)": "jax"}.get(entry, "numpy")
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module}")
    assert_ends_in_no_device(run_script(TROPICAL + FIRST_CALLS[entry].format(lib=str(LIBRARY)), tmp_path))


@pytest.mark.parametrize("arrays", ["numpy", "torch", "jax", "jax.jit"])
def test_a_declared_familys_first_call_too(arrays: str, tmp_path: Path) -> None:
    from kernels.declared_support import ROWOPS, declared_library

    if importlib.util.find_spec(arrays.split(".")[0]) is None:
        pytest.skip(f"needs {arrays}")
    lib = declared_library(tmp_path, ROWOPS / "manifest.yaml")
    make = {
        "numpy": "import numpy as np\nx = np.ones((2, 3), np.float32)\nf = k.softmax",
        "torch": "import torch\nx = torch.ones(2, 3)\nf = k.softmax",
        "jax": "import jax.numpy as jnp\nx = jnp.ones((2, 3))\nf = k.softmax",
        "jax.jit": "import jax, jax.numpy as jnp\nx = jnp.ones((2, 3))\nf = jax.jit(k.softmax)",
    }[arrays]
    source = f"import aotc.kernels\nk = aotc.kernels.load({str(lib)!r})\n{make}\nf(x)"
    assert_ends_in_no_device(run_script(source, tmp_path))


@pytest.mark.parametrize("command", [("doctor",), ("warm",)])
def test_the_command_line_prints_it_alone_and_fails(command: tuple[str, ...], run_aotc: RunAotc) -> None:
    result = run_aotc(*command, "--library", str(LIBRARY), env={"AOTC_BACKEND": ""})
    assert result.returncode == 1, result.stderr
    assert re.fullmatch(rf"aotc: error: {NO_DEVICE}\n", result.stderr), result.stderr
    if command == ("warm",):
        assert result.stdout == ""


def test_warm_and_doctor_for_a_named_arch_need_no_gpu(run_aotc: RunAotc) -> None:
    for command in (("doctor", "--arch", "8.0"), ("warm", "--arch", "8.0")):
        result = run_aotc(*command, "--library", str(LIBRARY), env={"AOTC_BACKEND": ""})
        assert result.returncode == 0, result.stderr
