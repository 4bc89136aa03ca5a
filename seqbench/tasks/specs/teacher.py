"""A random teacher RNN to regress: the calibrated exponential-memory task."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.options import TASK, Option
from seqbench.tasks.spec import TaskSpec

# the tanh teacher's largest spectral norm: 1e20 was accepted and trained to the baseline
MAX_TANH_LAM = 10.0


def _check(c) -> None:
    if c.teacher_kind not in (None, "tanh", "linear"):
        raise UsageError(f"teacher: teacher_kind must be tanh or linear, got {c.teacher_kind!r}")
    if c.teacher_kind == "linear" and not 0 < c.teacher_lam < 1:
        raise UsageError(
            "teacher: a linear teacher needs teacher_lam in (0, 1) (at λ ≥ 1 its state grows "
            f"without bound), got {c.teacher_lam:g}"
        )
    if not 0 < c.teacher_lam <= MAX_TANH_LAM:
        raise UsageError(
            f"teacher: teacher_lam must be in (0, {MAX_TANH_LAM:g}] (at λ = 10, 79% of the "
            f"tanh teacher's units sit saturated, |h| > 0.99), got {c.teacher_lam:g}"
        )


SPEC = TaskSpec(
    "teacher",
    "seqbench.tasks.synthetic:Teacher",
    "regress a random teacher RNN with spectral norm λ (MSE; teacher_kind=linear "
    "forgets at exactly λ per step)",
    "mse",
    100,
    baseline_note="predict the mean: Var(y)",
    check=_check,
    defaults={"steps": 1000},
    reads=(),
    # the teacher's recurrence: "tanh" (h = tanh(W h + U x), the task as it was; unset on runs
    # from before) or "linear" (h = W h + U x, the output scaled by √(1 − λ²)): a linear
    # teacher forgets at exactly λ per step, where a tanh one driven at unit variance
    # saturates and forgets faster (0.61 per step at λ = 0.9 and 0.63 at 0.95, measured)
    options=(
        Option("teacher_kind", str, TASK, "the teacher's recurrence: tanh or linear (tanh)"),
        Option(
            "teacher_lam",
            float,
            TASK,
            "the teacher's contraction λ (0.9)",
            positive=True,
            nullable=False,
        ),
    ),
)
