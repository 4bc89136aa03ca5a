"""Recurrent backbones: Elman RNN, LSTM and GRU (torch.nn's fused kernels: cuDNN on GPU, oneDNN
on CPU) and IndRNN (Li et al. 2018, arXiv 1803.04831)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from seqbench.models.base import Backbone, ModelArgs
from seqbench.ops.indrnn import indrnn


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


def indrnn_bounds(seq_len: int, magnitude: float) -> tuple[float, float]:
    """(u_min, u_max) = ((1/M)^(1/T), M^(1/T)): a gradient over T steps stays within [1/M, M]."""
    T = max(int(seq_len), 1)
    return (1.0 / magnitude) ** (1.0 / T), magnitude ** (1.0 / T)


class IndRNNLayer(nn.Module):
    """h_t = relu(W x_t + b + u ⊙ h_{t-1}); W x_t for all t is one matmul, then the element-wise
    recurrence. u and the state are fp32 (2^(1/5000) - 1 is below bf16 resolution).

    The input weights follow the authors' code for each variant: N(0, 0.001) in the plain
    network of their adding-problem script (`in2hidW`), kaiming-uniform with a = 8 (fan in)
    in the batch-normalised network of their sequential-MNIST scripts (`deep`)."""

    def __init__(
        self, in_dim: int, hidden: int, u_min: float, u_max: float, last: bool, backend, deep=False
    ):
        super().__init__()
        self.proj = nn.Linear(in_dim, hidden)
        self.u = nn.Parameter(torch.empty(hidden, dtype=torch.float32))
        self.u_min, self.u_max, self.last, self.backend = u_min, u_max, last, backend
        self.deep = deep
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.deep:
            nn.init.kaiming_uniform_(self.proj.weight, a=8, mode="fan_in")
        else:
            nn.init.normal_(self.proj.weight, 0.0, 0.001)
        nn.init.zeros_(self.proj.bias)
        # The last layer starts near 1 (U(u_min, u_max)): without it T = 5000 fails (Li et al.).
        low = self.u_min if self.last else 0.0
        with torch.no_grad():
            self.u.uniform_(low, self.u_max)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
        pre = self.proj(x)  # (B, T, H); bf16 under bf16 autocast
        u = self.u.clamp(-self.u_max, self.u_max)
        # under bf16 the states are stored in bf16 too (the recurrence itself stays fp32)
        history = torch.bfloat16 if pre.dtype == torch.bfloat16 else torch.float32
        return indrnn(pre, u, h0, backend=self.backend, history=history)  # (B, T, H)


class IndRNN(Backbone):
    """Stacked IndRNN layers. State: a tuple of per-layer (B, H) tensors.

    Plain (the default): the network of the authors' adding-problem script, layers stacked
    directly. `deep`: their sequential-MNIST "plain" network, batch norm (over batch and time)
    after each IndRNN layer, then dropout; no residual connection (that is their separate
    residual network, which seqbench does not build). Each variant keeps its script's input,
    output and bias initialisation; u and its bounds are the same in both."""

    recurrent = True

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        u_min, u_max = indrnn_bounds(args.seq_len, args.magnitude)
        H = args.hidden
        self.layers = nn.ModuleList(
            IndRNNLayer(
                in_dim if i == 0 else H,
                H,
                u_min,
                u_max,
                i == args.layers - 1,
                args.backend,
                args.deep,
            )
            for i in range(args.layers)
        )
        self.norms = nn.ModuleList(
            nn.BatchNorm1d(H) for _ in range(args.layers if args.deep else 0)
        )
        self.deep = args.deep
        self.dropout = nn.Dropout(args.dropout)
        self.out_dim = H
        self.u_max = u_max

    def init_head_(self, head: nn.Linear) -> None:
        """The scripts' output layers, bias 0: Lasagne's DenseLayer default (Glorot-uniform) in
        the adding script; kaiming-normal (fan in) for the classifier of the deep network."""
        if self.deep:
            nn.init.kaiming_normal_(head.weight)
        else:
            nn.init.xavier_uniform_(head.weight)
        nn.init.zeros_(head.bias)

    @property
    def recurrent_depth(self) -> int:
        return len(self.layers)

    @property
    def state_size(self) -> int:
        return len(self.layers) * self.out_dim

    def recurrent_weights(self) -> dict[str, torch.Tensor]:
        return {f"u_l{i}": layer.u for i, layer in enumerate(self.layers)}

    def constrain_(self) -> None:
        with torch.no_grad():
            for layer in self.layers:
                layer.u.clamp_(-self.u_max, self.u_max)

    def project_(self, lam: float) -> float:
        """|u| ≤ min(M^(1/T), λ) elementwise."""
        cap = min(self.u_max, lam)
        with torch.no_grad():
            for layer in self.layers:
                layer.u.clamp_(-cap, cap)
        return self.stability_bound()

    def stability_bound(self) -> float:
        """max |u| over the layers."""
        return max(float(layer.u.detach().abs().max()) for layer in self.layers)

    def spectra(self) -> dict[str, float]:
        u = self.stability_bound()
        return {"max_abs_u": u, "spectral_norm": u, "spectral_radius": u}

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        states = []
        h = x
        for i, layer in enumerate(self.layers):
            out = layer(h, None if state is None else state[i])  # (B, T, H) fp32
            states.append(out[:, -1])
            if self.deep:
                out = self.norms[i](out.transpose(1, 2)).transpose(1, 2)  # BN over (B, T)
            h = self.dropout(out)
        return h, tuple(states)


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
    "IndRNN",
    "TorchRecurrent",
    "indrnn_bounds",
    "lstm_bound",
    "spectral_clip_",
    "spectral_norm",
    "spectral_radius",
]
