"""Enforcing stability after every optimiser step (Miller & Hardt 2019, arXiv 1805.10369) and
measuring the bound that was achieved.

- rnn: clamp the singular values of each recurrent matrix W to ≤ λ (SVD), so ‖W‖₂ ≤ λ and,
  with a 1-Lipschitz φ, h ↦ φ(W h + U x) is λ-contractive.
- lstm: bound the recurrent gate blocks in the ∞-norm. For h_t = o ⊙ tanh(c_t),
  c_t = f ⊙ c_{t-1} + i ⊙ g with σ' ≤ 1/4, tanh' ≤ 1 and |c|, |g| ≤ 1, a change Δh moves the
  next state by at most S·‖Δh‖∞ with S = ‖W_i‖∞/4 + ‖W_f‖∞/4 + ‖W_g‖∞ + ‖W_o‖∞/4. The
  projection rescales the four blocks together so that S ≤ λ; the recorded bound is S.
  This is a sufficient condition under the stated bounds on the cell, in the spirit of the
  paper's LSTM condition, not a verbatim copy of it.
- indrnn: |u| ≤ min(M^(1/T), λ) elementwise.
"""

from __future__ import annotations

import torch

from seqbench.models.recurrent import IndRNN, TorchRecurrent, spectral_clip_, spectral_norm
from seqbench.models.window import Window


def lstm_bound(w_hh: torch.Tensor) -> float:
    """S = ‖W_i‖∞/4 + ‖W_f‖∞/4 + ‖W_g‖∞ + ‖W_o‖∞/4 for a packed (4H, H) LSTM matrix."""
    wi, wf, wg, wo = w_hh.detach().double().chunk(4, dim=0)

    def inf_norm(w):
        return float(w.abs().sum(dim=1).max())

    return inf_norm(wi) / 4 + inf_norm(wf) / 4 + inf_norm(wg) + inf_norm(wo) / 4


def _backbone(model):
    bb = model.backbone if hasattr(model, "backbone") else model
    return bb.base if isinstance(bb, Window) else bb


def project_(model, lam: float) -> float:
    """Project the model's recurrent weights onto the stable set; return the achieved bound."""
    bb = _backbone(model)
    if isinstance(bb, IndRNN):
        cap = min(bb.u_max, lam)
        with torch.no_grad():
            for layer in bb.layers:
                layer.u.clamp_(-cap, cap)
        return achieved_bound(model)
    if isinstance(bb, TorchRecurrent) and bb.kind == "rnn":
        return max(spectral_clip_(w, lam) for w in bb.recurrent_weights().values())
    if isinstance(bb, TorchRecurrent) and bb.kind == "lstm":
        with torch.no_grad():
            for w in bb.recurrent_weights().values():
                s = lstm_bound(w)
                if s > lam:
                    w.mul_(lam / s)
        return achieved_bound(model)
    raise ValueError(f"no stability projection for {type(bb).__name__}")


def achieved_bound(model) -> float | None:
    """The stability quantity of the current weights: max ‖W‖₂ (rnn), max S (lstm), max |u|
    (indrnn); None for models without one (gru, feedforward)."""
    bb = _backbone(model)
    if isinstance(bb, IndRNN):
        return max(float(layer.u.detach().abs().max()) for layer in bb.layers)
    if isinstance(bb, TorchRecurrent) and bb.kind == "rnn":
        return max(spectral_norm(w) for w in bb.recurrent_weights().values())
    if isinstance(bb, TorchRecurrent) and bb.kind == "lstm":
        return max(lstm_bound(w) for w in bb.recurrent_weights().values())
    return None
