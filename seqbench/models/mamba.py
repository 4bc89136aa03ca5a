"""The selective SSM (Gu & Dao 2023) in plain PyTorch: mamba_simple.Mamba's block, its decay
exp(Δ·A) depending on the input, on the element-wise scan (ops/scan)."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.models.base import Backbone, ModelArgs
from seqbench.ops.scan import scan

# Mamba (state-spaces/mamba, mamba_ssm/modules/mamba_simple.py): its block's defaults
MAMBA_D_CONV, MAMBA_EXPAND = 4, 2
MAMBA_DT_MIN, MAMBA_DT_MAX, MAMBA_DT_FLOOR = 0.001, 0.1, 1e-4


class MambaMixer(nn.Module):
    """The selective SSM block of mamba_simple.Mamba in plain PyTorch: in_proj to (x, z), a
    causal depthwise conv (d_conv 4) and SiLU on x, input-dependent Δ = softplus(dt_proj(·) +
    bias), B and C; h_t = exp(Δ_t A) h_{t−1} + Δ_t B_t x_t with A = −exp(A_log), A_log
    initialised to log(1…d_state); y = (C_t h_t + D x_t) · SiLU(z); out_proj. Δ's bias is the
    inverse softplus of a log-uniform draw in [0.001, 0.1] (floor 1e-4)."""

    def __init__(self, H: int, d_state: int, backend: str):
        super().__init__()
        d_inner = MAMBA_EXPAND * H
        self.dt_rank = math.ceil(H / 16)
        self.d_state, self.backend = d_state, backend
        self.in_proj = nn.Linear(H, 2 * d_inner, bias=False)
        self.conv1d = nn.Conv1d(d_inner, d_inner, MAMBA_D_CONV, groups=d_inner)
        self.x_proj = nn.Linear(d_inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, d_inner)
        self.A_log = nn.Parameter(
            torch.log(torch.arange(1, d_state + 1).float()).repeat(d_inner, 1)
        )
        self.D = nn.Parameter(torch.ones(d_inner))
        self.out_proj = nn.Linear(d_inner, H, bias=False)
        self.max_decay = math.nan  # the largest exp(Δ·A) of the last forward in eval mode
        with torch.no_grad():
            std = self.dt_rank**-0.5
            self.dt_proj.weight.uniform_(-std, std)
            lo, hi = math.log(MAMBA_DT_MIN), math.log(MAMBA_DT_MAX)
            dt = torch.exp(torch.rand(d_inner) * (hi - lo) + lo).clamp(min=MAMBA_DT_FLOOR)
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus⁻¹(dt)

    def forward(self, u: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        B, T, _ = u.shape
        x, z = self.in_proj(u).chunk(2, dim=-1)  # (B, T, d_inner) each
        d_inner = x.shape[-1]
        conv_state, h0 = state if state is not None else (None, None)
        if conv_state is None:
            conv_state = x.new_zeros(B, d_inner, MAMBA_D_CONV - 1)
        xc = torch.cat([conv_state, x.transpose(1, 2)], dim=-1)  # (B, d_inner, d_conv−1+T)
        x = F.silu(self.conv1d(xc)).transpose(1, 2)  # (B, T, d_inner): causal, no padding
        dt, Bm, Cm = self.x_proj(x).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(F.linear(dt, self.dt_proj.weight) + self.dt_proj.bias)
        A = -torch.exp(self.A_log)  # (d_inner, d_state)
        decay = torch.exp(delta[..., None] * A)  # (B, T, d_inner, d_state)
        if T and not self.training:  # for stress; training never pays for the reduction
            self.max_decay = float(decay.detach().max())
        drive = delta[..., None] * Bm[:, :, None, :] * x[..., None]
        h = scan(decay.reshape(B, T, -1), drive.reshape(B, T, -1), h0, backend=self.backend)
        y = (h.reshape(B, T, d_inner, -1) * Cm[:, :, None, :]).sum(-1) + self.D * x
        y = y * F.silu(z)
        return self.out_proj(y), (xc[..., xc.shape[-1] - (MAMBA_D_CONV - 1) :], h[:, -1])


class Mamba(Backbone):
    """A selective SSM (Gu & Dao 2023) as MambaLMHeadModel stacks it, in plain PyTorch: a
    linear encoder, per layer x + Mixer(RMSNorm(x)), a final RMSNorm; out_proj rescaled by
    1/√layers (its _init_weights). d_state 16, d_conv 4, expand 2 as the reference block.
    Its decay exp(Δ_t A) depends on the input: there is no weight bound to project, so
    --stable does not apply; `stress` measures what the inputs make of it."""

    recurrent = True

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        H = args.hidden
        self.encoder = nn.Linear(in_dim, H)
        self.mixers = nn.ModuleList(
            MambaMixer(H, args.d_state or 16, args.backend) for _ in range(args.layers)
        )
        self.norms = nn.ModuleList(nn.RMSNorm(H, eps=1e-5) for _ in range(args.layers))
        self.norm_f = nn.RMSNorm(H, eps=1e-5)
        self.out_dim = H
        with torch.no_grad():
            for m in self.mixers:
                m.out_proj.weight.div_(math.sqrt(args.layers))

    @property
    def state_size(self) -> int:
        """Zoology's count: d_state × channels (d_inner) per layer. The carried state also
        holds the conv's last d_conv − 1 inputs per channel."""
        return sum(m.A_log.numel() for m in self.mixers)

    @property
    def recurrent_depth(self) -> int:
        return len(self.mixers)

    def max_decay(self) -> float:
        """The largest per-step decay exp(Δ_t·A) any layer applied in the last forward in eval
        mode (nan before one)."""
        return max(m.max_decay for m in self.mixers)

    def spectra(self) -> dict[str, float]:
        """The largest exp(Δ_t·A) over the inputs of the last forward (for `stress`, the
        sequences it measured): the gradient against lag and the truncation error of one
        layer fall at no slower than this per step (tests/models/test_ssm.py)."""
        return {"max_decay": self.max_decay(), "decay_bound": self.max_decay()}

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        # the residual stream in the weights' dtype (fp32 under bf16 autocast), as the
        # reference's Block with residual_in_fp32=True (MambaConfig's default), which norms
        # residual.to(norm.weight.dtype): the norms never see a bf16 input beside an fp32
        # weight (torch's unfused path, which warns)
        x = self.encoder(x).to(self.norm_f.weight.dtype)
        states = []
        for i, mixer in enumerate(self.mixers):
            y, s = mixer(self.norms[i](x), None if state is None else state[i])
            x = x + y
            states.append(s)
        return self.norm_f(x), tuple(states)
