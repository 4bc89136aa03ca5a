"""The Linear Recurrent Unit (Orvieto et al. 2023): a complex diagonal recurrence, |λ| < 1 by
construction, in the residual blocks of its reference code; it runs on the element-wise scan
(ops/scan) and returns its per-layer states."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.models.base import Backbone, ModelArgs, at_least_fp32
from seqbench.ops.scan import scan

# The LRU's initialisation, from the reference code everyone reuses (NicolasZucchet/minimal-LRU,
# lru/model.py and run_train.py; the paper publishes no code): |λ|² uniform on [r_min², r_max²]
# with r_min 0 and r_max 1, the phase uniform on [0, max_phase] with max_phase 6.28.
LRU_R_MIN, LRU_R_MAX, LRU_MAX_PHASE = 0.0, 1.0, 6.28


def _flax_dense(in_features: int, out_features: int) -> nn.Linear:
    """flax.linen.Dense's default init, which the LRU's reference code keeps: weights LeCun
    normal (a normal truncated at ±2σ, rescaled to std 1/√fan_in), bias 0."""
    layer = nn.Linear(in_features, out_features)
    std = 1.0 / math.sqrt(in_features) / 0.87962566103423978  # flax's truncation correction
    with torch.no_grad():
        nn.init.trunc_normal_(layer.weight, std=std, a=-2 * std, b=2 * std)
        layer.bias.zero_()
    return layer


def _uniform_open(n: int) -> torch.Tensor:
    """U(0, 1) without its endpoint 0 (whose logarithm the inits take)."""
    return torch.rand(n).clamp_min(1e-7)


class LRULayer(nn.Module):
    """h_t = Λ h_{t−1} + (γ ⊙ B) x_t, y_t = Re(C h_t) + D ⊙ x_t, with
    λ_j = exp(−exp(ν_j) + i·exp(θ_j)) and γ_j = √(1 − |λ_j|²) at init (trained after)."""

    def __init__(self, H: int, N: int, backend: str):
        super().__init__()
        self.backend = backend
        self.nu_log = nn.Parameter(torch.empty(N))
        self.theta_log = nn.Parameter(torch.empty(N))
        self.gamma_log = nn.Parameter(torch.empty(N))
        self.B_re = nn.Parameter(torch.empty(N, H))
        self.B_im = nn.Parameter(torch.empty(N, H))
        self.C_re = nn.Parameter(torch.empty(H, N))
        self.C_im = nn.Parameter(torch.empty(H, N))
        self.D = nn.Parameter(torch.empty(H))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        N, H = self.B_re.shape
        with torch.no_grad():
            u = _uniform_open(N)
            self.nu_log.copy_(
                torch.log(-0.5 * torch.log(u * (LRU_R_MAX**2 - LRU_R_MIN**2) + LRU_R_MIN**2))
            )
            self.theta_log.copy_(torch.log(LRU_MAX_PHASE * _uniform_open(N)))
            self.gamma_log.copy_(0.5 * torch.log1p(-(self.modulus() ** 2)))
            for p, scale in (
                (self.B_re, 2 * H),
                (self.B_im, 2 * H),
                (self.C_re, N),
                (self.C_im, N),
            ):
                p.normal_(0.0, 1.0 / math.sqrt(scale))
            self.D.normal_()

    def modulus(self) -> torch.Tensor:
        """|λ_j| = exp(−exp(ν_j)) < 1 for every real ν_j."""
        return torch.exp(-torch.exp(self.nu_log))

    def eigenvalues(self) -> torch.Tensor:
        return torch.polar(self.modulus(), torch.exp(self.theta_log))

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None) -> tuple[torch.Tensor, Any]:
        g = torch.exp(self.gamma_log)[:, None]
        # the recurrence in at least fp32 (complex64) whatever autocast gives the projections
        wide = at_least_fp32(x.dtype)
        bu = torch.complex((x @ (self.B_re * g).T).to(wide), (x @ (self.B_im * g).T).to(wide))
        h = scan(self.eigenvalues(), bu, h0, backend=self.backend)
        y = h.real @ self.C_re.T - h.imag @ self.C_im.T + self.D * x  # Re(C h) + D x
        return y, h[:, -1]


class LRU(Backbone):
    """The Linear Recurrent Unit (Orvieto et al. 2023) as the reference code stacks it: a
    linear encoder, then per layer x + GLU(GELU(LRU(LayerNorm(x)))) (pre-norm, as its
    run_train.py sets; layer norm where it uses batch norm, whose statistics over the whole
    sequence would let an output see later inputs in training). |λ_j| < 1 by construction;
    --stable --lam λ holds every |λ_j| ≤ λ (ν_j ≥ log(−log λ))."""

    recurrent = True

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        H, N = args.hidden, args.d_state or 64  # the family's default (ModelSpec)
        # flax's defaults, as the reference code keeps them: Dense's init, LayerNorm's ε
        self.encoder = _flax_dense(in_dim, H)
        self.norms = nn.ModuleList(nn.LayerNorm(H, eps=1e-6) for _ in range(args.layers))
        self.lrus = nn.ModuleList(LRULayer(H, N, args.backend) for _ in range(args.layers))
        self.out1 = nn.ModuleList(_flax_dense(H, H) for _ in range(args.layers))
        self.out2 = nn.ModuleList(_flax_dense(H, H) for _ in range(args.layers))
        self.drop = nn.Dropout(args.dropout)
        self.out_dim = H

    @property
    def state_size(self) -> int:
        return sum(2 * lru.nu_log.numel() for lru in self.lrus)  # N complex numbers a layer

    @property
    def recurrent_depth(self) -> int:
        return len(self.lrus)

    def recurrent_weights(self) -> dict[str, torch.Tensor]:
        return {f"abs_lambda_l{i}": lru.modulus() for i, lru in enumerate(self.lrus)}

    def project_(self, lam: float) -> float:
        floor = math.log(-math.log(lam))
        with torch.no_grad():
            for lru in self.lrus:
                lru.nu_log.clamp_(min=floor)
        return self.stability_bound()

    def stability_bound(self) -> float:
        """max |λ_j| over the layers: each layer's recurrence contracts by this per step."""
        return max(float(lru.modulus().detach().max()) for lru in self.lrus)

    def spectra(self) -> dict[str, float]:
        r = self.stability_bound()
        return {"max_abs_lambda": r, "spectral_radius": r, "spectral_norm": r, "decay_bound": r}

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        x = self.encoder(x)
        states = []
        for i, lru in enumerate(self.lrus):
            z, h = lru(self.norms[i](x), None if state is None else state[i])
            z = self.drop(F.gelu(z, approximate="tanh"))  # flax's nn.gelu is the tanh form
            z = self.out1[i](z) * torch.sigmoid(self.out2[i](z))
            x = x + self.drop(z)
            states.append(h)
        return x, tuple(states)
