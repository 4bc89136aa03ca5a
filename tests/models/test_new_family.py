"""A new recurrent family touches only models/: registered with a ModelSpec, it trains with
--stable, inside a window, sized to a parameter budget, and is stressed, with no change
anywhere else."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from seqbench import api
from seqbench.errors import UsageError
from seqbench.models import MODELS, ModelSpec
from seqbench.models.base import Backbone


class Diagonal(Backbone):
    """h_t = tanh(a ⊙ h_{t-1} + W x_t): a toy recurrent family with a stability condition
    max |a| ≤ λ."""

    recurrent = True

    def __init__(self, in_dim, args):
        super().__init__()
        self.inp = nn.Linear(in_dim, args.hidden)
        self.a = nn.Parameter(torch.full((args.hidden,), 1.5))  # starts unstable
        self.out_dim = args.hidden

    def recurrent_weights(self):
        return {"a": self.a}

    def project_(self, lam):
        with torch.no_grad():
            self.a.clamp_(-lam, lam)
        return self.stability_bound()

    def stability_bound(self):
        return float(self.a.detach().abs().max())

    def spectra(self):
        return {"spectral_norm": self.stability_bound()}

    def forward(self, x, state=None):
        h = torch.zeros(x.shape[0], self.out_dim) if state is None else state
        pre, out = self.inp(x), []
        for t in range(x.shape[1]):
            h = torch.tanh(self.a * h + pre[:, t])
            out.append(h)
        return torch.stack(out, 1), h


@pytest.fixture
def diagonal():
    spec = ModelSpec("toydiag", "toy diagonal RNN", True, Diagonal, {"hidden": 8}, stable=True)
    MODELS.register("toydiag", spec)
    yield spec
    del MODELS._items["toydiag"]


def test_a_family_registered_in_models_trains_with_stable(diagonal, tmp_path):
    db = tmp_path / "runs.db"
    out = api.train(
        "toydiag", "adding", db=db, seq_len=10, steps=4, stable=True, lam=0.9, eval_size=16
    )
    assert out.status == "completed"
    assert out.summaries["stability_bound"] <= 0.9 + 1e-6  # projected from 1.5
    win = api.train(
        "window",
        "adding",
        db=db,
        base="toydiag",
        k=3,
        seq_len=10,
        steps=2,
        stable=True,
        eval_size=16,
    )
    assert win.status == "completed" and win.summaries["stability_bound"] <= 0.99 + 1e-6
    fitted = api.train("toydiag", "adding", db=db, seq_len=10, steps=1, params=500, eval_size=16)
    assert abs(fitted.summaries["n_params"] - 500) <= 25


def test_stable_is_refused_for_a_family_without_a_condition(diagonal, tmp_path):
    MODELS._items["toydiag"] = ModelSpec("toydiag", "no condition", True, Diagonal)
    with pytest.raises(UsageError, match="`stable` is defined for rnn, lstm, indrnn"):
        api.make_config("toydiag", "adding", {"stable": True})
    with pytest.raises(UsageError, match="needs a base with a stability condition"):
        api.make_config("window", "adding", {"stable": True, "base": "toydiag"})


def test_stress_reads_the_family_spectra(diagonal, tmp_path):
    store = api.open_store(tmp_path / "runs.db")
    (res,) = api.stress(store, ["toydiag"], seq_len=16, hidden=4, batch=2)
    assert res.spectra == {"spectral_norm": 1.5} and math.isfinite(res.gain)
