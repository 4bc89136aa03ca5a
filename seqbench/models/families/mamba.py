"""Selective SSM (Gu & Dao 2023): models/mamba.py."""

from __future__ import annotations

from seqbench.models.spec import BACKEND, ModelSpec, builder

SPEC = ModelSpec(
    "mamba",
    "Selective SSM (Gu & Dao 2023), plain PyTorch: input-dependent decay exp(Δ·A)",
    True,
    builder("seqbench.models.mamba", "Mamba"),
    {"hidden": 64, "d_state": 16, "layers": 2},
    activation_units=110,
    # exp(Δ·A), Δ·B·x and h over (d_inner = 2H) × d_state, with gradients, past the
    # default 16 that activation_units (110 per unit of width) already covers
    state_units=lambda c, H: 12 * H * max(0, (c.d_state or 16) - 16),
    no_decay=("A_log", "D"),  # mamba_simple: _no_weight_decay
    options=(BACKEND,),
    reads=(),
)
