"""Max-plus products in JAX, jitted and differentiable: a learnable Viterbi score.

The best path score through a chain of transition matrices is a chain of
max-plus products; its gradient (jax.grad) flows to exactly the transitions
on the best path, and jax.vmap scores a batch of starts with the batched
kernels. On the CPU the kernels run on the emulator backend.

    AOTC_BACKEND=emulator python examples/jax_viterbi.py
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from aotc import tropical

states, steps = 8, 5
transitions = jax.random.normal(jax.random.key(0), (steps, states, states))


@jax.jit
def best_score(transitions: jax.Array, start: jax.Array) -> jax.Array:
    scores = start[None, :]  # (1, states)
    for step in range(steps):
        scores = tropical.matmul(scores, transitions[step], "maxplus")
    return scores.max()


start = jnp.zeros(states)
score, grads = jax.value_and_grad(best_score)(transitions, start)
used = int((grads != 0).sum())
starts = jax.random.normal(jax.random.key(1), (4, states))
batch = jax.vmap(best_score, in_axes=(None, 0))(transitions, starts)
print(f"best path score {float(score):.3f}; gradient reaches {used} transitions (one per step: {steps}); 4 starts: {', '.join(f'{x:.3f}' for x in batch.tolist())}")
