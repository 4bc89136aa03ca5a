"""The temporal convolutional network (Bai, Kolter & Koltun 2018, arXiv 1803.01271): dilated
causal convolutions in residual blocks, a finite receptive field (models/context.py).
CausalConv1d pads on the left only; the gated CNN builds on it too."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from seqbench.models.base import Backbone, ModelArgs
from seqbench.models.context import (
    Level,
    plan_span,
    tcn_levels_for,
    tcn_plan,
    tcn_receptive_field,
)

__all__ = ["TCN", "CausalConv1d", "tcn_levels_for", "tcn_receptive_field"]


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
    `convs` gives each conv's (kernel, dilation): Bai et al.'s are (K, 2^i) twice; the last
    level of a TCN with context k is resized (models/context.py: tcn_plan).

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
        convs: Level,
        dropout: float,
        init: str = "reference",
    ):
        super().__init__()
        (k1, d1), (k2, d2) = convs
        self.conv1 = CausalConv1d(c_in, c_out, k1, d1, wn=True)
        self.conv2 = CausalConv1d(c_out, c_out, k2, d2, wn=True)
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

    `levels` L: Bai et al.'s network, receptive field 1 + 2(K-1)(2^L - 1). A context k < T:
    the fewest levels covering k, the last resized so that the context is exactly k. Neither:
    the fewest levels covering the sequence length (tcn_plan).
    """

    translation_invariant = True

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        K = args.kernel_size
        self.plan = tcn_plan(K, args.levels, args.k, args.seq_len)
        self.levels, self.kernel_size = len(self.plan), K
        chans = [in_dim] + [args.hidden] * self.levels
        self.blocks = nn.Sequential(
            *(
                TemporalBlock(chans[i], chans[i + 1], convs, args.dropout, args.init)
                for i, convs in enumerate(self.plan)
            )
        )
        self.out_dim = args.hidden

    def init_head_(self, head: nn.Linear) -> None:
        """The reference models' output layer: weight N(0, 0.01), PyTorch's default bias."""
        nn.init.normal_(head.weight, 0.0, 0.01)

    @property
    def receptive_field(self) -> float:
        return 1 + plan_span(self.plan)

    @property
    def state_size(self) -> int:
        return int(self.receptive_field) * self.out_dim

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        y = self.blocks(x.transpose(1, 2))  # (B, D, T) -> (B, H, T)
        return y.transpose(1, 2), None
