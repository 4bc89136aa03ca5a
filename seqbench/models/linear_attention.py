"""Causal linear attention (Katharopoulos et al. 2020): a running sum over elu + 1 features, in
a pre-norm transformer block; a recurrence, not an SSM, and not on the scan."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.models.base import Backbone, ModelArgs


def elu_feature(x: torch.Tensor) -> torch.Tensor:
    """Katharopoulos et al.'s feature map φ(x) = elu(x) + 1 (positive)."""
    return F.elu(x) + 1


class LinearAttention(Backbone):
    """Causal linear attention (Katharopoulos et al. 2020) in a pre-norm transformer block:
    per head, S_t = S_{t−1} + φ(k_t) v_tᵀ and z_t = z_{t−1} + φ(k_t), the output
    φ(q_t)ᵀ S_t / (φ(q_t)ᵀ z_t + ε); then a feed-forward layer, each with a residual. A running
    sum: no decay, an unbounded context, and a fixed state of heads × (d² + d) a layer."""

    recurrent = True
    eps = 1e-6

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        H, L = args.hidden, args.layers
        self.heads = args.heads
        self.encoder = nn.Linear(in_dim, H)
        self.qkv = nn.ModuleList(nn.Linear(H, 3 * H) for _ in range(L))
        self.proj = nn.ModuleList(nn.Linear(H, H) for _ in range(L))
        self.norm1 = nn.ModuleList(nn.LayerNorm(H) for _ in range(L))
        self.norm2 = nn.ModuleList(nn.LayerNorm(H) for _ in range(L))
        self.ff = nn.ModuleList(
            nn.Sequential(nn.Linear(H, 2 * H), nn.GELU(), nn.Linear(2 * H, H)) for _ in range(L)
        )
        self.drop = nn.Dropout(args.dropout)
        self.out_dim = H

    @property
    def state_size(self) -> int:
        d = self.out_dim // self.heads
        return len(self.qkv) * self.heads * (d * d + d)

    def _attend(self, x, i, state):
        B, T, H = x.shape
        h, d = self.heads, H // self.heads
        q, k, v = (t.reshape(B, T, h, d) for t in self.qkv[i](x).chunk(3, dim=-1))
        q, k = elu_feature(q), elu_feature(k)
        S = torch.cumsum(k[..., :, None] * v[..., None, :], dim=1)  # (B, T, h, d, d)
        z = torch.cumsum(k, dim=1)  # (B, T, h, d)
        if state is not None:
            S, z = S + state[0][:, None], z + state[1][:, None]
        num = torch.einsum("bthd,bthde->bthe", q, S)
        den = (q * z).sum(-1, keepdim=True) + self.eps
        out = self.proj[i]((num / den).reshape(B, T, H))
        return out, (S[:, -1], z[:, -1])

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        x = self.encoder(x)
        states = []
        for i in range(len(self.qkv)):
            a, s = self._attend(self.norm1[i](x), i, None if state is None else state[i])
            x = x + self.drop(a)
            x = x + self.drop(self.ff[i](self.norm2[i](x)))
            states.append(s)
        return x, tuple(states)
