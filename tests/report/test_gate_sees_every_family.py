"""The CI gate sees every family: each model family the reproduction presets train has a
canary point (the `canary` preset, checked in .ci/run against baselines/canary-tiny.json) that
clearly learns at CI size, and breaking a family on purpose (its weights frozen, or its
memory cut: zeroed recurrence, a TCN's past taps zeroed) makes the gate fail on it. Before,
every point of indrnn-adding-tiny and every adding point of bai-tcn-tiny sat at the trivial
baseline, so a broken IndRNN, LSTM or TCN passed CI."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import torch

from seqbench.sweep.presets import PRESETS, preset_grids
from seqbench.sweep.presets.canary import CANARY_FEEDFORWARD, CANARY_RECURRENT
from seqbench.sweep.spec import expand

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "baselines" / "canary-tiny.json"
FAMILIES = CANARY_RECURRENT + CANARY_FEEDFORWARD
# A diagonal SSM's memory is its decay: |λ| (or exp(Δ·A)) set to 0 by a huge log-rate
DECAY_LOGS = ("nu_log", "log_A_real", "A_log")


def test_every_family_of_the_tiny_presets_has_a_canary():
    trained = {
        m
        for name in PRESETS
        if name != "canary"
        for grid in preset_grids(name, "tiny")
        for m in grid["models"]
    }
    assert trained <= set(FAMILIES), trained - set(FAMILIES)
    points = json.loads(BASELINE.read_text())["points"]
    assert sorted(p["model"] for p in points) == sorted(FAMILIES)  # one each, none twice
    ci = (ROOT / "scripts" / "test.sh").read_text()
    assert "canary" in ci  # the gate runs it


def _break(model: torch.nn.Module, family: str, how: str) -> None:
    """Break a built model in place (`intact`: leave it): `frozen` leaves it for the optimiser
    to skip; `memoryless`
    zeroes and freezes what carries the past (a recurrent weight, an IndRNN's u, the window's
    base's recurrence, a TCN's taps before the current step)."""
    if how != "memoryless":
        return
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "weight_hh" in name or name.endswith(".u"):
                p.zero_()
                p.requires_grad_(False)
            elif name.rsplit(".", 1)[-1] in DECAY_LOGS:
                p.fill_(10.0)  # exp(−e^10 · Δ) underflows: no state survives a step
                p.requires_grad_(False)
            elif family == "transformer" and name.endswith("in_proj_weight"):
                p.zero_()  # values are their bias alone: attention carries nothing of the past
                p.requires_grad_(False)
            elif family == "mamba" and name.endswith("conv1d.weight"):
                mask = torch.ones_like(p)  # its causal conv's earlier taps are memory too
                mask[..., :-1] = 0
                p.mul_(mask)
                p.requires_grad_(False)
            elif family == "tcn" and name.endswith("weight.original1"):
                mask = torch.ones_like(p)
                mask[..., :-1] = 0  # causal: the last tap is the current step
                p.mul_(mask)
                p.register_hook(lambda g, mask=mask: g * mask)
    cut = [n for n, p in model.named_parameters() if not p.requires_grad]
    assert cut or family == "tcn", f"nothing to cut in {family}"


@pytest.mark.parametrize("how", ["intact", "frozen", "memoryless"])
@pytest.mark.parametrize("family", FAMILIES)
def test_a_broken_family_fails_the_gate(cli, tmp_path, monkeypatch, family, how):
    if family == "linear-attention" and how == "memoryless":
        pytest.skip("its memory is a running sum of its inputs: no weight to cut it with")
    from seqbench import api
    from seqbench.training import loop

    made = loop.make_optimizer

    def broken_optimizer(cfg, model):
        _break(model, family, how)
        opt = made(cfg, model)
        if how == "frozen":
            opt.step = lambda *a, **k: None  # the weights never move
        return opt

    monkeypatch.setattr(loop, "make_optimizer", broken_optimizer)
    db = tmp_path / "broken.db"
    points = [c for c in expand(preset_grids("canary", "tiny")) if c.model == family]
    assert len(points) == 1
    for cfg in points:
        api.train_config(cfg, db=str(db))
    con = sqlite3.connect(db)
    (trivial,) = con.execute("SELECT value FROM summaries WHERE key = 'baseline'").fetchone()
    (got,) = con.execute("SELECT value FROM summaries WHERE key = 'test_metric'").fetchone()
    con.close()
    committed = next(
        p["value"] for p in json.loads(BASELINE.read_text())["points"] if p["model"] == family
    )
    assert committed <= 0.5 * trivial  # the canary clearly learns (its point: ≤ 0.1 × trivial)
    r = cli("--db", db, "check", "--baseline", BASELINE, "--format", "csv")
    row = next((x for x in r.stdout.splitlines() if f",{family},teacher," in x), r.output)
    if how == "intact":  # the control: trained here as CI trains it, the family passes
        assert r.exit_code == 0 and row.startswith("pass"), (family, got, r.output)
        return
    assert r.exit_code == 1, (family, how, got, r.output)
    assert row.startswith("regressed"), row
