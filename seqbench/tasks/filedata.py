"""A dataset from the user's files, its arrays read and checked by arrays.py, with NumPy alone
(no torch): what the `file` tasks train on (tasks/files.py) and what resolution records of it
(its kind, its content hash, its length T, its split).

Two layouts, the same array names in both:

- an ``.npz`` file (``np.savez``): read into memory;
- a directory of ``.npy`` files (``np.save``), one per array: memory-mapped, so a dataset larger
  than memory trains (a batch is copied out of the map, never the whole array).

Arrays: ``x_train``, ``y_train`` and optionally ``x_valid``, ``y_valid``, ``x_test``, ``y_test``;
or just ``x`` and ``y``. Inputs x are (N, T, D) floats, (N, T) floats (D = 1) or (N, T) integer
token ids; targets y are one per sequence (N,) or one per step (N, T). Without y and with token
ids, the task is next-token prediction over x. An optional ``meta`` entry (a JSON string in the
``.npz``; ``meta.json`` in a directory) may declare ``target`` (regression, classification or
next-token), ``n_classes`` and ``vocab``. The kind is: --set target=..., else the metadata's,
else inferred from the dtypes (float y: regression; integer y: classification; no y: next-token)
and said so.

Missing splits are cut from the training split by one seeded permutation (split_seed, 0 unless
given; independent of the run's seed, so every seed is tested on the same sequences): with
neither valid nor test, 60/20/20 of all sequences; with one of them missing, 20% of train.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from seqbench.errors import UsageError
from seqbench.tasks.arrays import (
    SCAN_ROWS,
    Arrays,
    check_finite,
    content_hash,
    data_error,
    dtype_kind,
    int_range,
)

KINDS = ("regression", "classification", "next-token")
METRICS = {"regression": "mse", "classification": "acc", "next-token": "bpt"}
SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class FileFacts:
    """What a data file holds, as resolution records it and `seqbench tasks --path` shows it."""

    path: str
    kind: str
    kind_source: str  # "metadata", "inferred", or "given" (a target the file does not say)
    data_hash: str
    seq_len: int  # T of the inputs a model sees (next-token: one less than the file's)
    in_dim: int  # D, or the embedding width for token ids
    vocab: int | None  # token ids in x: how many
    n_classes: int | None
    per_step: bool  # one target per step (readout at every step) or per sequence
    sizes: dict[str, int] = field(default_factory=dict)  # sequences per split
    split_seed: int | None = None  # None: the file had every split
    baseline: float | None = None
    baseline_note: str = ""
    targets: int = 1  # target columns of a regression (a table's y_cols)
    persistence: float | None = None  # a table's persistence forecast, scored on test
    table: dict | None = None  # a table's choice and split (tasks/series.py)
    target_sd: float | None = None  # an array regression's train-split target sd (scale)

    @property
    def metric(self) -> str:
        return METRICS[self.kind]


def _pairs(arrays: Arrays) -> dict[str, tuple[str, str | None]]:
    """split -> (x name, y name or None) as the file gives them."""
    names = arrays.names()
    path = arrays.path
    if "x" in names or "y" in names:
        if names & {f"{a}_{s}" for a in "xy" for s in SPLITS}:
            raise data_error(path, "give x and y, or x_train, y_train, ...; not both")
        if "x" not in names:
            raise data_error(path, f"missing x; arrays found: {', '.join(sorted(names))}")
        return {"all": ("x", "y" if "y" in names else None)}
    if "x_train" not in names:
        found = ", ".join(sorted(names)) or "none"
        raise data_error(path, f"missing x_train (or x); arrays found: {found}")
    out = {}
    for s in SPLITS:
        x, y = f"x_{s}", f"y_{s}"
        if x in names:
            out[s] = (x, y if y in names else None)
        elif y in names:
            raise data_error(path, f"it has {y} but no {x}")
    ys = {s for s, (_, y) in out.items() if y is not None}
    if ys and ys != set(out):
        missing = sorted(f"y_{s}" for s in set(out) - ys)
        raise data_error(path, f"missing {', '.join(missing)} (other splits have targets)")
    return out


def split_indices(n: int, seed: int, parts: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Disjoint sorted index sets of one seeded permutation of n rows: 60/20/20 for three
    parts, 80/20 for two (train and the missing one)."""
    perm = np.random.default_rng(seed).permutation(n)
    if len(parts) == 3:
        a, b = round(0.6 * n), round(0.8 * n)
        cuts = {"train": perm[:a], "valid": perm[a:b], "test": perm[b:]}
    else:
        a = round(0.8 * n)
        cuts = {parts[0]: perm[:a], parts[1]: perm[a:]}
    return {s: np.sort(i) for s, i in cuts.items()}


