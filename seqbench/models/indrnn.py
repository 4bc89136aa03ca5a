"""IndRNN (Li et al. 2018, arXiv 1803.04831): h_t = relu(W x_t + u ⊙ h_{t−1}), one recurrent
weight per unit, on the IndRNN kernel (ops/indrnn); its |u| range keeps a gradient over T steps
within [1/M, M]."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from seqbench.models.base import Backbone, ModelArgs
from seqbench.ops.indrnn import indrnn

__all__ = ["IndRNN", "indrnn_bounds"]


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
