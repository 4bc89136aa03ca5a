"""Causal pre-norm transformer with sliding-window attention: models/transformer.py."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.models import context as ctx
from seqbench.models.spec import DROPOUT, HEADS, ModelSpec, builder, check_heads


def _check(c) -> None:
    if c.layers is None or c.layers < 1:
        raise UsageError(f"transformer: layers must be at least 1, got {c.layers}")
    check_heads("transformer")(c)


SPEC = ModelSpec(
    "transformer",
    "Causal pre-norm transformer, sliding-window attention",
    False,
    builder("seqbench.models.transformer", "WindowTransformer"),
    {"hidden": 64, "layers": 2},
    width_multiple_of="heads",
    check=_check,
    context=ctx.transformer_context,
    context_rule="exactly k (k − 1 split over the layers' windows); no k: T",
    options=(DROPOUT, HEADS),
    reads=(),
)
