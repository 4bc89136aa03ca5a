"""The copy-memory task (the TCN paper's)."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.options import TASK, Option
from seqbench.tasks.spec import TaskSpec


def _check(c) -> None:
    if c.symbols not in (None, "float", "tokens"):
        raise UsageError(f"copy: symbols must be float or tokens, got {c.symbols!r}")


SPEC = TaskSpec(
    "copy",
    "seqbench.tasks.synthetic:CopyMemory",
    "copy memory: recall 10 symbols after T blanks (cross-entropy)",
    "ce",
    100,
    baseline_note="memoryless: 10·ln 8/(T+20)",
    extra_steps=20,
    check=_check,
    # the reference code (locuslab/TCN copy_memory) feeds each symbol's value as one
    # float channel; symbols=tokens embeds them (seqbench's variant)
    defaults={"steps": 2000, "symbols": "float"},
    reads=(),
    # how its symbols are fed: "float" (the symbol's value as one input channel, what the
    # reference code feeds: the default) or "tokens" (embedded, seqbench's variant); unset
    # (None) on runs from before, which were fed tokens
    options=(Option("symbols", str, TASK, "how symbols are fed: float or tokens (float)"),),
)
