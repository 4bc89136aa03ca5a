"""The yearly sunspot numbers as a seqbench task: the reference for a plugin task."""

from __future__ import annotations

from functools import cached_property
from importlib import resources

import numpy as np
import torch

from seqbench.errors import MissingDependencyError
from seqbench.tasks.base import Task

SCALE = 100.0  # sunspot numbers run 0-190: inputs and targets in hundreds
TRAIN_END, VALID_END = 1920, 1960  # targets up to 1920 train, 1921-1960 validate, later test


def years_and_counts() -> tuple[np.ndarray, np.ndarray]:
    """(year, sunspot number) for 1700-2008, from the CSV that statsmodels ships."""
    try:
        text = resources.files("statsmodels.datasets.sunspots").joinpath("sunspots.csv")
        raw = np.loadtxt(text.open(), delimiter=",", skiprows=1)
    except ModuleNotFoundError:
        raise MissingDependencyError("statsmodels", "the sunspots task", "datasets") from None
    return raw[:, 0].astype(int), raw[:, 1]


class Sunspots(Task):
    """Windows of T years (B, T, 1) -> the next year's number (B, 1); chronological splits by
    the target's year."""

    name = "sunspots"
    readout = "last"
    in_dim = 1
    out_dim = 1

    @cached_property
    def _splits(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        years, counts = years_and_counts()
        v = torch.as_tensor(counts / SCALE, dtype=torch.float32)
        T = self.seq_len
        ends = torch.arange(T, len(v))  # the target's index
        x = torch.stack([v[e - T : e] for e in ends]).unsqueeze(-1)
        y = v[ends].unsqueeze(-1)
        target_year = torch.as_tensor(years)[ends]
        masks = {
            "train": target_year <= TRAIN_END,
            "valid": (target_year > TRAIN_END) & (target_year <= VALID_END),
            "test": target_year > VALID_END,
        }
        return {s: (x[m], y[m]) for s, m in masks.items()}

    @property
    def n_train(self) -> int:
        return self._splits["train"][0].shape[0]

    def train_batch(self, batch_size, gen):
        x, y = self._splits["train"]
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
        return x[idx], y[idx]

    def eval_batches(self, split, batch_size):
        x, y = self._splits[split]
        for i in range(0, x.shape[0], batch_size):
            yield x[i : i + batch_size], y[i : i + batch_size]

    def loss(self, out, y):
        return torch.nn.functional.mse_loss(out, y)

    def metric_sums(self, out, y):
        sq = float(((out - y) ** 2).sum())
        return sq, sq, float(y.numel())

    def baseline(self):
        """MSE on the test years of predicting the training years' mean."""
        (_, ytr), (_, yte) = self._splits["train"], self._splits["test"]
        return float(((yte - ytr.mean()) ** 2).mean())
