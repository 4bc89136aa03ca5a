"""Polyphonic music modelling on Bach chorales shipped with music21 (like JSB Chorales).

Each chorale becomes one 88-pitch binary frame per quarter note (MIDI 21..108) from its
Soprano, Alto, Tenor and Bass parts; the model predicts frame t+1 from frames ≤ t. The metric is
the frame NLL: the sum of the 88 per-pitch Bernoulli NLLs of a frame, averaged over frames.
Parsing takes ~30 s on 2 cores, so the frames are cached to an .npz under the cache directory.
"""

from __future__ import annotations

import contextlib
import math
import os
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from seqbench.errors import MissingDependencyError, SeqbenchError
from seqbench.tasks.base import Task, cache_dir, seeded_split

VOICES = ("Soprano", "Alto", "Tenor", "Bass")
LOW, N_PITCH = 21, 88


def chorale_frames(score) -> np.ndarray | None:
    """(L, 88) binary piano roll, one frame per quarter note, or None without the four voices."""
    parts = [p for p in score.parts if (p.partName or "") in VOICES]
    if not parts:
        return None
    length = math.ceil(float(score.highestTime))
    roll = np.zeros((length, N_PITCH), dtype=np.uint8)
    for part in parts:
        flat = part.flatten()  # keep a reference: notes' offsets are read relative to it
        for note in flat.notes:
            start = float(flat.elementOffset(note))
            end = start + float(note.quarterLength)
            first, last = max(math.floor(start), 0), min(math.ceil(end), length)
            for p in note.pitches:
                if LOW <= p.midi < LOW + N_PITCH:
                    roll[first:last, p.midi - LOW] = 1
    return roll


def load_chorales(limit: int | None = None) -> list[np.ndarray]:
    """All (or the first `limit`) chorales as piano rolls, parsed once and cached.

    Processes that meet an empty cache at once (two sweep workers) take turns on a lock file:
    the first parses and writes the cache, the others then read it. Parsing side by side made
    one read music21's half-written pickle of a chorale ("zlib.error: incomplete stream")."""
    path = cache_dir() / f"chorales-{'all' if limit is None else limit}.npz"
    if path.exists():
        return _read_rolls(path)
    with _exclusive(path.with_suffix(".lock")):
        if path.exists():  # another process parsed them while this one waited
            return _read_rolls(path)
        return _parse_chorales(path, limit)


def _read_rolls(path: Path) -> list[np.ndarray]:
    with np.load(path) as z:
        rolls, lengths = z["rolls"], z["lengths"]
    return np.split(rolls, np.cumsum(lengths)[:-1])


@contextlib.contextmanager
def _exclusive(lock_path: Path):
    """An exclusive advisory lock on `lock_path` for the block (none where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _parse_chorales(path: Path, limit: int | None) -> list[np.ndarray]:
    try:
        from music21 import corpus
    except ImportError:
        raise MissingDependencyError("music21", "the chorales task") from None
    out = []
    for score in corpus.chorales.Iterator(returnType="stream"):
        roll = chorale_frames(score)
        if roll is not None and len(roll) >= 2:
            out.append(roll)
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise SeqbenchError("music21 returned no usable chorales")
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez_compressed(tmp, rolls=np.concatenate(out), lengths=[len(r) for r in out])
    tmp.replace(path)
    return out


class Chorales(Task):
    name = "chorales"
    readout = "all"
    in_dim = out_dim = N_PITCH

    @cached_property
    def _splits(self) -> dict[str, list[torch.Tensor]]:
        rolls = [torch.as_tensor(r, dtype=torch.float32) for r in load_chorales(self.args.subset)]
        idx = seeded_split(len(rolls), self.args.seed, (0.8, 0.1, 0.1))
        return {s: [rolls[i] for i in ix.tolist()] for s, ix in idx.items()}

    @staticmethod
    def _pad(seqs: list[torch.Tensor]) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        T = max(len(s) for s in seqs) - 1
        x = torch.zeros(len(seqs), T, N_PITCH)
        y = torch.zeros(len(seqs), T, N_PITCH)
        mask = torch.zeros(len(seqs), T)
        for i, s in enumerate(seqs):
            n = len(s) - 1
            x[i, :n], y[i, :n], mask[i, :n] = s[:-1], s[1:], 1.0
        return x, (y, mask)

    def train_batch(self, batch_size, gen):
        train = self._splits["train"]
        picks = torch.randint(0, len(train), (batch_size,), generator=gen).tolist()
        crops = []
        for i in picks:
            s = train[i]
            if len(s) > self.seq_len + 1:
                start = int(torch.randint(0, len(s) - self.seq_len, (1,), generator=gen))
                s = s[start : start + self.seq_len + 1]
            crops.append(s)
        return self._pad(crops)

    def eval_batches(self, split, batch_size):
        seqs = self._splits[split]
        for i in range(0, len(seqs), batch_size):
            yield self._pad(seqs[i : i + batch_size])

    def _frame_nll(self, out, y):
        target, mask = y
        nll = torch.nn.functional.binary_cross_entropy_with_logits(
            out, target, reduction="none"
        ).sum(-1)  # (B, T): sum over pitches
        return (nll * mask).sum(), mask.sum()

    def loss(self, out, y):
        total, n = self._frame_nll(out, y)
        return total / n.clamp(min=1)

    def metric_sums(self, out, y):
        total, n = self._frame_nll(out, y)
        return float(total), float(total), float(n)

    def baseline(self):
        """Frame NLL of independent per-pitch Bernoulli frequencies of the training split on
        the test split: a model that ignores the past does no better."""
        train = torch.cat([s[1:] for s in self._splits["train"]]).double()
        test = torch.cat([s[1:] for s in self._splits["test"]]).double()
        q = ((train.sum(0) + 1) / (len(train) + 2))[None]  # Laplace-smoothed, (1, 88)
        return float(-(test * q.log() + (1 - test) * (1 - q).log()).sum(-1).mean())

    @property
    def n_train(self) -> int:
        return len(self._splits["train"])

    @property
    def n_chorales(self) -> int:
        return sum(len(v) for v in self._splits.values())
