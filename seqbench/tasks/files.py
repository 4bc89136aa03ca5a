"""The `file` tasks: the user's own sequences (tasks/filedata.py reads and checks them).

One class for the three kinds, registered as file-regression (MSE), file-classification
(accuracy) and file-next-token (bits per token); `--task file` picks the kind from the file.
"""

from __future__ import annotations

import numpy as np
import torch

from seqbench.errors import SeqbenchError
from seqbench.tasks import series
from seqbench.tasks.arrays import content_hash
from seqbench.tasks.base import Task, TaskArgs
from seqbench.tasks.filedata import open_checked


class FileTask(Task):
    """Batches are copied out of the (memory-mapped) arrays; evaluation walks each split in
    order, all of it."""

    def __init__(self, args: TaskArgs):
        if not args.path:
            raise SeqbenchError(
                "the file tasks need a data file: `path` FILE.npz, a directory of .npy files, "
                "or a CSV or Parquet table"
            )
        choice = series.choice_for(args.path, args)
        self.facts, self.data = open_checked(args.path, args.target, args.split_seed, choice)
        if args.data_hash is not None and args.data_hash != self.facts.data_hash:
            raise SeqbenchError(
                f"data file {args.path!r} has changed since this config was made "
                f"(sha256 {content_hash(args.path)[:12]}…, the config says "
                f"{args.data_hash[:12]}…)"
            )
        super().__init__(args)
        self.seq_len = self.facts.seq_len
        self.name = f"file-{self.facts.kind}"
        self.kind = self.facts.kind
        self.readout = "all" if self.facts.per_step else "last"
        self.in_dim = self.facts.in_dim
        self.vocab = self.facts.vocab
        self.out_dim = self.facts.targets if self.kind == "regression" else self.facts.n_classes
        # scale=standard (array files; a table is standardised by tasks/series.py): inputs and
        # regression targets as (v − mean) / sd of the training split, the metric in those units
        self.moments = self.data.moments() if args.scale == "standard" else {}

    @property
    def n_train(self) -> int:
        return self.facts.sizes["train"]

    def _tensors(self, x: np.ndarray, y: np.ndarray | None):
        if self.vocab is not None:
            xt = torch.as_tensor(x.astype(np.int64))
        else:
            if x.ndim == 2:
                x = x[..., None]  # (N, T) floats: one feature
            m = self.moments
            if "x_mean" in m:
                x = (x - m["x_mean"]) / m["x_sd"]  # (N, T, D) in float64, then float32
            xt = torch.as_tensor(x.astype(np.float32, copy=False))
        if self.kind == "next-token":
            return xt[:, :-1], xt[:, 1:]
        if self.kind == "regression" and "y_mean" in self.moments:
            y = (y - self.moments["y_mean"]) / self.moments["y_sd"]
        yt = torch.as_tensor(y.astype(np.float32 if self.kind == "regression" else np.int64))
        return xt, yt

    def train_batch(self, batch_size, gen):
        idx = torch.randint(0, self.n_train, (batch_size,), generator=gen).numpy()
        order = np.argsort(idx, kind="stable")  # read the map in order, give the draw's order
        x, y = self.data.rows("train", idx[order])
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return self._tensors(x[inverse], None if y is None else y[inverse])

    def eval_batches(self, split, batch_size):
        n = self.data.size(split)
        for i in range(0, n, batch_size):
            yield self._tensors(*self.data.rows(split, slice(i, min(i + batch_size, n))))

    # -- objective ------------------------------------------------------------------------
    def loss(self, out, y):
        if self.kind == "regression":
            return torch.nn.functional.mse_loss(out.squeeze(-1), y)
        return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))

    def metric_sums(self, out, y):
        if self.kind == "regression":
            sq = float(((out.squeeze(-1) - y) ** 2).sum())
            return sq, sq, float(y.numel())
        flat = out.reshape(-1, out.shape[-1])
        ce = float(torch.nn.functional.cross_entropy(flat, y.reshape(-1), reduction="sum"))
        if self.kind == "next-token":
            return ce, ce, float(y.numel())
        return ce, float((flat.argmax(-1) == y.reshape(-1)).sum()), float(y.numel())

    def finish_metric(self, loss_mean, metric_mean):
        if self.kind == "next-token":
            return loss_mean / np.log(2)  # nats -> bits per token
        return metric_mean

    def test_constant(self):
        """The test split's best constant, computed once: for a regression its targets' mean
        (per target), in the units the model is scored in; for classes its most frequent
        class. None for next-token prediction (its score is in bits, not a share)."""
        if self.kind == "next-token":
            return None
        if not hasattr(self, "_test_constant"):
            if self.kind == "regression":
                total, n = 0.0, 0
                for _x, y in self.eval_batches("test", 4096):
                    y = y.double()
                    flat = y.reshape(-1, self.out_dim) if self.out_dim > 1 else y.reshape(-1)
                    total, n = total + flat.sum(0), n + flat.shape[0]
                self._test_constant = (total / max(n, 1)).float() if n else None
            else:
                counts = torch.zeros(self.out_dim, dtype=torch.long)
                for _x, y in self.eval_batches("test", 4096):
                    counts += torch.bincount(y.reshape(-1), minlength=self.out_dim)
                self._test_constant = counts.argmax() if counts.sum() else None
        return self._test_constant

    def baseline(self):
        if self.kind == "regression" and "y_mean" in self.moments:  # the MSE in sd units
            return self.facts.baseline / self.facts.target_sd**2
        return self.facts.baseline

    def other_baselines(self):
        if self.facts.persistence is None:
            return {}
        return {"persistence": self.facts.persistence}
