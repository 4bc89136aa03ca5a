"""The answer to "how much context does this task need?" as data: each cell as judged
(`Cell`: its mean over seeds, whether it learned, within or outside the tolerance of the best)
and the answer (`Answer`: the verdict, k* with its interval, the cells, the caveats and the
sentence). memory/answer.py derives it from a sweep's runs; memory/words.py says it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cell:
    model: str
    k: int | None  # None: a recurrent reference (full backpropagation through time)
    mean: float
    std: float
    n: int
    learned: bool
    matches: bool  # within the tolerance of the best, shown over seeds
    outside: bool = False  # beyond the tolerance of the best, shown over seeds
    excess: float = math.nan  # its mean's excess over the best's, in the metric's own terms
    improving: bool = False  # at least half its seeds were still improving at their last evaluation
    behind: bool = False  # shown worse than the best over seeds, at the answer's level

    @property
    def label(self) -> str:
        return _label(self.model, self.k)

    @property
    def status(self) -> str:
        """within, outside or undecided (feedforward cells); "" for a reference."""
        if self.k is None:
            return ""
        return "within" if self.matches else ("outside" if self.outside else "undecided")


@dataclass(frozen=True)
class Answer:
    task: str
    verdict: str
    k_star: int | None
    k_low: int | None
    k_high: int | None
    epsilon: float
    max_k: int
    metric: str
    higher_is_better: bool
    baseline: float
    best: float
    best_cell: str
    cells: list[Cell]
    run_ids: list[int]
    warnings: list[str] = field(default_factory=list)
    persistence: float | None = None  # a forecast's last-value predictor, where stored
    relative_to: str = "gap"
    tolerance: float = math.nan  # δ in the metric's own units
    whole_input: bool = False  # max_k is every step a sequence has
    units: str = ""  # what the metric is measured in (e.g. "standardised targets")
    label: str = ""  # the task as people know it: own data named by its file (data_label)
    train_size: int | None = None  # own data: the training sequences (few: say so)
    # the cells a stated answer rests on that were still improving (verdict "under-trained")
    under_trained: list[str] = field(default_factory=list)
    train_steps: int | None = None  # the most steps a cell trained for (a cap to double)
    steps_auto: bool = False  # trained with --steps auto: train_steps is the cap (max_steps)
    lr_chosen: str = ""  # --lr-search: the rates searched and those chosen on validation
    seeds: tuple[int, ...] = ()  # the seeds its runs ran (the advice to run more keeps them)
    # the answer in one sentence (memory/words.sentence, which reads neither lr_chosen nor
    # the warnings), written by derive once the rest is known
    sentence: str = ""

    @property
    def star_cell(self) -> Cell | None:
        """The cell that k* rests on: the best within the tolerance at k*."""
        if self.k_star is None:
            return None
        at = [c for c in self.cells if c.k == self.k_star and c.matches]
        return min(at, key=lambda c: -c.mean if self.higher_is_better else c.mean)

    def to_dict(self) -> dict:
        return {
            "task": self.task,
            "label": self.label or self.task,
            "verdict": self.verdict,
            "k_star": self.k_star,
            "k_low": self.k_low,
            "k_high": self.k_high,
            "epsilon": self.epsilon,
            "relative_to": self.relative_to,
            "tolerance": _finite(self.tolerance),
            "max_k": self.max_k,
            "whole_input": self.whole_input,
            "metric": self.metric,
            "units": self.units,
            "train_size": self.train_size,
            "under_trained": list(self.under_trained),
            "train_steps": self.train_steps,
            "steps_auto": self.steps_auto,
            "lr_chosen": self.lr_chosen,
            "higher_is_better": self.higher_is_better,
            "baseline": _finite(self.baseline),
            "persistence": None if self.persistence is None else _finite(self.persistence),
            "best": _finite(self.best),
            "best_cell": self.best_cell,
            "sentence": self.sentence,
            "warnings": list(self.warnings),
            "cells": [
                {
                    "model": c.model,
                    "k": c.k,
                    "mean": _finite(c.mean),
                    "std": _finite(c.std),
                    "seeds": c.n,
                    "learned": c.learned,
                    "matches": c.matches,
                    "outside": c.outside,
                    "excess": _finite(c.excess),
                    "improving": c.improving,
                }
                for c in self.cells
            ],
            "run_ids": list(self.run_ids),
        }


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _label(model: str, k: int | None) -> str:
    return model if k is None else f"{model} at k={k}"
