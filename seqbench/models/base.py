"""The model protocol shared by every family.

A *backbone* maps batch-first inputs to features and carries an optional recurrent state:
``backbone(x, state) -> (features, state)`` with x: (B, T, D) and features: (B, T, H).
Feedforward backbones ignore and return ``None`` as state. :class:`SequenceModel` adds the
task's input embedding (token tasks), the head, the readout (every step or the last one), and
truncated backpropagation through time for recurrent backbones.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from torch import nn

from seqbench.config import ModelArgs

__all__ = ["Backbone", "ModelArgs", "SequenceModel", "count_params"]

Readout = Literal["all", "last"]


class Backbone(nn.Module):
    """Base class: subclasses set `out_dim`, `recurrent`, and implement forward."""

    out_dim: int
    recurrent: bool = False
    # True when the output at t is a function of x_{t-rf+1..t} alone, independent of absolute
    # position: then a last-step readout may run on the last rf inputs only.
    translation_invariant: bool = False

    @property
    def receptive_field(self) -> float:
        """How many inputs (current one included) an output can depend on; inf if unbounded."""
        return math.inf

    @property
    def state_size(self) -> int | None:
        """What the model must hold to produce its next output, in real numbers (Zoology's
        state size, the x-axis of its recall–memory trade-off): a recurrent model's carried
        state (complex numbers count twice), summed over layers; a feedforward model's inputs
        or activations within its context (a TCN: receptive field × channels; window
        attention: keys and values of its window, 2·d·w a layer). None: not declared."""
        return None

    @property
    def recurrent_depth(self) -> int:
        """How many recurrences are stacked (layers each carrying a state of its own): L
        contractions leave a truncation error of order k^(L−1) λ^k, so the per-step rate is
        fitted to e(k) / k^(L−1). 1 for one recurrence and for feedforward backbones."""
        return 1

    def recurrent_weights(self) -> dict[str, torch.Tensor]:
        """Recurrent matrices (or IndRNN's vectors u) by name, for stability analysis."""
        return {}

    def constrain_(self) -> None:
        """Project parameters back into the family's admissible set (called after each step)."""

    def init_head_(self, head: nn.Linear) -> None:
        """Initialise the task head the way the family's reference code does (default: keep
        PyTorch's nn.Linear init)."""

    # -- stability (Miller & Hardt): families with a stability condition override these ------
    def project_(self, lam: float) -> float:
        """Project the recurrent weights onto the λ-stable set (after every step under
        --stable); return the achieved bound. Only families whose ModelSpec says `stable`."""
        raise NotImplementedError(f"{type(self).__name__} has no stability projection")

    def stability_bound(self) -> float | None:
        """The family's stability quantity for the current weights (None: it has none)."""
        return None

    def spectra(self) -> dict[str, float]:
        """Spectral facts of the recurrent weights, for `seqbench stress` (empty: none);
        `decay_bound`, where a family has one, is its largest per-step decay (stress's
        "decay bound" column)."""
        return {}

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        raise NotImplementedError


def detach_state(state: Any) -> Any:
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    return type(state)(detach_state(s) for s in state)


class SequenceModel(nn.Module):
    """Embedding (token tasks) -> backbone -> linear head, read out at every step or the last.

    Args:
        backbone: a :class:`Backbone`.
        out_dim: the task's output size O.
        readout: "all" -> (B, T, O); "last" -> (B, O).
        vocab: if set, inputs are token ids (B, T) embedded to the backbone's input width.
    """

    def __init__(
        self,
        backbone: Backbone,
        out_dim: int,
        readout: Readout,
        embed: nn.Embedding | None = None,
    ):
        super().__init__()
        self.embed = embed
        self.backbone = backbone
        self.head = nn.Linear(backbone.out_dim, out_dim)
        backbone.init_head_(self.head)
        self.readout = readout

    @property
    def recurrent(self) -> bool:
        return self.backbone.recurrent

    def features(
        self, x: torch.Tensor, state: Any = None, tbptt: int | None = None
    ) -> tuple[torch.Tensor, Any]:
        """Backbone features (B, T, H). With `tbptt` = k, a recurrent backbone runs in chunks of
        k steps and the gradient is cut at chunk boundaries (the state itself is carried).

        The chunks are aligned to the end of the sequence: the last one is exactly k steps and
        the remainder T mod k goes first. A loss on the last output (adding, copy's readout,
        classification) thus gets gradient through exactly its last k inputs; aligned to the
        start it would get only the last T mod k (k = 4, 8 and 32 at T = 100 all gave the same
        4 steps). An output inside a chunk gets gradient from the chunk's start onwards."""
        if self.embed is not None:
            x = self.embed(x)  # (B, T) ids -> (B, T, E)
        if not self.backbone.recurrent or tbptt is None or tbptt >= x.shape[1]:
            return self.backbone(x, state)
        outs = []
        for start, end in tbptt_chunks(x.shape[1], tbptt):
            state = detach_state(state)
            y, state = self.backbone(x[:, start:end], state)
            outs.append(y)
        return torch.cat(outs, dim=1), state

    def forward(self, x: torch.Tensor, state: Any = None, tbptt: int | None = None) -> torch.Tensor:
        if self.readout == "last" and self.backbone.translation_invariant:
            rf = self.backbone.receptive_field
            if rf < x.shape[1]:
                x = x[:, -int(rf) :]  # the last output cannot see further back
        feats, _ = self.features(x, state, tbptt)  # (B, T, H)
        if self.readout == "last":
            feats = feats[:, -1]  # (B, H)
        return self.head(feats)

    def constrain_(self) -> None:
        self.backbone.constrain_()


def tbptt_chunks(T: int, k: int) -> list[tuple[int, int]]:
    """[start, end) of each truncation chunk: the last k long, the remainder T mod k first."""
    first = T % k
    return ([(0, first)] if first else []) + [(s, s + k) for s in range(first, T, k)]


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def at_least_fp32(dtype: torch.dtype) -> torch.dtype:
    """fp32 for bf16 and fp16 (autocast), the dtype itself for fp32 and fp64 (stress)."""
    return torch.promote_types(dtype, torch.float32)
