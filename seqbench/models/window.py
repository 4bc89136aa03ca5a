"""The truncated ("window") model of a recurrent network (Miller & Hardt 2019, arXiv 1805.10369):
y_t = f(x_{t-k+1..t}, h = 0), the recurrent model run from a zero state on only the last k
inputs. For a λ-contractive model it differs from the full model by O(λ^k)."""

from __future__ import annotations

from typing import Any

import torch

from seqbench.models.base import Backbone, ModelArgs
from seqbench.models.context import default_window


class Window(Backbone):
    """Evaluates a recurrent backbone on every length-k window at once.

    Positions t < k see fewer than k inputs, so there the truncated model *is* the full model
    from a zero state; the rest are unfolded into (B·(T-k+1), k, D) windows and run as one batch.
    """

    translation_invariant = True

    def __init__(self, in_dim: int, args: ModelArgs, make_base):
        super().__init__()
        self.base = make_base(args.base, in_dim, args.with_(k=None))
        self.k = args.k if args.k is not None else default_window(args.seq_len)
        self.in_dim = in_dim
        self.out_dim = self.base.out_dim

    @property
    def receptive_field(self) -> float:
        return self.k

    @property
    def state_size(self) -> int:
        """The last k inputs, which it re-reads for every output."""
        return self.k * self.in_dim

    def recurrent_weights(self) -> dict[str, torch.Tensor]:
        return self.base.recurrent_weights()

    def constrain_(self) -> None:
        self.base.constrain_()

    def init_head_(self, head) -> None:
        self.base.init_head_(head)

    # the truncated model is stable exactly when its base is
    def project_(self, lam: float) -> float:
        return self.base.project_(lam)

    def stability_bound(self) -> float | None:
        return self.base.stability_bound()

    def spectra(self) -> dict[str, float]:
        return self.base.spectra()

    def forward(self, x: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        B, T, D = x.shape
        k = self.k
        if k > T:  # every position sees its whole past: the truncated model is the full one
            return self.base(x)[0], None
        windows = x.unfold(1, k, 1)  # (B, T-k+1, D, k)
        windows = windows.permute(0, 1, 3, 2).reshape(-1, k, D)  # (B·(T-k+1), k, D)
        ys, _ = self.base(windows)  # (B·(T-k+1), k, H)
        tail = ys[:, -1].reshape(B, T - k + 1, -1)  # (B, T-k+1, H)
        if k == 1:  # no position before the first window (torch's RNNs refuse length 0)
            return tail, None
        head, _ = self.base(x[:, : k - 1])  # (B, k-1, H): full = truncated here
        return torch.cat([head, tail], dim=1), None
