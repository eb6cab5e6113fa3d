"""Per-call host cost of a JAX call into the tropical kernels, beside plain jnp ops.

The ``jax.experimental.buffer_callback`` route (``aotc.kernels._jax``) runs
Python at every execution: XLA calls back, and the callback runs the ordinary
call path on XLA's buffers. What it costs is timed here on the noop backend
(the launch does nothing, so what is left is the route's own work), each call
a jitted function applied to device-resident arrays and waited for
(``block_until_ready``), beside jnp functions of the same operands in the same
run: an ordinary matmul, and the max-plus product written in jnp.
With ``--rowops`` (a built examples/rowops library) it times a declared
family too: ``softmax`` under jit, and ``jax.vmap`` of it over 16 examples,
once mapped onto its optional batch (one launch) and once example by example
(the same arrays given their batch of 1, so vmap cannot map onto it).
Medians over interleaved batches, as ``api_overhead.py``.

    python benchmarks/jax_call.py [--library DIR] [--rowops DIR] [--size 64] [--batches 20] [--calls 500]
"""

from __future__ import annotations

import argparse

import run  # first: puts this checkout's aotc first on sys.path

import aotc
from aotc import tropical
from aotc.kernels import over
from aotc.runtime.backends.noop import NoopBackend
from aotc.runtime.library import Library


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=str(aotc.library_dir("tropical")))
    parser.add_argument("--rowops", help="a built examples/rowops library folder: time its softmax too")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    import jax
    import jax.numpy as jnp

    tropical.set_library(Library(args.library, backend=NoopBackend()))
    n = args.size
    a, b = jnp.ones((n, n), jnp.float32), jnp.ones((n, n), jnp.float32)
    aotc_matmul = jax.jit(lambda x, y: tropical.matmul(x, y, "maxplus"))
    aotc_argmax = jax.jit(lambda x, y: tropical.matmul_argmax(x, y, "maxplus"))
    jnp_matmul = jax.jit(jnp.matmul)
    jnp_maxplus = jax.jit(lambda x, y: jnp.max(x[:, :, None] + y[None, :, :], axis=1))
    batch = jnp.ones((16, n, n), jnp.float32)
    aotc_mapped = jax.jit(jax.vmap(lambda x, y: tropical.matmul(x, y, "maxplus"), in_axes=(0, None)))
    identity = jax.jit(lambda x, y: x)
    cases = {
        "calibration: a jitted function returning its input": lambda: identity(a, b).block_until_ready(),
        f"jnp.matmul, {n}x{n} f32": lambda: jnp_matmul(a, b).block_until_ready(),
        f"max-plus in jnp (broadcast + max), {n}x{n}": lambda: jnp_maxplus(a, b).block_until_ready(),
        f"tropical.matmul under jit, {n}x{n} (buffer_callback)": lambda: aotc_matmul(a, b).block_until_ready(),
        "tropical.matmul_argmax under jit": lambda: jax.block_until_ready(aotc_argmax(a, b)),
        f"vmap of tropical.matmul, 16 x ({n}, {n}) by one b": lambda: aotc_mapped(batch, b).block_until_ready(),
    }
    if args.rowops:
        rowops = over(Library(args.rowops, backend=NoopBackend()))
        x, examples, alone = jnp.ones((n, n), jnp.float32), jnp.ones((16, 8, n), jnp.float32), jnp.ones((16, 1, 8, n), jnp.float32)
        softmax = jax.jit(rowops.softmax)
        mapped = sequential = jax.jit(jax.vmap(rowops.softmax))  # which way it maps follows from the shapes
        cases[f"rowops.softmax under jit, {n}x{n}"] = lambda: softmax(x).block_until_ready()
        cases[f"vmap of softmax, 16 x (8, {n}): onto its batch"] = lambda: mapped(examples).block_until_ready()
        cases[f"vmap of softmax, 16 x (1, 8, {n}): one by one"] = lambda: sequential(alone).block_until_ready()
    for function in cases.values():
        function()  # compiles, and loads the kernel: not part of the per-call cost
    medians = run.interleaved_medians(cases, args.batches, args.calls)
    print(f"jax {jax.__version__}, {jax.default_backend()} backend; aotc on the noop backend; median of {args.batches} interleaved batches of {args.calls} calls")
    base = medians[f"jnp.matmul, {n}x{n} f32"]
    for name, value in medians.items():
        print(f"  {name:56} {value / 1000:7.2f} us  {value / base:5.2f}x jnp.matmul")


if __name__ == "__main__":
    main()
