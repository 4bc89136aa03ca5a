"""torch.nn's recurrent cells as backbones: the Elman RNN, LSTM and GRU (its fused kernels: cuDNN
on GPU, oneDNN on CPU) and the IRNN (an RNN with ReLU and identity init); their stability
projection is a clip of the recurrent matrices' singular values. IndRNN is models/indrnn.py."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from seqbench.models.base import Backbone, ModelArgs


class TorchRecurrent(Backbone):
    """rnn: h_t = φ(W h_{t-1} + U x_t + b), φ = tanh or relu; lstm, gru: the usual gated cells.

    Multi-layer via torch.nn's `num_layers`. The recurrent matrices are `weight_hh_l{k}`
    (LSTM gates packed i, f, g, o; GRU r, z, n).
    """

    recurrent = True

    def __init__(self, kind: str, in_dim: int, args: ModelArgs):
        super().__init__()
        cls = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[kind]
        kw = {"nonlinearity": args.nonlinearity} if kind == "rnn" else {}
        self.kind = kind
        self.rnn = cls(
            in_dim,
            args.hidden,
            num_layers=args.layers,
            batch_first=True,
            dropout=args.dropout if args.layers > 1 else 0.0,
            **kw,
        )
        self.out_dim = args.hidden
        self.forget_bias = args.forget_bias
        # --stable on an LSTM (resolution sets forget_cap only there): f = forget_cap · σ(·),
        # by seqbench's own loop (torch's fused LSTM has no such gate); None: torch.nn's LSTM
        self.forget_cap = args.forget_cap if kind == "lstm" else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.rnn.reset_parameters()
        if self.kind == "lstm" and self.forget_bias:
            H = self.out_dim
            with torch.no_grad():
                for name, p in self.rnn.named_parameters():
                    if name.startswith("bias_ih"):
                        p[H : 2 * H].fill_(self.forget_bias)  # gate order i, f, g, o
                    elif name.startswith("bias_hh"):
                        p[H : 2 * H].zero_()

    @property
    def recurrent_depth(self) -> int:
        return self.rnn.num_layers

    @property
    def state_size(self) -> int:
        return self.rnn.num_layers * self.out_dim * (2 if self.kind == "lstm" else 1)

    def recurrent_weights(self) -> dict[str, torch.Tensor]:
        return {n: p for n, p in self.rnn.named_parameters() if n.startswith("weight_hh")}

    def project_(self, lam: float) -> float:
        """rnn: clamp the singular values of each W to ≤ λ (SVD), so ‖W‖₂ ≤ λ and, with a
        1-Lipschitz φ, h ↦ φ(W h + U x) is λ-contractive. lstm (its forget gate capped at
        forget_cap, set by --stable): rescale each layer's four recurrent blocks together so
        that forget_cap + lstm_gain(W, forget_cap) ≤ λ, the LSTM condition that makes the
        step (c, h) ↦ (c', h') λ-contractive for every input."""
        ws = self.recurrent_weights().values()
        if self.kind == "rnn":
            return max(spectral_clip_(w, lam) for w in ws)
        if self.kind == "lstm":
            cap = self.forget_cap
            if cap is None or not cap < lam:
                raise ValueError(f"the stable LSTM needs a forget cap below λ = {lam}, got {cap}")
            with torch.no_grad():
                for w in ws:
                    gain = lstm_gain(w, cap)
                    if gain > lam - cap:  # a hair inside, so float32 rounding stays ≤ λ
                        w.mul_((lam - cap) / gain * (1 - 1e-6))
            return self.stability_bound()
        return super().project_(lam)

    def stability_bound(self) -> float | None:
        """max ‖W‖₂ (rnn); forget_cap + max lstm_gain (an LSTM with a capped forget gate: its
        per-step contraction); None for an uncapped LSTM (f can reach 1, so no bound holds)
        and for the GRU (no condition is enforced)."""
        ws = self.recurrent_weights().values()
        if self.kind == "rnn":
            return max(spectral_norm(w) for w in ws)
        if self.kind == "lstm" and self.forget_cap is not None:
            return self.forget_cap + max(lstm_gain(w, self.forget_cap) for w in ws)
        return None

    def spectra(self) -> dict[str, float]:
        ws = self.recurrent_weights().values()
        out = {"spectral_norm": max(spectral_norm(w) for w in ws)}
        if self.kind == "rnn":
            out["spectral_radius"] = max(spectral_radius(w) for w in ws)
        if self.kind == "lstm":
            out["lstm_bound"] = max(lstm_bound(w) for w in ws)
            bound = self.stability_bound()  # None without a forget cap: no condition holds
            out["lstm_condition_holds"] = float(bound is not None and bound < 1.0)
        return out

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        if self.forget_cap is not None:
            return self._capped_lstm(x, state)
        y, state = self.rnn(x, state)  # (B, T, H)
        return y, state

    def _capped_lstm(self, x: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """torch.nn.LSTM's recurrence on its own parameters (gates i, f, g, o), with the
        forget gate f = forget_cap · σ(z_f); the same state format ((L, B, H) h and c)."""
        B, T, _ = x.shape
        L, H, rnn = self.rnn.num_layers, self.out_dim, self.rnn
        if state is None:
            zero = x.new_zeros(L, B, H)
            state = (zero, zero)
        h_last, c_last = [], []
        out = x
        for layer in range(L):
            w_hh = getattr(rnn, f"weight_hh_l{layer}")
            pre = nn.functional.linear(
                out,
                getattr(rnn, f"weight_ih_l{layer}"),
                getattr(rnn, f"bias_ih_l{layer}") + getattr(rnn, f"bias_hh_l{layer}"),
            )  # (B, T, 4H): every step's input part in one matmul
            h, c = state[0][layer], state[1][layer]
            steps = []
            for t in range(T):
                i, f, g, o = (pre[:, t] + h @ w_hh.T).chunk(4, dim=-1)
                c = self.forget_cap * torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                steps.append(h)
            out = torch.stack(steps, dim=1) if steps else x.new_zeros(B, 0, H)
            h_last.append(h)
            c_last.append(c)
            if layer < L - 1 and rnn.dropout and self.training:
                out = nn.functional.dropout(out, rnn.dropout, training=True)
        return out, (torch.stack(h_last), torch.stack(c_last))


class IRNN(TorchRecurrent):
    """IRNN (Le, Jaitly & Hinton 2015, arXiv 1504.00941): a ReLU RNN whose recurrent matrix
    starts as the identity and whose biases start at zero, input weights N(0, 0.001²), so at
    init a state persists unchanged through steps with no input (the IndRNN paper's baseline).
    Everything else (training, --stable's spectral clip) is the rnn family's."""

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__("rnn", in_dim, args.with_(nonlinearity="relu"))

    def reset_parameters(self) -> None:
        with torch.no_grad():
            for name, p in self.rnn.named_parameters():
                if name.startswith("weight_hh"):
                    p.copy_(torch.eye(p.shape[0], dtype=p.dtype))
                elif name.startswith("weight_ih"):
                    p.normal_(0.0, 0.001)
                else:
                    p.zero_()


def _gate_norms(w_hh: torch.Tensor) -> tuple[float, float, float, float]:
    """‖W_i‖∞, ‖W_f‖∞, ‖W_g‖∞, ‖W_o‖∞ (max row L1 norm) of a packed (4H, H) LSTM matrix."""
    return tuple(float(w.abs().sum(dim=1).max()) for w in w_hh.detach().double().chunk(4, 0))


def lstm_bound(w_hh: torch.Tensor) -> float:
    """S = ‖W_i‖∞/4 + ‖W_f‖∞/4 + ‖W_g‖∞ + ‖W_o‖∞/4 of a packed (4H, H) LSTM matrix: how far
    the gates move for a change of h. Not a stability condition on its own: the cell's own
    path c_{t−1} → c_t has gain f, which reaches 1 (see lstm_gain)."""
    wi, wf, wg, wo = _gate_norms(w_hh)
    return wi / 4 + wf / 4 + wg + wo / 4


def lstm_gain(w_hh: torch.Tensor, cap: float) -> float:
    """B = ‖W_i‖∞/4 + cap·‖W_f‖∞ / (4(1 − cap)) + ‖W_g‖∞ + ‖W_o‖∞/4 for an LSTM whose forget
    gate is f = cap·σ(·), cap < 1.

    With σ' ≤ 1/4, tanh' ≤ 1, |i|, |o|, |g| ≤ 1 and a cell that, from a zero start, never
    leaves |c| ≤ 1/(1 − cap), two states (c, h), (c', h') fed the same input, whatever it is,
    move to states that differ, in the max norm over c and h, by at most (cap + B) times their
    difference: ‖Δc'‖ ≤ cap‖Δc‖ + (‖W_i‖/4 + cap‖W_f‖/(4(1 − cap)) + ‖W_g‖)‖Δh‖ and
    ‖Δh'‖ ≤ ‖Δc'‖ + ‖W_o‖/4 ‖Δh‖. So cap + B ≤ λ < 1 makes the LSTM λ-contractive: Miller &
    Hardt's LSTM condition (a recurrent-weight bound with the forget gate bounded away from
    1), in ∞-norms. What it costs: no unit holds a value longer than about 1/(1 − cap) steps."""
    wi, wf, wg, wo = _gate_norms(w_hh)
    return wi / 4 + cap * wf / (4 * (1 - cap)) + wg + wo / 4


def spectral_clip_(w: torch.Tensor, lam: float) -> float:
    """Clamp the singular values of w to at most lam, in place; return the new spectral norm."""
    with torch.no_grad():
        U, S, Vh = torch.linalg.svd(w.double(), full_matrices=False)
        S = S.clamp(max=lam)
        w.copy_((U * S) @ Vh)
        return float(S.max()) if S.numel() else 0.0


def spectral_norm(w: torch.Tensor) -> float:
    with torch.no_grad():
        return float(torch.linalg.matrix_norm(w.double(), ord=2))


def spectral_radius(w: torch.Tensor) -> float:
    with torch.no_grad():
        return float(torch.linalg.eigvals(w.double()).abs().max())


__all__ = [
    "IRNN",
    "TorchRecurrent",
    "lstm_bound",
    "spectral_clip_",
    "spectral_norm",
    "spectral_radius",
]
