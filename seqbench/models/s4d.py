"""S4D-Lin (Gu et al. 2022): a diagonal SSM trained as an FFT convolution and run as a scan
(ops/scan) on a carried state."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.models.base import Backbone, ModelArgs, at_least_fp32
from seqbench.ops.scan import scan

# S4D-Lin (state-spaces/s4, models/s4/s4d.py): log Δ uniform in [log 0.001, log 0.1]
S4D_DT_MIN, S4D_DT_MAX = 0.001, 0.1


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
        u_f = torch.fft.rfft(u.transpose(1, 2).to(at_least_fp32(u.dtype)), n=2 * T)
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
