"""Elman RNN: torch.nn.RNN (models/recurrent.py)."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.models.spec import NONLINEARITY, TORCH_RNN_ON_ADDING, ModelSpec, builder


def _check(c) -> None:
    if c.nonlinearity not in ("tanh", "relu"):
        raise UsageError(f"rnn nonlinearity must be tanh or relu, got {c.nonlinearity!r}")


SPEC = ModelSpec(
    "rnn",
    "Elman RNN (tanh or relu), torch.nn fused",
    True,
    builder("seqbench.models.recurrent", "TorchRecurrent", "rnn"),
    stable=True,
    activation_units=3,
    check=_check,
    small_steps=True,
    task_defaults={"adding": TORCH_RNN_ON_ADDING},
    options=(NONLINEARITY,),
    reads=(),
)
