"""LSTM: torch.nn.LSTM (models/recurrent.py), its forget gate capped under --stable."""

from __future__ import annotations

from dataclasses import replace

from seqbench.errors import UsageError
from seqbench.models.spec import TORCH_RNN_ON_ADDING, ModelSpec, builder
from seqbench.options import MODEL, Option


def condition(cfg):
    """--stable on an LSTM (or a window over one) caps its forget gate: forget_cap defaults to
    λ/2 (the recurrent blocks get the other half, models/recurrent.lstm_gain), and must lie
    in (0, λ); without --stable it is refused."""
    if not cfg.stable:
        if cfg.forget_cap is not None:
            raise UsageError("forget_cap is the forget-gate cap of `stable` on an lstm")
        return cfg
    cap = cfg.lam / 2 if cfg.forget_cap is None else cfg.forget_cap
    if not 0 < cap < cfg.lam:
        raise UsageError(f"forget_cap must be in (0, lam = {cfg.lam:g}), got {cap:g}")
    return replace(cfg, forget_cap=cap)


SPEC = ModelSpec(
    "lstm",
    "LSTM, torch.nn fused (cuDNN / oneDNN)",
    True,
    builder("seqbench.models.recurrent", "TorchRecurrent", "lstm"),
    stable=True,
    small_steps=True,
    # Miller & Hardt: polyphonic music with 256 hidden units
    task_defaults={"adding": TORCH_RNN_ON_ADDING, "chorales": {"hidden": 256}},
    condition=condition,
    reads=(),
    # `stable` on an LSTM: the forget gate is f = forget_cap · σ(·) (set by resolution to λ/2
    # when not given), and the recurrent blocks share what is left, λ − forget_cap
    options=(
        Option(
            "forget_bias",
            float,
            MODEL,
            "the forget gate's bias at init (0)",
            nullable=False,
        ),
        Option(
            "forget_cap",
            float,
            MODEL,
            "`stable`: the forget gate's cap, f = forget_cap·σ(·), in (0, lam) (lam/2)",
        ),
    ),
)
