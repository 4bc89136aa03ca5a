"""A causal transformer whose attention is restricted to the last k positions (a sliding window),
so it is a feedforward model with context k like the TCN.

Attention is computed blockwise in O(T·k) on long sequences: the sequence is cut into chunks
of k positions, and each chunk's queries attend to its own keys and the previous chunk's (2k
keys, of which the window keeps the last k up to the query). This is exactly the dense T×T
computation with the band mask (tests/models: test_window_attention_equals_the_dense_band),
at a cost per token that does not grow with T.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.models.base import Backbone, ModelArgs
from seqbench.models.context import transformer_windows


def sinusoidal_positions(T: int, d: int, device) -> torch.Tensor:
    pos = torch.arange(T, device=device, dtype=torch.float32)[:, None]  # (T, 1)
    freq = torch.exp(torch.arange(0, d, 2, device=device) * (-math.log(10000.0) / d))
    pe = torch.zeros(T, d, device=device)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: d // 2])
    return pe  # (T, d)


def band_mask(T: int, k: int, device=None) -> torch.Tensor:
    """(T, T) boolean mask of nn.MultiheadAttention's kind: True where query t may NOT attend
    key s (s > t or s <= t - k). The dense reference for window_attention."""
    i = torch.arange(T, device=device)
    lag = i[:, None] - i[None, :]
    return (lag < 0) | (lag >= k)


# Below this many windows per sequence one dense SDPA call with the band mask is cheaper than
# the blocks (torch's fused kernel against the blocks' copies), and its T² work is at most
# DENSE_UP_TO·T·k anyway. Measured (B=32, 4 heads, k=32, forward+backward): dense 4.3 ms vs
# blocks 8.3 at T=100; 228 vs 107 at T=1000.
DENSE_UP_TO = 8
# Chunks are at least this long: a window of 2 (an exact context split over the layers gives
# small ones) in chunks of 2 is hundreds of tiny matmuls; any chunk ≥ the window is exact.
# Measured (benchmarks/context_cost.py, windows 3 and 2, T = 256): 57 ms per step in chunks of
# at least 32 (dense below T = 256), 38 in chunks of at least 8.
MIN_CHUNK = 8


def window_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int, dropout_p: float = 0.0
) -> torch.Tensor:
    """Causal sliding-window attention: query t attends keys t-window+1..t.

    q, k, v: (B, H, T, d) -> (B, H, T, d). Short sequences (T ≤ DENSE_UP_TO·window) take one
    dense call with the band mask, longer ones blockwise_attention, so the cost per token is
    bounded by the window, not T.
    """
    T = q.shape[2]
    if DENSE_UP_TO * max(window, MIN_CHUNK) >= T:
        allowed = ~band_mask(T, window, q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=dropout_p)
    return blockwise_attention(q, k, v, window, dropout_p)


def blockwise_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int, dropout_p: float = 0.0
) -> torch.Tensor:
    """window_attention in O(T·window): chunks of w = min(max(window, MIN_CHUNK), T)
    positions attend to themselves and the previous chunk (w ≥ window: every key a query may
    see is there), T·2w scores instead of T²."""
    B, H, T, d = q.shape
    w = min(max(window, MIN_CHUNK), T)
    n = -(-T // w)
    pad = n * w - T
    if pad:  # pad the end: padded queries are dropped, padded keys lie in no real window
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    qc = q.reshape(B, H, n, w, d)

    def with_previous(t: torch.Tensor) -> torch.Tensor:  # (B, H, n, 2w, d)
        tc = t.reshape(B, H, n, w, d)
        prev = torch.cat([tc.new_zeros(B, H, 1, w, d), tc[:, :, :-1]], dim=2)
        return torch.cat([prev, tc], dim=3)

    i = torch.arange(w, device=q.device)[:, None]  # query's place in its chunk
    j = torch.arange(2 * w, device=q.device)[None, :]  # key's place in previous + own chunk
    lag = i + w - j
    allowed = ((lag >= 0) & (lag < window)).expand(n, w, 2 * w).clone()  # True = attend
    allowed[0, :, :w] = False  # the first chunk has no previous chunk
    out = F.scaled_dot_product_attention(
        qc, with_previous(k), with_previous(v), attn_mask=allowed, dropout_p=dropout_p
    )
    return out.reshape(B, H, n * w, d)[:, :, :T]


class WindowTransformer(Backbone):
    """Pre-norm transformer encoder with a window per layer: position t of layer i attends to
    t-w_i+1..t. Context k < T: the windows' w_i − 1 add up to k − 1 (transformer_windows), so
    the stack's output at t sees exactly x_{t-k+1..t}; no k (or k ≥ T): every layer is causal
    over the whole sequence.

    The layers are torch's nn.TransformerEncoderLayer (their parameters, norms, feed-forward
    and dropouts); only the attention is evaluated blockwise (window_attention) instead of
    through a dense T×T mask.
    """

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
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
        self.windows = transformer_windows(args.layers, args.k, args.seq_len)
        self.out_dim = args.hidden

    @property
    def receptive_field(self) -> float:
        return 1 + sum(w - 1 for w in self.windows)

    @property
    def state_size(self) -> int:
        """Zoology's sliding window: keys and values of its window, 2·d·w a layer."""
        return sum(2 * self.out_dim * w for w in self.windows)

    def _attention(self, x: torch.Tensor, mha: nn.MultiheadAttention, window: int) -> torch.Tensor:
        """mha's projections and dropout around window_attention; x: (B, T, E)."""
        B, T, E = x.shape
        heads = mha.num_heads
        qkv = F.linear(x, mha.in_proj_weight, mha.in_proj_bias)  # (B, T, 3E)
        q, k, v = (t.reshape(B, T, heads, E // heads).transpose(1, 2) for t in qkv.chunk(3, -1))
        p = mha.dropout if self.training else 0.0
        out = window_attention(q, k, v, window, dropout_p=p)  # (B, heads, T, d)
        return mha.out_proj(out.transpose(1, 2).reshape(B, T, E))

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        _B, T, _ = x.shape
        h = self.inp(x) + sinusoidal_positions(T, self.inp.out_features, x.device)  # (B, T, H)
        for layer, w in zip(self.encoder.layers, self.windows, strict=True):  # norm_first=True
            h = h + layer.dropout1(self._attention(layer.norm1(h), layer.self_attn, w))
            ff = layer.linear2(layer.dropout(layer.activation(layer.linear1(layer.norm2(h)))))
            h = h + layer.dropout2(ff)
        return h, None
