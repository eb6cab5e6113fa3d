"""Max-plus products in a PyTorch model, with gradients: a learnable Viterbi score.

The best path score through a chain of transition matrices is a chain of
max-plus products; its gradient flows to exactly the transitions on the best
path. CPU tensors run on the emulator backend, CUDA tensors on the GPU.

    AOTC_BACKEND=emulator python examples/torch_viterbi.py
"""

from __future__ import annotations

import torch

from aotc import tropical

torch.manual_seed(0)
states, steps = 8, 5
transitions = torch.randn(steps, states, states, requires_grad=True)
start = torch.zeros(1, states)

scores = start
for step in range(steps):
    scores = tropical.matmul(scores, transitions[step], "maxplus")  # (1, states)
best = scores.max()
best.backward()

used = (transitions.grad != 0).sum().item()
print(f"best path score {best.item():.3f}; gradient reaches {used} transitions (one per step: {steps})")
