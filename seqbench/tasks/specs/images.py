"""Pixel-sequence classification: scikit-learn's digits and Fashion-MNIST, each also
permuted."""

from __future__ import annotations

from seqbench.tasks.spec import TaskSpec

_ACC = {
    "metric": "acc",
    "higher_is_better": True,
    "baseline_note": "chance: 10%",
    "fixed_seq_len": True,
}


SPECS = (
    TaskSpec(
        "digits",
        "seqbench.tasks.images:Digits",
        "scikit-learn digits as 64-step pixel sequences (accuracy)",
        default_seq_len=64,
        defaults={"steps": 2000, "batch_size": 32},
        **_ACC,
        reads=("subset",),
    ),
    TaskSpec(
        "pdigits",
        "seqbench.tasks.images:PermutedDigits",
        "digits with one fixed seeded pixel permutation (accuracy)",
        default_seq_len=64,
        defaults={"steps": 2000, "batch_size": 32},
        **_ACC,
        reads=("subset",),
    ),
    TaskSpec(
        "fashion",
        "seqbench.tasks.images:Fashion",
        "Fashion-MNIST as 784-step pixel sequences (accuracy)",
        default_seq_len=784,
        defaults={"steps": 1000},
        **_ACC,
        reads=("subset",),
    ),
    TaskSpec(
        "pfashion",
        "seqbench.tasks.images:PermutedFashion",
        "Fashion-MNIST with one fixed seeded pixel permutation (accuracy)",
        default_seq_len=784,
        defaults={"steps": 1000},
        **_ACC,
        reads=("subset",),
    ),
)
