"""The reference: h_t = a_t ⊙ h_{t−1} + b_t as a Python loop that autograd differentiates.

Slow and obviously right; every other backend is tested against it (values and gradients),
as flash-linear-attention keeps a `naive.py` beside each fused op."""

from __future__ import annotations

import torch


def scan_naive(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """a: (N,) constant or (B, T, N) per step; b: (B, T, N); h0: (B, N) or None (zeros).
    Real or complex (a, b and h0 of one kind). Returns h: (B, T, N)."""
    B, T, N = b.shape
    h = h0 if h0 is not None else b.new_zeros(B, N)
    out = []
    for t in range(T):
        h = (a if a.dim() == 1 else a[:, t]) * h + b[:, t]
        out.append(h)
    return torch.stack(out, dim=1) if out else b.new_zeros(B, 0, N)
