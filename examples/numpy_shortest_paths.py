"""All-pairs shortest paths with min-plus matrix products, on NumPy arrays.

D1 holds edge weights (inf where there is no edge, 0 on the diagonal).
Squaring under min-plus doubles the path length covered, so log2(n) products
give every shortest distance; matmul_argmax also says through which node.

    python examples/numpy_shortest_paths.py
    AOTC_BACKEND=emulator python examples/numpy_shortest_paths.py   # no GPU needed
"""

from __future__ import annotations

import numpy as np

from aotc import reference, tropical

rng = np.random.default_rng(0)
n = 64
weights = np.where(rng.random((n, n)) < 0.08, rng.integers(1, 10, (n, n)), np.inf).astype(np.float32)
np.fill_diagonal(weights, 0)

distances = weights
for _ in range(int(np.ceil(np.log2(n)))):
    distances, via = tropical.matmul_argmax(distances, distances, "minplus")

assert np.array_equal(distances, reference.matmul(distances, weights, "minplus")), "not a fixed point"
reachable = np.isfinite(distances)
print(f"{reachable.sum()} of {n * n} pairs connected; longest shortest path {distances[reachable].max():.0f}")
print(f"0 -> 1: distance {distances[0, 1]}, through node {via[0, 1]} in the last squaring")
