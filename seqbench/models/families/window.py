"""Miller & Hardt's truncated model: a recurrent base run on the last k inputs
(models/window.py)."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.models import context as ctx
from seqbench.models.spec import MODELS, ModelSpec, make_backbone
from seqbench.options import MODEL, Option

BASE = Option("base", str, MODEL, "the recurrent family run on the last k inputs (lstm)",
              nullable=False)  # fmt: skip


def _build(in_dim, args):
    from seqbench.models.window import Window

    return Window(in_dim, args, make_backbone)


def _check(c) -> None:
    base = MODELS.get(c.base)
    if not base.recurrent:
        recurrent = ", ".join(m for m in MODELS if MODELS.get(m).recurrent)
        raise UsageError(f"window: base must be a recurrent model ({recurrent}), got {c.base!r}")
    if base.check is not None:
        base.check(c)


SPEC = ModelSpec(
    "window",
    "Truncated recurrent model (Miller & Hardt): base model on the last k inputs",
    False,
    _build,
    wraps_base=True,
    check=_check,
    context=ctx.window_context,
    context_rule="exactly k (the base run on the last k inputs); no k: min(T, 32)",
    options=(BASE,),  # and its base's
    reads=(),
)
