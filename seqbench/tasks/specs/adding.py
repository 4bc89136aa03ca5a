"""The adding problem (Hochreiter & Schmidhuber; the IndRNN and TCN papers' setup)."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.options import TASK, Option
from seqbench.tasks.spec import TaskSpec


def _check(c) -> None:
    if c.marker not in ("uniform", "halves"):
        raise UsageError(f"adding: marker must be uniform or halves, got {c.marker!r}")


SPEC = TaskSpec(
    "adding",
    "seqbench.tasks.synthetic:Adding",
    "adding problem: sum the two marked values (MSE)",
    "mse",
    100,
    baseline_note="predict 1: 1/6 ≈ 0.1667",
    min_seq_len=2,
    check=_check,
    defaults={"steps": 3000},
    options=(
        Option(
            "marker",
            str,
            TASK,
            "where the two marked positions fall: uniform or halves (uniform)",
            nullable=False,
        ),
    ),
    reads=(),
)