class Dataset:
    """The checked splits: (x, y) per split as arrays (memory-mapped views where the file
    allows; a split cut from another is an index array over it)."""

    def __init__(self, path: str, target: str | None = None, split_seed: int | None = None):
        if target is not None and target not in KINDS:
            raise UsageError(f"target must be one of {', '.join(KINDS)}, got {target!r}")
        self.path = path
        arrays = Arrays(path)
        pairs = _pairs(arrays)
        raw = {s: (arrays.get(x), arrays.get(y) if y else None) for s, (x, y) in pairs.items()}
        self.meta = arrays.meta
        self._label = {
            id(a): n
            for sp, names in pairs.items()
            for a, n in zip(raw[sp], names, strict=True)
            if a is not None
        }
        self._check_shapes(raw)
        has_all = set(raw) == set(SPLITS)
        if has_all and split_seed is not None:
            raise UsageError(
                f"data file {path!r} has its own train/valid/test splits: split_seed does not apply"
            )
        self.split_seed = None if has_all else (0 if split_seed is None else split_seed)
        self.splits = self._cut(raw)
        self.kind, self.kind_source = self._kind(target)
        self._check_values()

    # -- shapes and splits ----------------------------------------------------------------
    def _check_shapes(self, raw) -> None:
        path = self.path
        dims = set()
        for s, (x, y) in raw.items():
            xn = "x" if s == "all" else f"x_{s}"
            yn = "y" if s == "all" else f"y_{s}"
            kind = dtype_kind(path, xn, x)
            if x.ndim not in (2, 3) or (kind == "int" and x.ndim != 2):
                want = "(N, T, D) or (N, T) floats, or (N, T) token ids"
                raise data_error(path, f"{xn} has shape {tuple(x.shape)}; expected {want}")
            if x.shape[0] == 0:
                raise data_error(path, f"the {s} split is empty ({xn} has 0 sequences)")
            if x.shape[1] == 0:
                raise data_error(path, f"{xn} has sequences of length 0")
            dims.add((kind, x.shape[1], x.shape[2] if x.ndim == 3 else 1))
            if y is not None:
                dtype_kind(path, yn, y)
                if y.shape[0] != x.shape[0]:
                    raise data_error(
                        path, f"{xn} has {x.shape[0]} sequences but {yn} has {y.shape[0]}"
                    )
                if y.ndim not in (1, 2) or (y.ndim == 2 and y.shape[1] != x.shape[1]):
                    raise data_error(
                        path,
                        f"{yn} has shape {tuple(y.shape)}; expected ({x.shape[0]},) or "
                        f"({x.shape[0]}, {x.shape[1]}) for {xn} of shape {tuple(x.shape)}",
                    )
        if len(dims) > 1:
            shown = "; ".join(f"{k} T={t} D={d}" for k, t, d in sorted(dims))
            raise data_error(path, f"the splits' inputs differ in dtype, length or width ({shown})")
        ndims = {y.ndim for _, y in raw.values() if y is not None}
        if len(ndims) > 1:
            raise data_error(path, "some splits have per-sequence targets, others per-step ones")
        (self.x_kind, self.T, self.D) = dims.pop()

    def _cut(self, raw) -> dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]:
        """split -> (x, y, rows): rows None means the whole array."""
        if "all" in raw:
            x, y = raw["all"]
            if x.shape[0] < 3:
                raise data_error(self.path, f"{x.shape[0]} sequences cannot be split in three")
            idx = split_indices(x.shape[0], self.split_seed, SPLITS)
            return {s: (x, y, idx[s]) for s in SPLITS}
        out = {s: (x, y, None) for s, (x, y) in raw.items()}
        missing = [s for s in SPLITS if s not in raw]
        if missing:
            x, y = raw["train"]
            parts = ("train", *missing)
            idx = split_indices(x.shape[0], self.split_seed, SPLITS if len(parts) == 3 else parts)
            for s in parts:
                if len(idx[s]) == 0:
                    raise data_error(self.path, f"too few training sequences to cut a {s} split")
                out[s] = (x, y, idx[s])
        return out

    def size(self, split: str) -> int:
        x, _, rows = self.splits[split]
        return x.shape[0] if rows is None else len(rows)

    def rows(self, split: str, index: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows `index` (positions within the split, in the order given: give them ascending
        for sequential reads of a memory map) of x and y, copied out of any map."""
        x, y, rows = self.splits[split]
        if rows is not None:
            index = rows[index]
        return np.array(x[index]), (None if y is None else np.array(y[index]))  # copies

    # -- kind and values ------------------------------------------------------------------
    def _kind(self, target: str | None) -> tuple[str, str]:
        has_y = self.splits["train"][1] is not None
        y_kind = dtype_kind(self.path, "y", self.splits["train"][1]) if has_y else None
        meta = self.meta.get("target")
        if meta is not None and meta not in KINDS:
            raise data_error(self.path, f"metadata target must be one of {', '.join(KINDS)}")
        # what the file says of itself; a target given otherwise is "given"
        if meta is not None:
            kind, source = meta, "metadata"
        elif not has_y:
            kind, source = "next-token", "inferred"
        else:
            kind, source = ("regression" if y_kind == "float" else "classification"), "inferred"
        if target is not None and target != kind:
            kind, source = target, "given"
        if kind == "next-token":
            if has_y or self.x_kind != "int":
                raise data_error(self.path, "next-token needs token ids x (N, T) and no y")
            if self.T < 2:
                raise data_error(self.path, "next-token needs sequences of at least 2 tokens")
        elif not has_y:
            raise data_error(self.path, f"{kind} needs targets y (y_train, ...); the file has none")
        elif kind == "classification" and y_kind != "int":
            raise data_error(self.path, "classification targets y must be integer class ids")
        return kind, source

    def _check_values(self) -> None:
        path = self.path
        seen: set[int] = set()
        lo_x, hi_x, lo_y, hi_y = math.inf, -math.inf, math.inf, -math.inf
        for x, y, _ in self.splits.values():
            key = id(x)
            if key in seen:
                continue
            seen.add(key)
            check_finite(path, self._label[id(x)], x)
            if y is not None:
                check_finite(path, self._label[id(y)], y)
            if self.x_kind == "int":
                a, b = int_range(x)
                lo_x, hi_x = min(lo_x, a), max(hi_x, b)
            if self.kind == "classification":
                a, b = int_range(y)
                lo_y, hi_y = min(lo_y, a), max(hi_y, b)
        self.vocab = None
        if self.x_kind == "int":
            if lo_x < 0:
                raise data_error(path, f"token ids in x must be ≥ 0, found {int(lo_x)}")
            self.vocab = _declared(path, self.meta, "vocab", int(hi_x) + 1, "token id", hi_x)
        self.n_classes = None
        if self.kind == "classification":
            if lo_y < 0:
                raise data_error(path, f"class labels in y must be ≥ 0, found {int(lo_y)}")
            self.n_classes = _declared(path, self.meta, "n_classes", int(hi_y) + 1, "label", hi_y)
            if self.n_classes < 2:
                raise data_error(path, "classification needs at least 2 classes; y has one")
        if self.kind == "next-token":
            self.n_classes = self.vocab

    @property
    def per_step(self) -> bool:
        y = self.splits["train"][1]
        return self.kind == "next-token" or (y is not None and y.ndim == 2)

    # -- the trivial baseline -------------------------------------------------------------
    def baseline(self) -> tuple[float, str]:
        """The test metric of the predictor that ignores the inputs, fitted on train: the mean
        (regression), the majority class (classification), the unigram (next-token)."""
        if self.kind == "regression":
            total, count = 0.0, 0
            for y in self._targets("train"):
                total, count = total + float(y.sum(dtype=np.float64)), count + y.size
            mean = total / count
            sq, n = 0.0, 0
            for y in self._targets("test"):
                sq, n = sq + float(((y.astype(np.float64) - mean) ** 2).sum()), n + y.size
            return sq / n, f"predict the train mean {mean:.4g}"
        counts = np.zeros(self.n_classes, dtype=np.int64)
        for y in self._targets("train"):
            counts += np.bincount(y.reshape(-1).astype(np.int64), minlength=self.n_classes)
        if self.kind == "classification":
            top = int(counts.argmax())
            hits, n = 0, 0
            for y in self._targets("test"):
                hits, n = hits + int((y == top).sum()), n + y.size
            return hits / n, f"majority class {top} of train"
        p = (counts + 1.0) / (counts.sum() + self.n_classes)  # add-one, as the text tasks
        logp = np.log2(p)
        bits, n = 0.0, 0
        for y in self._targets("test"):
            bits, n = bits - float(logp[y.reshape(-1).astype(np.int64)].sum()), n + y.size
        return bits / n, "unigram of train"

    def moments(self) -> dict[str, np.ndarray | float]:
        """The training split's mean and sd of each input feature (float inputs) and of the
        regression target: what `scale=standard` standardises with (a constant one is only
        shifted). Computed once per opened file, in SCAN_ROWS blocks (memory maps stay
        mapped)."""
        if getattr(self, "_moments", None) is None:
            n = self.size("train")
            sx = sxx = sy = syy = 0.0
            cx = cy = 0
            for i in range(0, n, SCAN_ROWS):
                x, y = self.rows("train", slice(i, min(i + SCAN_ROWS, n)))
                if self.x_kind == "float":
                    x = x.astype(np.float64).reshape(-1, self.D)
                    sx, sxx, cx = sx + x.sum(0), sxx + (x**2).sum(0), cx + x.shape[0]
                if self.kind == "regression":
                    y = y.astype(np.float64)
                    sy, syy, cy = sy + float(y.sum()), syy + float((y**2).sum()), cy + y.size
            out: dict[str, np.ndarray | float] = {}
            if cx:
                mx = sx / cx
                out["x_mean"], out["x_sd"] = mx, _sd(sxx / cx - mx**2)
            if cy:
                my = sy / cy
                out["y_mean"], out["y_sd"] = my, float(_sd(np.array(syy / cy - my**2)))
            self._moments = out
        return self._moments

    def _targets(self, split: str):
        n = self.size(split)
        for i in range(0, n, SCAN_ROWS):
            x, y = self.rows(split, slice(i, min(i + SCAN_ROWS, n)))
            yield x[:, 1:] if self.kind == "next-token" else y


def _sd(var: np.ndarray) -> np.ndarray:
    """sd from a variance; 1 where a column is (numerically) constant: shifted, not blown up."""
    var = np.maximum(np.asarray(var, np.float64), 0.0)
    sd = np.sqrt(var)
    return np.where(sd > 1e-12 * np.maximum(1.0, sd.max(initial=0.0)), sd, 1.0)


def _declared(path: str, meta: dict, key: str, found: int, what: str, hi) -> int:
    """The metadata's count (vocab, n_classes) if given, checked against the largest id."""
    given = meta.get(key)
    if given is None:
        return found
    if not isinstance(given, int) or isinstance(given, bool) or given < 1:
        raise data_error(path, f"metadata {key} must be a positive integer, got {given!r}")
    if hi >= given:
        raise data_error(path, f"a {what} {int(hi)} is out of range for {key} = {given}")
    return given


class TableDataset:
    """A table cut into windows (tasks/series.Table) behind the Dataset interface the file
    task reads: a regression, its splits by time, its windows copied out per batch."""

    kind, kind_source, x_kind, per_step = "regression", "table", "float", False
    vocab = n_classes = split_seed = None

    def __init__(self, path: str, target: str | None, split_seed: int | None, choice):
        from seqbench.tasks.series import Table

        if target not in (None, "regression"):
            raise UsageError(f"data file {path!r} is a table: a forecast is a regression")
        if split_seed is not None:
            raise UsageError(
                f"data file {path!r} is a table: it is split by time, split_seed does not apply"
            )
        self.table = Table(path, choice)
        self.T, self.D = choice.seq_len, self.table.D

    def size(self, split: str) -> int:
        return len(self.table.starts[split])

    def rows(self, split: str, index) -> tuple[np.ndarray, np.ndarray]:
        y = self.table.y[split][index]
        return self.table.windows(split, index), (y[:, 0] if y.shape[1] == 1 else y)


_OPENED: dict[tuple, tuple[FileFacts, Any]] = {}


def describe(
    path: str, target: str | None = None, split_seed: int | None = None, table=None
) -> FileFacts:
    """Check a data file and say what it holds (memoised per path, size, mtime and options:
    a sweep resolves many points over one file, and the task trains on the same check).
    `table`: how a CSV or Parquet file is cut (tasks/series.Choice)."""
    return open_checked(path, target, split_seed, table)[0]


def open_checked(
    path: str, target: str | None = None, split_seed: int | None = None, table=None
) -> tuple[FileFacts, Any]:
    """(facts, the checked Dataset) of a data file: read, checked and hashed once per process
    for a given file state and options."""
    from seqbench.tasks.table_file import stat_data_path

    p = Path(path)
    st = stat_data_path(path, data_error)
    stamp = (st.st_size, st.st_mtime_ns)
    if p.is_dir():
        stamp += tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in p.iterdir())
    key = (os.path.realpath(path), stamp, target, split_seed, table)
    if key in _OPENED:
        return _OPENED[key]
    if table is not None:
        facts, ds = _open_table(path, target, split_seed, table)
        _OPENED[key] = facts, ds
        return facts, ds
    ds = Dataset(path, target, split_seed)
    base, note = ds.baseline()
    facts = FileFacts(
        path=path,
        kind=ds.kind,
        kind_source=ds.kind_source,
        data_hash=content_hash(path),
        seq_len=ds.T - 1 if ds.kind == "next-token" else ds.T,
        in_dim=EMBED if ds.x_kind == "int" else ds.D,
        vocab=ds.vocab,
        n_classes=ds.n_classes,
        per_step=ds.per_step,
        sizes={s: ds.size(s) for s in SPLITS},
        split_seed=ds.split_seed,
        baseline=base,
        baseline_note=note,
        target_sd=ds.moments()["y_sd"] if ds.kind == "regression" else None,
    )
    _OPENED[key] = facts, ds
    return facts, ds


def _open_table(path: str, target, split_seed, choice) -> tuple[FileFacts, TableDataset]:
    ds = TableDataset(path, target, split_seed, choice)
    t = ds.table
    base = t.baselines()
    facts = FileFacts(
        path=path,
        kind="regression",
        kind_source="table",
        data_hash=t.data_hash,
        seq_len=choice.seq_len,
        in_dim=t.D,
        vocab=None,
        n_classes=None,
        per_step=False,
        sizes={s: ds.size(s) for s in SPLITS},
        split_seed=None,
        baseline=base["mean"],
        baseline_note="predict the train mean of each target",
        targets=t.n_targets,
        persistence=base["persistence"],
        table={
            **choice.fields(),
            "series": t.n_series,
            "time_range": t.time_range,
            "time_dates": t.time_dates,
        },
    )
    return facts, ds


EMBED = 64  # embedding width for token-id inputs (as the language-modelling tasks)
