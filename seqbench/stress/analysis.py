"""Measurements on one backbone, free of the store and the CLI.

- Gradient vs lag: g(L) = mean over the batch of ‖∂ℓ/∂x_{T-1-L}‖ for ℓ = w·y_{T-1} (a fixed
  random unit readout of the last output): one backward pass over a length-T sequence.
- Rates: the per-step gain γ = exp(slope of log g against L) fitted on the finite, positive
  part; the memory horizon = the largest L with g(L) ≥ rtol·g(0); the verdict exploding
  (γ > 1 + ε, or an overflow), finite-context (the gradient is exactly zero past the horizon:
  the output depends on the last horizon + 1 inputs and nothing earlier), vanishing (γ < 1 − ε
  and the gradient falls below rtol·g(0) within the T lags measured) or stable (a gradient that
  stays above the threshold to the last lag is not vanishing, whatever the fit says).
- Truncation error: e(k) = mean over the batch of ‖y_{T-1}(x) − y_{T-1}(x_{T-k..T-1})‖, the
  full model against the same model run from a zero state on only the last k inputs; for a
  λ-contractive model e(k) = O(λ^k) (Miller & Hardt), and the fitted decay rate estimates λ;
  for L stacked contractions e(k) = O(k^(L−1) λ^k), and the rate is fitted per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from seqbench.stress import views


@dataclass(frozen=True)
class Rates:
    gain: float  # γ per step; nan when fewer than two finite positive points
    horizon: int  # largest lag whose gradient is ≥ rtol of the lag-0 gradient
    verdict: str  # exploding | finite-context | vanishing | stable | undetermined


VERDICT_CODES = views.VERDICT_CODES  # how a verdict is stored (a summary is a number)


def grad_vs_lag(backbone, x: torch.Tensor, readout: torch.Tensor) -> np.ndarray:
    """g[L] for L = 0..T-1 (index = lag). x: (B, T, D); readout: (H,). Overflow shows as inf/nan."""
    x = x.detach().clone().requires_grad_(True)
    y, _ = backbone(x)  # (B, T, H)
    loss = (y[:, -1] * readout).sum()
    (gx,) = torch.autograd.grad(loss, x)
    norms = torch.linalg.vector_norm(gx.double(), dim=-1).mean(0)  # (T,) index t
    return norms.flip(0).cpu().numpy()  # index L = T-1-t


def fit_log_slope(xs: np.ndarray, ys: np.ndarray, floor: float = 0.0) -> float:
    """exp(slope) of log y against x over the finite points above `floor` (nan if < 2)."""
    ok = np.isfinite(ys) & (ys > max(floor, 0.0))
    if ok.sum() < 2:
        return math.nan
    slope = np.polyfit(np.asarray(xs, dtype=np.float64)[ok], np.log(ys[ok]), 1)[0]
    return float(np.exp(slope))


def rates(g: np.ndarray, rtol: float = 1e-6, eps: float = 1e-3, floor_rel: float = 1e-30) -> Rates:
    """Fit γ on the lags whose gradient is finite and above floor_rel·g(0), so that values
    that underflowed to (or near) zero do not flatten the slope."""
    lags = np.arange(len(g))
    g0 = g[0]
    gain = fit_log_slope(lags, g, floor=floor_rel * g0 if np.isfinite(g0) else 0.0)
    if np.isfinite(g0) and g0 > 0:
        above = np.nonzero(np.isfinite(g) & (g >= rtol * g0))[0]
        horizon = int(above.max()) if above.size else 0
    else:
        horizon = 0
    nonzero = np.nonzero(g != 0)[0]
    last = int(nonzero.max()) if nonzero.size else -1  # the earliest input that matters at all
    if not np.all(np.isfinite(g)) and np.any(~np.isfinite(g) & ~np.isnan(g)):
        verdict = "exploding"  # overflowed to inf: no fit needed
    elif 0 <= last == horizon < len(g) - 1 and np.all(np.isfinite(g)):
        # above the threshold up to lag `last`, exactly zero after it: a finite context (an
        # underflow instead fades below the threshold before it reaches zero)
        verdict = "finite-context"
    elif math.isnan(gain):
        verdict = "undetermined"
    elif gain > 1 + eps:
        verdict = "exploding"
    elif gain < 1 - eps and horizon < len(g) - 1:
        verdict = "vanishing"
    else:
        verdict = "stable"  # within ε, or above the threshold to the last lag measured
    return Rates(gain, horizon, verdict)


def k_grid(T: int) -> list[int]:
    """1, 2, 4, …, up to and including T."""
    ks, k = [], 1
    while k < T:
        ks.append(k)
        k *= 2
    return [*ks, T]


@torch.no_grad()
def truncation_error(backbone, x: torch.Tensor, ks: list[int]) -> tuple[np.ndarray, float]:
    """(e(k) for each k, the rounding floor): the full model's last output against the
    last-k-inputs model's. Errors below the floor (a few ulps of ‖y‖) are rounding noise."""
    full = backbone(x)[0][:, -1]  # (B, H)
    errs = []
    for k in ks:
        part = backbone(x[:, -k:])[0][:, -1]  # zero state, last k inputs only
        errs.append(float(torch.linalg.vector_norm((full - part).double(), dim=-1).mean()))
    scale = float(torch.linalg.vector_norm(full.double(), dim=-1).mean())
    floor = 100 * torch.finfo(x.dtype).eps * max(scale, 1e-30)
    return np.asarray(errs), floor


def decay_rate(ks: list[int], errs: np.ndarray, floor: float = 0.0, depth: int = 1) -> float:
    """The per-step decay of the truncation error: exp(slope) of log(e(k) / k^(depth−1))
    against k over the points above the rounding floor (≈ λ for a stack of `depth`
    λ-contractions, whose error is of order k^(depth−1) λ^k: fitted without that factor, a
    2-layer IndRNN held to λ = 0.8 read 0.826); nan when fewer than two points are above
    it."""
    ks_ = np.asarray(ks, dtype=np.float64)
    errs = np.asarray(errs, dtype=np.float64)
    keep = np.isfinite(errs) & (errs > max(floor, 0.0))
    return fit_log_slope(ks_[keep], errs[keep] / ks_[keep] ** (max(depth, 1) - 1))
