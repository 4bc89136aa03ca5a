"""Today's recurrences: the LRU, S4D, a selective SSM (Mamba) and causal linear attention.

Each is a stack of residual blocks over a linear encoder, as in its reference code; the
diagonal recurrences run through the one element-wise scan (ops/scan), and every backbone
returns its per-layer states, so truncated backpropagation and a carried state work as for
the RNNs. `state_size` is what each carries between steps, in real numbers (a complex one
counts twice), summed over the layers.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.models.base import Backbone, ModelArgs
from seqbench.ops.scan import scan

# The LRU's initialisation, from the reference code everyone reuses (NicolasZucchet/minimal-LRU,
# lru/model.py and run_train.py; the paper publishes no code): |λ|² uniform on [r_min², r_max²]
# with r_min 0 and r_max 1, the phase uniform on [0, max_phase] with max_phase 6.28.
LRU_R_MIN, LRU_R_MAX, LRU_MAX_PHASE = 0.0, 1.0, 6.28
# S4D-Lin (state-spaces/s4, models/s4/s4d.py): log Δ uniform in [log 0.001, log 0.1]
S4D_DT_MIN, S4D_DT_MAX = 0.001, 0.1
# Mamba (state-spaces/mamba, mamba_ssm/modules/mamba_simple.py): its block's defaults
MAMBA_D_CONV, MAMBA_EXPAND = 4, 2
MAMBA_DT_MIN, MAMBA_DT_MAX, MAMBA_DT_FLOOR = 0.001, 0.1, 1e-4


def _at_least_fp32(dtype: torch.dtype) -> torch.dtype:
    """fp32 for bf16 and fp16 (autocast), the dtype itself for fp32 and fp64 (stress)."""
    return torch.promote_types(dtype, torch.float32)


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
        wide = _at_least_fp32(x.dtype)
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


class S4DLayer(nn.Module):
    """S4D (Gu et al. 2022; state-spaces/s4 models/s4/s4d.py): per channel h, N/2 complex modes
    A_n = −exp(log_A_real) + i·A_imag (S4D-Lin: −½ + iπn), ZOH with step Δ_h: Ā = exp(ΔA),
    B̄ = (exp(ΔA) − 1)/A (B folded into C), y = 2·Re(C h) + D u, then GELU and a GLU output
    projection. Trained as a long convolution (K_l = 2·Re Σ_n C_n B̄_n Ā_n^l, by FFT); evaluated,
    and run with a carried state, as the recurrence (the scan)."""

    def __init__(self, H: int, N: int, dropout: float, backend: str):
        super().__init__()
        self.backend = backend
        n = max(N // 2, 1)
        self.log_dt = nn.Parameter(
            torch.rand(H) * (math.log(S4D_DT_MAX) - math.log(S4D_DT_MIN)) + math.log(S4D_DT_MIN)
        )
        self.C = nn.Parameter(torch.view_as_real(torch.randn(H, n, dtype=torch.cfloat)))
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(H, n)))
        self.A_imag = nn.Parameter(math.pi * torch.arange(n).float().repeat(H, 1))
        self.D = nn.Parameter(torch.randn(H))
        self.drop = nn.Dropout(dropout)
        self.output_linear = nn.Linear(H, 2 * H)

    def _dtA(self) -> tuple[torch.Tensor, torch.Tensor]:
        A = torch.complex(-torch.exp(self.log_A_real), self.A_imag)
        return A * torch.exp(self.log_dt)[:, None], A

    def discrete(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(Ā, B̄, C), each (H, N/2) complex."""
        dtA, A = self._dtA()
        return torch.exp(dtA), (torch.exp(dtA) - 1) / A, torch.view_as_complex(self.C)

    def kernel(self, L: int) -> torch.Tensor:
        """K (H, L): the convolution kernel, the recurrence's impulse response (Ā^l as
        exp(l·ΔA), as the reference computes it: exact where Ā underflows to 0)."""
        dtA, _ = self._dtA()
        _, b, c = self.discrete()
        powers = torch.exp(dtA[..., None] * torch.arange(L, device=dtA.device))
        return 2 * torch.einsum("hn,hnl->hl", c * b, powers).real

    def convolve(self, u: torch.Tensor) -> torch.Tensor:
        """y (B, T, H) from u (B, T, H) by FFT, from a zero state."""
        T = u.shape[1]
        k_f = torch.fft.rfft(self.kernel(T), n=2 * T)  # (H, T+1)
        u_f = torch.fft.rfft(u.transpose(1, 2).to(_at_least_fp32(u.dtype)), n=2 * T)
        return torch.fft.irfft(u_f * k_f, n=2 * T)[..., :T].transpose(1, 2)

    def recur(self, u: torch.Tensor, h0: torch.Tensor | None) -> tuple[torch.Tensor, Any]:
        a, b, c = self.discrete()
        B, T, H = u.shape
        drive = (b[None, None] * u[..., None]).reshape(B, T, -1)  # (B, T, H·N/2)
        h = scan(a.reshape(-1), drive, h0, backend=self.backend)
        y = 2 * (h.reshape(B, T, H, -1) * c).sum(-1).real
        return y, h[:, -1]

    def forward(self, u, h0, conv: bool) -> tuple[torch.Tensor, Any]:
        y, h = (self.convolve(u), None) if conv else self.recur(u, h0)
        y = self.drop(F.gelu(y + u * self.D))
        return F.glu(self.output_linear(y), dim=-1), h


class S4D(Backbone):
    """The S4 repository's example model (example.py): a linear encoder, then per layer
    x = LayerNorm(x + dropout(S4D(x))) (post-norm, its default). In training mode without a
    carried state it convolves (FFT); in eval mode, or with a state (truncated
    backpropagation), it runs the same weights as the recurrence: tests hold the two equal."""

    recurrent = True

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        H = args.hidden
        self.encoder = nn.Linear(in_dim, H)
        self.layers_ = nn.ModuleList(
            S4DLayer(H, args.d_state or 64, args.dropout, args.backend) for _ in range(args.layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(H) for _ in range(args.layers))
        self.drop = nn.Dropout(args.dropout)
        self.out_dim = H
        self.force_recurrence = False  # tests: run the recurrence in training mode too

    @property
    def state_size(self) -> int:
        return sum(2 * layer.log_A_real.numel() for layer in self.layers_)

    @property
    def recurrent_depth(self) -> int:
        return len(self.layers_)

    def recurrent_weights(self) -> dict[str, torch.Tensor]:
        return {f"abs_abar_l{i}": layer.discrete()[0].abs() for i, layer in enumerate(self.layers_)}

    def stability_bound(self) -> float:
        """max |Ā| = max exp(Δ·Re A) < 1: the slowest mode's decay per step."""
        return max(float(w.detach().max()) for w in self.recurrent_weights().values())

    def spectra(self) -> dict[str, float]:
        r = self.stability_bound()
        return {"max_abs_abar": r, "spectral_radius": r, "decay_bound": r}

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        conv = self.training and state is None and not self.force_recurrence
        x = self.encoder(x)
        states = []
        for i, layer in enumerate(self.layers_):
            z, h = layer(x, None if state is None else state[i], conv)
            x = self.norms[i](x + self.drop(z))
            states.append(h)
        return x, (None if conv else tuple(states))


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
        x = self.encoder(x)
        states = []
        for i, mixer in enumerate(self.mixers):
            y, s = mixer(self.norms[i](x), None if state is None else state[i])
            x = x + y
            states.append(s)
        return self.norm_f(x), tuple(states)


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


__all__ = ["LRU", "S4D", "LinearAttention", "Mamba"]
