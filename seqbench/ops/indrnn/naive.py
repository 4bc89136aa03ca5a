"""Reference IndRNN recurrence in plain PyTorch (autograd through a Python loop over time).

h_t = relu(x_t + u ⊙ h_{t-1}), h_0 given or zero (Li et al. 2018, arXiv 1803.04831).
"""

from __future__ import annotations

import torch


def indrnn_naive(x: torch.Tensor, u: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """x: (B, T, N) pre-activations (W x_t + b already applied); u: (N,); h0: (B, N) or None.

    Returns h: (B, T, N) in fp32 (the state is kept in fp32 whatever the input dtype).
    """
    B, T, N = x.shape
    h = x.new_zeros(B, N, dtype=torch.float32) if h0 is None else h0.float()
    u = u.float()
    out = []
    for t in range(T):
        h = torch.relu(x[:, t].float() + u * h)  # (B, N)
        out.append(h)
    if not out:
        return x.new_zeros(B, 0, N, dtype=torch.float32)
    return torch.stack(out, dim=1)  # (B, T, N)
