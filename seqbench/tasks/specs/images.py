"""Pixel-sequence classification: scikit-learn's digits and Fashion-MNIST, each also
permuted."""

from __future__ import annotations

from seqbench.tasks.spec import SUBSET, TaskSpec


def _pixels(name: str, cls: str, description: str, T: int, defaults: dict) -> TaskSpec:
    """A pixel-sequence classification: ten classes, T pixels a sequence (fixed), `subset`
    the training images it keeps."""
    return TaskSpec(
        name,
        f"seqbench.tasks.images:{cls}",
        description,
        metric="acc",
        default_seq_len=T,
        higher_is_better=True,
        baseline_note="chance: 10%",
        fixed_seq_len=True,
        defaults=defaults,
        options=(SUBSET,),
        reads=(),
    )


SPECS = (
    _pixels("digits", "Digits", "scikit-learn digits as 64-step pixel sequences (accuracy)", 64,
            {"steps": 2000, "batch_size": 32}),
    _pixels("pdigits", "PermutedDigits",
            "digits with one fixed seeded pixel permutation (accuracy)", 64,
            {"steps": 2000, "batch_size": 32}),
    _pixels("fashion", "Fashion", "Fashion-MNIST as 784-step pixel sequences (accuracy)", 784,
            {"steps": 1000}),
    _pixels("pfashion", "PermutedFashion",
            "Fashion-MNIST with one fixed seeded pixel permutation (accuracy)", 784,
            {"steps": 1000}),
)  # fmt: skip
