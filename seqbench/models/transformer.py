"""A causal transformer whose attention is restricted to the last k positions (a sliding window),
so it is a feedforward model with context k like the TCN."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from seqbench.errors import UsageError
from seqbench.models.base import Backbone, ModelArgs


def sinusoidal_positions(T: int, d: int, device) -> torch.Tensor:
    pos = torch.arange(T, device=device, dtype=torch.float32)[:, None]  # (T, 1)
    freq = torch.exp(torch.arange(0, d, 2, device=device) * (-math.log(10000.0) / d))
    pe = torch.zeros(T, d, device=device)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: d // 2])
    return pe  # (T, d)


class WindowTransformer(Backbone):
    """Pre-norm transformer encoder; position t attends to t-k+1..t (mask built per length)."""

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        if args.hidden % args.heads:
            raise UsageError(
                f"transformer: hidden ({args.hidden}) must divide by heads ({args.heads})"
            )
        self.inp = nn.Linear(in_dim, args.hidden)
        layer = nn.TransformerEncoderLayer(
            args.hidden,
            args.heads,
            dim_feedforward=2 * args.hidden,
            dropout=args.dropout,
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False)
        self.k = args.k if args.k is not None else args.seq_len
        self.out_dim = args.hidden

    @property
    def receptive_field(self) -> float:
        return 1 + (self.k - 1) * len(self.encoder.layers)

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        _B, T, _ = x.shape
        h = self.inp(x) + sinusoidal_positions(T, self.inp.out_features, x.device)  # (B, T, H)
        i = torch.arange(T, device=x.device)
        lag = i[:, None] - i[None, :]  # (T, T): query t, key s -> t - s
        mask = (lag < 0) | (lag >= self.k)  # True = not allowed
        return self.encoder(h, mask=mask), None
