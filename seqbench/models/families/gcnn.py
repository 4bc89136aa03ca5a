"""Gated convolutional network (Dauphin et al. 2017): models/gated_cnn.py."""

from __future__ import annotations

from seqbench.models import context as ctx
from seqbench.models.spec import DROPOUT, KERNEL_SIZE, LEVELS, ModelSpec, builder, check_conv

SPEC = ModelSpec(
    "gcnn",
    "Gated convolutional network (Dauphin et al. 2017), context k",
    False,
    builder("seqbench.models.gated_cnn", "GatedCNN"),
    {"hidden": 64, "kernel_size": 5},
    activation_units=6,
    check=check_conv("gcnn"),
    context=ctx.gcnn_context,
    context_rule="exactly k (last kernel cropped); levels L: 1 + L(K−1); neither: min(T, 32)",
    options=(DROPOUT, KERNEL_SIZE, LEVELS),
    reads=(),
)
