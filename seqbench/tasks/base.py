"""The task protocol: data for a seed, a loss, a metric and a trivial baseline.

Every task is deterministic for its seed: it draws from private ``torch.Generator`` objects,
never the global RNG. Inputs are batch-first: float (B, T, D), or token ids (B, T) when
``vocab`` is set (the model then embeds them to ``in_dim``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import torch

from seqbench.config import TaskArgs

__all__ = ["Task", "TaskArgs", "generator"]


def cache_dir() -> Path:
    """Where parsed datasets are cached: $SEQBENCH_CACHE, else ~/.cache/seqbench."""
    d = Path(os.environ.get("SEQBENCH_CACHE", Path.home() / ".cache" / "seqbench"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def generator(seed: int, stream: int = 0) -> torch.Generator:
    """A private generator for (seed, stream): streams keep train/valid/test draws apart."""
    g = torch.Generator()
    g.manual_seed(seed * 1_000_003 + stream)
    return g


class Task:
    """Subclasses set `name` (their registry entry, which holds the task's facts: metric,
    direction, default T, description) and the shape attributes, and implement `sample` or
    `split_tensors`."""

    name: str
    readout: Literal["all", "last"] = "last"
    in_dim: int
    out_dim: int
    vocab: int | None = None
    synthetic: bool = False

    @property
    def spec(self):
        from seqbench.tasks import TASKS

        return TASKS.get(self.name)

    @property
    def metric(self) -> str:  # e.g. "mse", "acc", "bpc"
        return self.spec.metric

    @property
    def higher_is_better(self) -> bool:
        return self.spec.higher_is_better

    @property
    def default_seq_len(self) -> int:
        return self.spec.default_seq_len

    def __init__(self, args: TaskArgs):
        self.args = args
        self.seq_len = args.seq_len if args.seq_len is not None else self.default_seq_len

    # -- data -----------------------------------------------------------------------------
    def train_batch(self, batch_size: int, gen: torch.Generator) -> tuple[torch.Tensor, Any]:
        """A training batch drawn with `gen` (fresh data for synthetic tasks)."""
        raise NotImplementedError

    def eval_batches(self, split: str, batch_size: int) -> Iterator[tuple[torch.Tensor, Any]]:
        """The fixed valid or test set, in order."""
        raise NotImplementedError

    # -- objective ------------------------------------------------------------------------
    def loss(self, out: torch.Tensor, y: Any) -> torch.Tensor:
        raise NotImplementedError

    def metric_sums(self, out: torch.Tensor, y: Any) -> tuple[float, float, float]:
        """(sum of loss, sum of metric, count) over a batch, so that splits average exactly."""
        raise NotImplementedError

    def finish_metric(self, loss_mean: float, metric_mean: float) -> float:
        return metric_mean

    def baseline(self) -> float | None:
        """The metric of the trivial predictor (no memory, or no input at all), or None where
        there is none."""
        return None

    def other_baselines(self) -> dict[str, float]:
        """Further reference predictors' test metrics, stored as summaries under their names
        beside `baseline` (a forecast's persistence: the last value)."""
        return {}

    # -- helpers --------------------------------------------------------------------------
    def test_constant(self) -> torch.Tensor | None:
        """Where every seed is scored on one test split (own data) and the metric is a squared
        error or an accuracy: the best constant predictor of that split (its targets' mean, or
        its most frequent class), against which evaluate measures a gain and its sampling
        noise. None elsewhere."""
        return None

    @torch.inference_mode()
    def evaluate(self, predict, split: str, batch_size: int = 256) -> dict[str, float]:
        """Mean loss and metric of `predict(x) -> out` over a split, and n, the predictions
        scored (what chance's spread on the split depends on). On a test split with a
        test_constant, also `const` (that constant's metric: its squared error, or its
        accuracy) and `gain_se` (the standard error, over the split's sequences, of the gain on
        it: the noise that the split's draw puts into every seed's score alike)."""
        tot_l = tot_m = n = 0.0
        const = self.test_constant() if split == "test" else None
        gains = _Gains() if const is not None else None
        for x, y in self.eval_batches(split, batch_size):
            out = predict(x)
            y = to_device(y, out.device)
            l_sum, m_sum, cnt = self.metric_sums(out, y)
            tot_l, tot_m, n = tot_l + l_sum, tot_m + m_sum, n + cnt
            if gains is not None:
                gains.add(out, y, const.to(out.device))
        loss = tot_l / max(n, 1)
        ev = {"loss": loss, "metric": self.finish_metric(loss, tot_m / max(n, 1)), "n": n}
        if gains is not None:
            ev.update(gains.result())
        return ev


class _Gains:
    """Per test sequence, the gain of a prediction on a constant c, the mean over its
    elements: (y − c)² − (ŷ − y)² for a regression, [ŷ = y] − [c = y] for classes (ŷ the
    arg-max); summed as it streams, with the constant's own metric."""

    def __init__(self) -> None:
        self.const = self.elements = self.sum = self.sum2 = self.n = 0.0

    def add(self, out: torch.Tensor, y: torch.Tensor, c: torch.Tensor) -> None:
        if y.dtype.is_floating_point:
            y = y.float()
            const = (y - c) ** 2  # (B, ...): the constant's squared error
            gain = const - (out.reshape(y.shape).float() - y) ** 2
        else:
            const = (y == c).float()  # the constant's right answers
            gain = (out.argmax(-1) == y).float() - const
        gain = gain.reshape(y.shape[0], -1).mean(1).double()  # (B,)
        self.const += float(const.sum())
        self.elements += const.numel()
        self.sum += float(gain.sum())
        self.sum2 += float((gain**2).sum())
        self.n += y.shape[0]

    def result(self) -> dict[str, float]:
        if self.n < 2:
            return {}
        mean = self.sum / self.n
        var = max(self.sum2 / self.n - mean**2, 0.0) * self.n / (self.n - 1)
        return {"const": self.const / self.elements, "gain_se": (var / self.n) ** 0.5}


def to_device(y: Any, device) -> Any:
    if isinstance(y, torch.Tensor):
        return y.to(device)
    return type(y)(to_device(v, device) for v in y)


class TensorTask(Task):
    """A task whose splits are fixed tensors (x, y) with classification over the last step."""

    def split_tensors(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    @property
    def n_train(self) -> int:
        return self.split_tensors("train")[0].shape[0]

    def train_batch(self, batch_size, gen):
        x, y = self.split_tensors("train")
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
        return x[idx], y[idx]

    def eval_batches(self, split, batch_size):
        x, y = self.split_tensors(split)
        for i in range(0, x.shape[0], batch_size):
            yield x[i : i + batch_size], y[i : i + batch_size]

    def loss(self, out, y):
        return torch.nn.functional.cross_entropy(out, y)

    def metric_sums(self, out, y):
        ce = torch.nn.functional.cross_entropy(out, y, reduction="sum")
        correct = (out.argmax(-1) == y).sum()
        return float(ce), float(correct), float(y.shape[0])

    def baseline(self):
        return 1.0 / self.out_dim


def seeded_split(n: int, seed: int, fractions=(0.6, 0.2, 0.2)) -> dict[str, torch.Tensor]:
    """Disjoint index sets for train/valid/test from one seeded permutation."""
    perm = torch.randperm(n, generator=generator(seed, 99))
    a = round(fractions[0] * n)
    b = a + round(fractions[1] * n)
    return {"train": perm[:a], "valid": perm[a:b], "test": perm[b:]}
