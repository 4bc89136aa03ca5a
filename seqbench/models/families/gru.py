"""GRU: torch.nn.GRU (models/recurrent.py)."""

from __future__ import annotations

from seqbench.models.spec import TORCH_RNN_ON_ADDING, ModelSpec, builder

SPEC = ModelSpec(
    "gru",
    "GRU, torch.nn fused (cuDNN / oneDNN)",
    True,
    builder("seqbench.models.recurrent", "TorchRecurrent", "gru"),
    activation_units=10,
    small_steps=True,
    task_defaults={"adding": TORCH_RNN_ON_ADDING},
    reads=(),
)
