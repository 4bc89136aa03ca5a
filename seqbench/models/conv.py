"""Feedforward convolutional backbones with a finite receptive field.

TCN (Bai, Kolter & Koltun 2018, arXiv 1803.01271) and the gated convolutional network
(Dauphin et al. 2017, arXiv 1612.08083). Both are causal: the input is padded on the left only.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from seqbench.models.base import Backbone, ModelArgs


def tcn_receptive_field(kernel_size: int, levels: int) -> int:
    """1 + 2(K-1)(2^L - 1): two convolutions per level, dilation 2^i at level i."""
    return 1 + 2 * (kernel_size - 1) * (2**levels - 1)


def tcn_levels_for(k: int, kernel_size: int) -> int:
    """The fewest levels whose receptive field covers k inputs."""
    levels = 1
    while tcn_receptive_field(kernel_size, levels) < k:
        levels += 1
    return levels


class CausalConv1d(nn.Module):
    """Conv1d over (B, C, T) that pads (K-1)·d zeros on the left only, so y_t sees x_{≤t}."""

    def __init__(self, c_in: int, c_out: int, kernel_size: int, dilation: int = 1, wn=False):
        super().__init__()
        self.pad = (kernel_size - 1) * dilation
        conv = nn.Conv1d(c_in, c_out, kernel_size, dilation=dilation)
        self.conv = weight_norm(conv) if wn else conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(nn.functional.pad(x, (self.pad, 0)))  # (B, C_out, T)


class TemporalBlock(nn.Module):
    """Two rounds of [weight-normalised dilated causal conv -> ReLU -> dropout] + residual.

    init "reference" (the default) is what locuslab/TCN's code does: its `init_weights` draws
    conv.weight from N(0, 0.01) *after* weight_norm, which recomputes the weight from g and v
    on every forward, so the draw never takes effect and the dilated convs keep PyTorch's
    Conv1d init (kaiming-uniform v, g = ‖v‖); the 1×1 downsample does get N(0, 0.01). init
    "paper" is the paper's text: every conv's effective weight N(0, 0.01) (g re-derived from v).
    The paper's numbers came from the code, whose convs start ≈ 4× larger here.
    """

    def __init__(
        self,
        c_in: int,
        c_out: int,
        kernel_size: int,
        dilation: int,
        dropout: float,
        init: str = "reference",
    ):
        super().__init__()
        self.conv1 = CausalConv1d(c_in, c_out, kernel_size, dilation, wn=True)
        self.conv2 = CausalConv1d(c_out, c_out, kernel_size, dilation, wn=True)
        self.drop = nn.Dropout(dropout)
        self.downsample = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else None
        self.init = init
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for conv in (self.conv1.conv, self.conv2.conv):
            v = conv.parametrizations.weight.original1
            if self.init == "paper":
                nn.init.normal_(v, 0.0, 0.01)
            else:  # Conv1d.reset_parameters on v: kaiming-uniform (a = √5), its bias too
                nn.init.kaiming_uniform_(v, a=math.sqrt(5))
            with torch.no_grad():  # g = ‖v‖ per output channel: the effective weight is v
                conv.parametrizations.weight.original0.copy_(
                    torch.linalg.vector_norm(v, dim=(1, 2), keepdim=True)
                )
        if self.downsample is not None:
            nn.init.normal_(self.downsample.weight, 0.0, 0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.drop(torch.relu(self.conv1(x)))
        y = self.drop(torch.relu(self.conv2(y)))
        res = x if self.downsample is None else self.downsample(x)
        return torch.relu(y + res)


class TCN(Backbone):
    """Temporal convolutional network: L levels of :class:`TemporalBlock`, dilation 2^i.

    Receptive field 1 + 2(K-1)(2^L - 1). L comes from `levels`, else the fewest levels covering
    `k`, else covering the sequence length.
    """

    translation_invariant = True

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        K = args.kernel_size
        if args.levels is not None:
            levels = args.levels
        else:
            levels = tcn_levels_for(args.k if args.k is not None else args.seq_len, K)
        self.levels, self.kernel_size = levels, K
        chans = [in_dim] + [args.hidden] * levels
        self.blocks = nn.Sequential(
            *(
                TemporalBlock(chans[i], chans[i + 1], K, 2**i, args.dropout, args.init)
                for i in range(levels)
            )
        )
        self.out_dim = args.hidden

    def init_head_(self, head: nn.Linear) -> None:
        """The reference models' output layer: weight N(0, 0.01), PyTorch's default bias."""
        nn.init.normal_(head.weight, 0.0, 0.01)

    @property
    def receptive_field(self) -> float:
        return tcn_receptive_field(self.kernel_size, self.levels)

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        y = self.blocks(x.transpose(1, 2))  # (B, D, T) -> (B, H, T)
        return y.transpose(1, 2), None


class GLUBlock(nn.Module):
    """Causal conv to 2H channels, then A ⊙ σ(B) (gated linear unit), plus a residual."""

    def __init__(self, c_in: int, c_out: int, kernel_size: int, dropout: float):
        super().__init__()
        self.conv = CausalConv1d(c_in, 2 * c_out, kernel_size)
        self.res = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else None
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.conv(x).chunk(2, dim=1)  # (B, H, T) each
        y = self.drop(a * torch.sigmoid(b))
        return y + (x if self.res is None else self.res(x))


class GatedCNN(Backbone):
    """Gated convolutional network (no dilation): receptive field 1 + L(K-1). L comes from
    `levels`, else the fewest layers covering k (default k = min(T, 32))."""

    translation_invariant = True

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        K = args.kernel_size
        if args.levels is not None:
            layers = args.levels
        else:
            k = args.k if args.k is not None else min(args.seq_len, 32)
            layers = max(1, math.ceil((k - 1) / (K - 1)))
        self.n_layers, self.kernel_size = layers, K
        chans = [in_dim] + [args.hidden] * layers
        self.blocks = nn.Sequential(
            *(GLUBlock(chans[i], chans[i + 1], K, args.dropout) for i in range(layers))
        )
        self.out_dim = args.hidden

    @property
    def receptive_field(self) -> float:
        return 1 + self.n_layers * (self.kernel_size - 1)

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        return self.blocks(x.transpose(1, 2)).transpose(1, 2), None
