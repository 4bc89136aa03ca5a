"""IRNN (Le et al. 2015): models/recurrent.py."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.models.spec import NONLINEARITY, ModelSpec, builder


def _check(c) -> None:
    # a config asking for another nonlinearity is refused; ModelArgs built by hand (without
    # the family's defaults) get the ReLU that IRNN is
    if hasattr(c, "model") and c.nonlinearity != "relu":
        raise UsageError(f"irnn is a ReLU RNN by definition; nonlinearity {c.nonlinearity!r}")


SPEC = ModelSpec(
    "irnn",
    "IRNN (Le et al. 2015): ReLU RNN, identity recurrent init, zero biases",
    True,
    builder("seqbench.models.recurrent", "IRNN"),
    {"nonlinearity": "relu"},
    stable=True,
    activation_units=3,
    check=_check,
    small_steps=True,
    # adding: the IndRNN adding script's settings for its IRNN baseline
    task_defaults={"adding": {"lr": 2e-4, "clip_value": 10.0, "lr_decay_every": 20100}},
    options=(NONLINEARITY,),
    reads=(),
)
