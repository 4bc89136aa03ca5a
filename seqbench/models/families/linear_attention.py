"""Causal linear attention (Katharopoulos et al. 2020): models/linear_attention.py."""

from __future__ import annotations

from seqbench.models.spec import DROPOUT, HEADS, ModelSpec, builder, check_heads

SPEC = ModelSpec(
    "linear-attention",
    "Causal linear attention (Katharopoulos et al. 2020): a running sum, elu + 1 features",
    True,
    builder("seqbench.models.linear_attention", "LinearAttention"),
    {"hidden": 64, "layers": 2},
    activation_units=40,
    width_multiple_of="heads",
    check=check_heads("linear-attention"),
    options=(DROPOUT, HEADS),
    reads=(),
)
