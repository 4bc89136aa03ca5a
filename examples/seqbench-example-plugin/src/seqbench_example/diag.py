"""A diagonal linear recurrent backbone: the reference for a plugin model with stability hooks."""

from __future__ import annotations

import torch
from torch import nn

from seqbench.models.base import Backbone


class DiagonalRNN(Backbone):
    """h_t = a ⊙ h_{t−1} + B x_t (a real vector, so the recurrence's gain is max |a|), then
    features relu(W h_t + b). Its truncation error after k steps decays like max|a|^k, so
    `--stable --lam λ` (clamping a to [−λ, λ]) makes it λ-contractive exactly."""

    recurrent = True

    def __init__(self, in_dim: int, args):
        super().__init__()
        H = args.hidden
        self.inp = nn.Linear(in_dim, H)
        # spread the memory over time scales: a from 0.5 to 0.99
        self.a = nn.Parameter(torch.linspace(0.5, 0.99, H))
        self.mix = nn.Linear(H, H)
        self.out_dim = H

    def recurrent_weights(self):
        return {"a": self.a}

    def project_(self, lam: float) -> float:
        with torch.no_grad():
            self.a.clamp_(-lam, lam)
        return self.stability_bound()

    def stability_bound(self) -> float:
        return float(self.a.detach().abs().max())

    def spectra(self) -> dict[str, float]:
        return {"spectral_norm": self.stability_bound()}

    def forward(self, x, state=None):
        B, T, _ = x.shape
        u = self.inp(x)
        h = u.new_zeros(B, self.out_dim) if state is None else state
        out = []
        for t in range(T):
            h = self.a * h + u[:, t]
            out.append(h)
        hs = torch.stack(out, 1)
        return torch.relu(self.mix(hs)), h
