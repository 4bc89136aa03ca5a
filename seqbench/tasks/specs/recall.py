"""The memory tasks (Zoology's MQAR, Mamba's selective copying, induction heads): their
sizes' defaults, read by their checks here and by the tasks (tasks/recall.py)."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.options import TASK, Option
from seqbench.tasks.spec import TaskSpec

# The memory tasks' vocabulary and pairs (mqar) or tokens (selective-copy) when the config
# leaves them unset: one place, read by the checks here and the tasks (tasks/recall.py)
RECALL_DEFAULTS = {
    "mqar": {"vocab_size": 256, "num_pairs": 4},
    "selective-copy": {"vocab_size": 16, "num_pairs": 4},
    "induction": {"vocab_size": 16, "num_pairs": None},
}
RECALL_T = 64  # their default length


def recall_sizes(task: str, c) -> tuple[int, int, int | None]:
    """(T, vocabulary, pairs) of a memory task's config, its defaults where unset."""
    d = RECALL_DEFAULTS[task]
    return c.seq_len or RECALL_T, c.vocab_size or d["vocab_size"], c.num_pairs or d["num_pairs"]


def _check_mqar(c) -> None:
    """Zoology's generator's own asserts: an even length, a vocabulary larger than it, room
    for the pairs and their queries."""
    T, V, p = recall_sizes("mqar", c)
    if T % 2:
        raise UsageError(f"mqar: seq_len must be even, got {T}")
    if V <= T:
        raise UsageError(f"mqar: vocab_size must exceed seq_len ({T}), got {V}")
    if 4 * p > T:
        raise UsageError(f"mqar: {p} pairs and their queries need seq_len >= {4 * p}, got {T}")


def _check_selective_copy(c) -> None:
    T, V, m = recall_sizes("selective-copy", c)
    if V < 4:
        raise UsageError(f"selective-copy: vocab_size must be at least 4, got {V}")
    if 2 * m > T:
        raise UsageError(f"selective-copy: {m} tokens need seq_len >= {2 * m}, got {T}")


def _check_induction(c) -> None:
    if recall_sizes("induction", c)[1] < 3:
        raise UsageError(f"induction: vocab_size must be at least 3, got {c.vocab_size}")
    if c.num_pairs is not None:
        raise UsageError("induction: num_pairs does not apply (one trigger and one answer)")


# the vocabulary, and the key–value pairs to recall (mqar) or tokens to copy (selective-copy);
# unset: the task's default
VOCAB_SIZE = Option("vocab_size", int, TASK, "the vocabulary's size (the task's default)",
                    positive=True)  # fmt: skip
NUM_PAIRS = Option("num_pairs", int, TASK, "key-value pairs to recall, or tokens to copy",
                   positive=True)  # fmt: skip


def _recall(name: str, cls: str, description: str, chance: str, min_seq_len: int, check,
            options: tuple) -> TaskSpec:  # fmt: skip
    """A memory task: accuracy at RECALL_T tokens, 2000 steps of 64 sequences by default."""
    return TaskSpec(
        name,
        f"seqbench.tasks.recall:{cls}",
        description,
        "acc",
        RECALL_T,
        higher_is_better=True,
        baseline_note=f"chance: {chance}",
        min_seq_len=min_seq_len,
        check=check,
        defaults={"steps": 2000, "batch_size": 64},
        reads=(),
        options=options,
    )


SPECS = (
    _recall("mqar", "MQAR", "multi-query associative recall (Zoology): recall each queried "
            "key's value (accuracy)", "2/vocab_size", 8, _check_mqar, (VOCAB_SIZE, NUM_PAIRS)),
    _recall("selective-copy", "SelectiveCopy", "selective copying (Mamba): recall the scattered "
            "tokens in order (accuracy)", "1/(vocab_size − 2)", 4, _check_selective_copy,
            (VOCAB_SIZE, NUM_PAIRS)),
    _recall("induction", "Induction", "induction heads: after the trigger, the token that "
            "followed it before (accuracy)", "1/(vocab_size − 1)", 3, _check_induction,
            (VOCAB_SIZE,)),
)  # fmt: skip
