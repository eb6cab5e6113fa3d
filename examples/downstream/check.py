"""Run the downstream library next to aotc's own, in one process, against the reference.

    AOTC_BACKEND=emulator python examples/downstream/check.py
"""

from __future__ import annotations

import numpy as np

import bottleneck
from aotc import reference, tropical

MAXMIN = reference.semiring_from_ops("max", "min", "-inf", "+inf", name="maxmin")
rng = np.random.default_rng(7)
capacity = rng.uniform(0, 10, size=(37, 37)).astype(np.float32)

# The downstream library, through its own handle.
widest = bottleneck.widest_paths(capacity, hops=3)
expected = reference.matmul(reference.matmul(capacity, capacity, MAXMIN), capacity, MAXMIN)
np.testing.assert_array_equal(widest, expected)
value, k = tropical.over(bottleneck.kernels()).matmul_argmax(capacity, capacity, "maxmin")
np.testing.assert_array_equal(value, reference.matmul(capacity, capacity, MAXMIN))
np.testing.assert_array_equal(k, reference.matmul_argmax(capacity, capacity, MAXMIN)[1])

# aotc's built-in library, in the same process, unaffected.
np.testing.assert_array_equal(tropical.matmul(capacity, capacity, "maxplus"), reference.matmul(capacity, capacity, "maxplus"))
print(f"downstream: {len(bottleneck.kernels())} bottleneck kernels and the built-in tropical library agree with aotc.reference")
