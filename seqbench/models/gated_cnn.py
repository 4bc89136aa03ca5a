"""The gated convolutional network (Dauphin et al. 2017, arXiv 1612.08083): causal
convolutions with gated linear units, a finite receptive field (models/context.py)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from seqbench.models.base import Backbone, ModelArgs
from seqbench.models.context import (
    gcnn_kernels,
)
from seqbench.models.tcn import CausalConv1d


def _weight_normed_normal_(conv: nn.Module, std: float) -> None:
    """Effective weight N(0, std²), bias 0, under weight norm: draw v, then g = ‖v‖ per output
    channel (what weight_norm applied after the draw computes)."""
    v = conv.parametrizations.weight.original1
    nn.init.normal_(v, 0.0, std)
    with torch.no_grad():
        dims = tuple(range(1, v.dim()))
        conv.parametrizations.weight.original0.copy_(
            torch.linalg.vector_norm(v, dim=dims, keepdim=True)
        )
    nn.init.zeros_(conv.bias)


class GLUBlock(nn.Module):
    """dropout → weight-normalised causal conv to 2H channels → A ⊙ σ(B) (gated linear unit),
    then (y + x)·√½: a layer of fairseq's convolutional decoder (`fconv_lm`, the implementation
    of Dauphin et al.'s language model), whose conv weights start N(0, 4(1 − p)/(K·C_in))."""

    def __init__(self, channels: int, kernel_size: int, dropout: float):
        super().__init__()
        self.conv = CausalConv1d(channels, 2 * channels, kernel_size, wn=True)
        self.drop = nn.Dropout(dropout)
        self.p, self.kernel_size, self.channels = dropout, kernel_size, channels
        self.reset_parameters()

    def reset_parameters(self) -> None:
        std = math.sqrt(4 * (1 - self.p) / (self.kernel_size * self.channels))
        _weight_normed_normal_(self.conv.conv, std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.conv(self.drop(x)).chunk(2, dim=1)  # (B, H, T) each
        return (a * torch.sigmoid(b) + x) * math.sqrt(0.5)


class GatedCNN(Backbone):
    """Gated convolutional network (no dilation): a weight-normalised input projection to H
    channels, then L :class:`GLUBlock` layers with residuals; receptive field 1 + Σ(K_i - 1).
    `levels` L: L layers of kernel K. Else the context k (default min(T, 32)): the fewest
    layers covering k, the last with its kernel cropped so the context is exactly k
    (gcnn_kernels).

    As in fairseq's `fconv_lm`: every linear map and conv is weight-normalised with bias 0;
    the projection and the head start N(0, (1 − p)/fan_in), p the dropout. fairseq's output
    layers fc2 → dropout → fc3 are dropout → one head here (two linear maps in a row are one).
    Token inputs use SequenceModel's embedding, not fairseq's N(0, 0.1) one."""

    translation_invariant = True

    def __init__(self, in_dim: int, args: ModelArgs):
        super().__init__()
        self.kernels = gcnn_kernels(args.kernel_size, args.levels, args.k, args.seq_len)
        self.kernel_size = args.kernel_size
        H = args.hidden
        self.p = args.dropout
        self.inp = weight_norm(nn.Conv1d(in_dim, H, 1))  # fc1: a linear map at every step
        _weight_normed_normal_(self.inp, math.sqrt((1 - self.p) / in_dim))
        self.drop = nn.Dropout(args.dropout)
        self.blocks = nn.Sequential(*(GLUBlock(H, n, args.dropout) for n in self.kernels))
        self.out_dim = H

    def init_head_(self, head: nn.Linear) -> None:
        """fairseq's output layer: weight-normalised, N(0, (1 − p)/H), bias 0."""
        nn.init.normal_(head.weight, 0.0, math.sqrt((1 - self.p) / head.in_features))
        nn.init.zeros_(head.bias)
        weight_norm(head)  # in place: g = ‖w‖ per output row, so the effective weight is w

    @property
    def receptive_field(self) -> float:
        return 1 + sum(n - 1 for n in self.kernels)

    @property
    def state_size(self) -> int:
        return int(self.receptive_field) * self.out_dim

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        h = self.inp(x.transpose(1, 2))  # (B, D, T) -> (B, H, T)
        y = self.drop(self.blocks(h))  # the dropout of fairseq's fc2 → dropout → fc3
        return y.transpose(1, 2), None
