"""Task registry: name -> TaskSpec, the task's facts without importing torch or its data;
the Task class is imported when a task is made (as the model registry does for models)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seqbench.errors import UsageError
from seqbench.registry import Registry


@dataclass(frozen=True)
class TaskSpec:
    """name; target: "module:Class" of the Task; metric (e.g. mse, acc, bpc) and whether
    higher is better; the default (or, with fixed_seq_len, the only) length T; min_seq_len;
    how the trivial baseline is defined (for `seqbench tasks`); check: the task's own config
    checks (a RunConfig or TaskArgs in, UsageError out); extra_steps: how many steps past T a
    sequence has (copy: T blanks between 10 symbols and 10 answers are T + 20 steps), so the
    model sees T + extra_steps."""

    name: str
    target: str
    description: str
    metric: str
    default_seq_len: int
    higher_is_better: bool = False
    baseline_note: str = "-"
    min_seq_len: int = 1
    fixed_seq_len: bool = False
    check: Callable[[Any], None] | None = None
    extra_steps: int = 0

    def load(self) -> type:
        module, _, cls = self.target.partition(":")
        return getattr(importlib.import_module(module), cls)


TASKS: Registry[TaskSpec] = Registry("task")


def _check_marker(c) -> None:
    if c.marker not in ("uniform", "halves"):
        raise UsageError(f"adding: marker must be uniform or halves, got {c.marker!r}")


_S, _I, _M, _T = ("seqbench.tasks." + m for m in ("synthetic", "images", "music", "text"))
_ACC = {
    "metric": "acc",
    "higher_is_better": True,
    "baseline_note": "chance: 10%",
    "fixed_seq_len": True,
}
for _spec in (
    TaskSpec(
        "adding",
        f"{_S}:Adding",
        "adding problem: sum the two marked values (MSE)",
        "mse",
        100,
        baseline_note="predict 1: 1/6 ≈ 0.1667",
        min_seq_len=2,
        check=_check_marker,
    ),
    TaskSpec(
        "copy",
        f"{_S}:CopyMemory",
        "copy memory: recall 10 symbols after T blanks (cross-entropy)",
        "ce",
        100,
        baseline_note="memoryless: 10·ln 8/(T+20)",
        extra_steps=20,
    ),
    TaskSpec(
        "digits",
        f"{_I}:Digits",
        "scikit-learn digits as 64-step pixel sequences (accuracy)",
        default_seq_len=64,
        **_ACC,
    ),
    TaskSpec(
        "pdigits",
        f"{_I}:PermutedDigits",
        "digits with one fixed seeded pixel permutation (accuracy)",
        default_seq_len=64,
        **_ACC,
    ),
    TaskSpec(
        "fashion",
        f"{_I}:Fashion",
        "Fashion-MNIST as 784-step pixel sequences (accuracy)",
        default_seq_len=784,
        **_ACC,
    ),
    TaskSpec(
        "pfashion",
        f"{_I}:PermutedFashion",
        "Fashion-MNIST with one fixed seeded pixel permutation (accuracy)",
        default_seq_len=784,
        **_ACC,
    ),
    # T = the training crop length; evaluation uses whole chorales
    TaskSpec(
        "chorales",
        f"{_M}:Chorales",
        "Bach chorales (music21), next-frame 88-pitch prediction (frame NLL)",
        "nll",
        64,
        baseline_note="per-pitch frequencies of train (no context)",
    ),
    TaskSpec(
        "ptb-char",
        f"{_T}:PTBChar",
        "Penn Treebank characters (bits per character)",
        "bpc",
        100,
        baseline_note="unigram of train",
    ),
    TaskSpec(
        "ptb-word",
        f"{_T}:PTBWord",
        "Penn Treebank words, 10k vocabulary (perplexity)",
        "ppl",
        35,
        baseline_note="unigram of train",
    ),
    TaskSpec(
        "text",
        f"{_T}:TextFile",
        "character-level modelling of a text file given by path (bits per char)",
        "bpc",
        100,
        baseline_note="unigram of train",
    ),
    TaskSpec(
        "teacher",
        f"{_S}:Teacher",
        "regress a random teacher RNN with spectral norm λ (MSE)",
        "mse",
        100,
        baseline_note="predict the mean: Var(y)",
    ),
):
    TASKS.register(_spec.name, _spec)


def validate(c) -> None:
    """The task checks of a config (torch-free): the length it allows, and its own checks."""
    check_args(TASKS.get(c.task), c)


def check_args(spec: TaskSpec, c) -> None:
    if c.seq_len is not None:
        if spec.fixed_seq_len and c.seq_len != spec.default_seq_len:
            raise UsageError(
                f"{spec.name} has a fixed length of {spec.default_seq_len} steps; "
                f"got seq_len {c.seq_len}"
            )
        if c.seq_len < spec.min_seq_len:
            raise UsageError(f"{spec.name} needs seq_len >= {spec.min_seq_len}, got {c.seq_len}")
    if spec.check is not None:
        spec.check(c)


def make_task(name: str, args):
    """Instantiate task `name` with a TaskArgs (checked against the task's rules)."""
    spec = TASKS.get(name)
    check_args(spec, args)
    return spec.load()(args)
