"""A time series as it comes: a CSV or Parquet table (read by tasks/table_file.py), cut into
forecasting windows here (pandas and NumPy, no torch). What the `file` tasks train on when
--path names a table.

The user names the columns (task fields): ``y_cols`` the target(s), ``x_cols`` the inputs
(unset: the targets' own past), ``time_col`` an optional time column to sort by, ``series_col``
an optional series id, ``horizon`` how many steps after a window's last row the target lies
(default 1, the next step) and ``seq_len`` the window length T (default 64). Column lists are
comma-separated names.

The rules, one each:

- **Order.** Rows are sorted by (series, time) when a time column is given (a stable sort);
  without one the file's row order within each series is its time, and series are aligned at
  their first row. A time column that repeats a time within a series is refused.
- **Windows.** A window ending at row e of a series holds rows e−T+1 … e of the inputs; its
  target is the targets' row e + horizon. A series gives L − T − horizon + 1 windows; one too
  short for a single window is refused, naming it.
- **Split by time, never shuffled.** Every window is placed by its target's time: the first
  60% of target times (over all series) train, the next 20% validate, the last 20% test, so
  every training target precedes every validation target, which precede every test target.
- **Standardised with train statistics only.** Each input and target column is shifted and
  scaled by its mean and standard deviation over the rows up to the last training target's
  time (a constant column is only shifted). The metric is the MSE of the standardised
  targets, so the mean forecast scores about 1.
- **Identity.** The content hash is the sha256 of the columns used, as numbers after sorting
  (times as numbers or nanoseconds, series ids as text): a CSV and a Parquet file of the same
  data hash alike; the columns, horizon, T and split are recorded beside it.
- **Refused, one line each:** a missing column, a non-numeric input or target, a missing or
  infinite value, a repeated time, a time column that is neither numbers nor dates, a series
  too short, a target that is also an input at lag 0 (horizon 0), a split left empty.

Two trivial baselines, each fitted on train and scored on test: the train mean of each target,
and persistence (the target's last value in the window: y at row e).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass

import numpy as np

from seqbench.errors import UsageError
from seqbench.tasks.table_file import (
    SUFFIXES,
    is_table,
    read_table,
)
from seqbench.tasks.table_file import table_error as _fail

TABLE_FIELDS = ("x_cols", "y_cols", "time_col", "series_col", "horizon")
DEFAULT_T = 64
DEFAULT_HORIZON = 1
FRACTIONS = (0.6, 0.2)  # train, valid; test is the rest
SPLIT = "time"  # what resolution records as `split`


def columns(text: str | None) -> tuple[str, ...]:
    """'a, b' -> ('a', 'b'): names stripped, empty ones dropped."""
    return tuple(c.strip() for c in (text or "").split(",") if c.strip())


@dataclass(frozen=True)
class Choice:
    """How a table is cut: the columns, the horizon and the window length."""

    y_cols: tuple[str, ...]
    x_cols: tuple[str, ...] | None = None  # None: the targets' own past
    time_col: str | None = None
    series_col: str | None = None
    horizon: int = DEFAULT_HORIZON
    seq_len: int = DEFAULT_T

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.x_cols if self.x_cols else self.y_cols

    def fields(self) -> dict:
        """The task fields that record this choice (normalised: 'a,b', no spaces)."""
        return {
            "x_cols": ",".join(self.x_cols) if self.x_cols else None,
            "y_cols": ",".join(self.y_cols),
            "time_col": self.time_col,
            "series_col": self.series_col,
            "horizon": self.horizon,
            "seq_len": self.seq_len,
            "split": SPLIT,
        }


MAX_ROWS = 2**31 - 1  # the most rows a window, or a horizon, may span
MAX_ABS = 1e30  # the largest magnitude a column may hold (±1e308 overflowed the variance)
OUTLIER = 1e9  # a value this many median absolute deviations from the median is an error


def choice_from(values: dict, path: str) -> Choice:
    """The Choice of a config's fields (a dict or an object with the same attributes), checked
    for what needs no data: a target named, horizon ≥ 0, T ≥ 1, no target read at lag 0."""
    get = values.get if isinstance(values, dict) else lambda n: getattr(values, n, None)
    y = columns(get("y_cols"))
    if not y:
        raise UsageError(
            f"data file {path!r} is a table: name its target column(s) with `y_cols=NAME` "
            "(and the inputs with `x_cols=A,B`; without them the targets' own past)"
        )
    x = columns(get("x_cols")) or None
    for name, cols in (("y_cols", y), ("x_cols", x or ())):
        dup = sorted({c for c in cols if cols.count(c) > 1})
        if dup:
            raise UsageError(f"{name} names {dup[0]!r} twice")
    horizon = get("horizon")
    horizon = DEFAULT_HORIZON if horizon is None else horizon
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 0:
        raise UsageError(f"horizon must be an integer ≥ 0 (steps ahead), got {horizon!r}")
    T = get("seq_len")
    T = DEFAULT_T if T is None else T
    for name, v in (("horizon", horizon), ("seq_len", T)):
        if isinstance(v, int) and v > MAX_ROWS:  # past 64 bits the cut's arithmetic overflowed
            raise UsageError(f"{name} {v} is more rows than a table holds (at most {MAX_ROWS:,})")
    leak = sorted(set(y) & set(x if x else y))
    if horizon == 0 and leak:
        raise UsageError(
            f"target column {leak[0]!r} is also an input at lag 0 (horizon 0): the model would "
            "read its own target; give horizon ≥ 1 or leave it out of x_cols"
        )
    time_col, series_col = get("time_col") or None, get("series_col") or None
    named = [*y, *(x or ())]
    for name, col in (("time_col", time_col), ("series_col", series_col)):
        if col is not None and col in named:
            raise UsageError(f"{name} {col!r} is also an input or target column")
    if time_col is not None and time_col == series_col:
        raise UsageError(f"time_col and series_col are both {time_col!r}")
    return Choice(y, x, time_col, series_col, horizon, T)


def choice_for(path: str, values) -> Choice | None:
    """How the data file at `path` is cut, from a config's fields (a dict or an object with
    the same attributes): a Choice for a table (choice_from), None for any other file, which
    refuses the table's fields."""
    get = values.get if isinstance(values, dict) else lambda n: getattr(values, n, None)
    if is_table(path):
        if get("split") not in (None, SPLIT):
            raise UsageError(f"a table is split by time (split={SPLIT}); got {get('split')!r}")
        return choice_from(values, path)
    for name in (*TABLE_FIELDS, "split"):
        if get(name) is not None:
            raise UsageError(
                f"{name} cuts a CSV or Parquet table; {path!r} is not one "
                f"(a table's name ends in {', '.join(SUFFIXES)})"
            )
    return None


def _shown(v) -> str:
    """A cell as the table gave it, for an error: 0, 1.5, '1959-04-01' (not np.int64(0)),
    at most 40 characters."""
    if type(v).__module__ == "numpy" and hasattr(v, "item"):
        v = v.item()
    text = repr(v) if isinstance(v, str) else str(v)
    return text if len(text) <= 40 else text[:40] + "…"


def _row(index: int) -> str:
    return f"data row {index + 1}"


class Table:
    """A table cut into windows as `choice` says: the standardised inputs of every series one
    after another (`values`, (rows, D)), each window's first row (`starts`), its target (`y`),
    the target's last value in the window (`last`, for persistence) and its split."""

    def __init__(self, path: str, choice: Choice):
        import pandas as pd

        self.path, self.choice = path, choice
        df = read_table(path)
        self._check_columns(df)
        used = [
            c
            for c in (choice.series_col, choice.time_col, *choice.y_cols, *(choice.x_cols or ()))
            if c is not None
        ]
        df = df[list(dict.fromkeys(used))]
        for c in dict.fromkeys([*choice.y_cols, *(choice.x_cols or ())]):
            self._check_numeric(df, c)
        for c in (choice.time_col, choice.series_col):
            if c is not None:
                self._check_present(df, c)
        self.time_dates = False  # a time column of dates (nanoseconds) rather than numbers
        time = self._times(df) if choice.time_col else None
        series = df[choice.series_col].astype(str) if choice.series_col else None
        n = len(df)
        key = pd.DataFrame(
            {  # one series: a constant (only its changes are read, and a name is hashed)
                "s": series if series is not None else np.zeros(n, np.int8),
                "t": time if time is not None else pd.Series(0.0, index=df.index),
            }
        )
        order = np.lexsort(
            [np.arange(n)]
            + ([time.to_numpy()] if time is not None else [])
            + ([series.to_numpy()] if series is not None else [])
        )
        if time is not None:  # a repeated (series, time) sits next to its twin once sorted
            t = time.to_numpy()[order]
            same = t[1:] == t[:-1]
            if series is not None:
                ids = series.to_numpy()[order]
                same &= ids[1:] == ids[:-1]
            if same.any():
                at = np.flatnonzero(same)
                i = int(min(order[at].min(), order[at + 1].min()))  # the first in the file
                where = f" in series {series.iloc[i]!r}" if series is not None else ""
                raise _fail(
                    path,
                    f"time {_shown(df[choice.time_col].iloc[i])}{where} appears more than "
                    f"once ({_row(i)}); one row per time",
                )
        timed = time is not None
        del time, series  # the key holds them: freed before the sorted copies are made
        df, key = df.iloc[order].reset_index(drop=True), key.iloc[order].reset_index(drop=True)
        self.data_hash = self._hash(df, key, timed)
        self._cut(df, key, timed)

    # -- checks -----------------------------------------------------------------------------
    def _check_columns(self, df) -> None:
        c = self.choice
        named = [
            n for n in (*c.y_cols, *(c.x_cols or ()), c.time_col, c.series_col) if n is not None
        ]
        have = [str(x) for x in df.columns]
        missing = [n for n in named if n not in have]
        if missing:
            shown = ", ".join(h if len(h) <= 40 else h[:40] + "…" for h in have[:20])
            shown += " …" if len(have) > 20 else ""
            raise _fail(self.path, f"no column {_shown(missing[0])}; its columns: {shown}")
        if len(df) == 0:
            raise _fail(self.path, "the table has no rows")

    def _check_present(self, df, c: str) -> None:
        miss = df[c].isna().to_numpy()
        if miss.any():
            first = int(np.flatnonzero(miss)[0])
            raise _fail(
                self.path,
                f"column {c!r} has {int(miss.sum())} missing value(s), the first at "
                f"{_row(first)}; fill or drop them first (seqbench does not guess them)",
            )

    def _check_numeric(self, df, c: str) -> None:
        import pandas as pd

        col = df[c]
        if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)):
            bad = pd.to_numeric(col, errors="coerce").isna() & col.notna()
            i = int(np.flatnonzero(bad.to_numpy())[0]) if bad.any() else 0
            raise _fail(
                self.path,
                f"column {c!r} is not numeric ({_row(i)} holds {str(col.iloc[i])[:40]!r})",
            )
        self._check_present(df, c)
        v = col.to_numpy(dtype=np.float64)
        if not np.isfinite(v).all():
            i = int(np.flatnonzero(~np.isfinite(v))[0])
            raise _fail(self.path, f"column {c!r} has an infinite value at {_row(i)}")
        huge = np.abs(v) > MAX_ABS  # its square, the variance, would overflow
        if huge.any():
            i = int(np.flatnonzero(huge)[0])
            raise _fail(
                self.path,
                f"column {c!r} has {v[i]:.3g} at {_row(i)}: beyond ±{MAX_ABS:.0e}, more than "
                "seqbench can standardise; rescale the column",
            )
        med = np.median(v)
        spread = np.median(np.abs(v - med))  # robust: one outlier does not move it
        far = np.abs(v - med) > OUTLIER * spread if spread > 0 else np.zeros(len(v), bool)
        if far.any():
            i = int(np.flatnonzero(far)[0])
            raise _fail(
                self.path,
                f"column {c!r} has {v[i]:.3g} at {_row(i)}, {abs(v[i] - med) / spread:.2g} "
                f"times its typical spread (median {med:.4g}): standardised, every other value "
                "would be one number; fix or drop the row (seqbench does not guess)",
            )
        if c in self.choice.y_cols and np.ptp(v) == 0:
            raise _fail(
                self.path, f"target column {c!r} is constant ({v[0]:.4g}): nothing to predict"
            )

    def _times(self, df):
        """The time column as numbers: numeric as they are, dates and times as nanoseconds."""
        import pandas as pd

        col = df[self.choice.time_col]
        self.time_dates = not (
            pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        )
        if not self.time_dates:
            t = col.astype(np.float64)
            if not np.isfinite(t.to_numpy()).all():
                raise _fail(self.path, f"time column {col.name!r} has an infinite value")
            return t
        parsed = col if pd.api.types.is_datetime64_any_dtype(col) else self._dates(col)
        if getattr(parsed.dt, "tz", None) is not None:
            parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
        return pd.Series(parsed.astype("datetime64[ns]").astype(np.int64), index=col.index)

    def _dates(self, col):
        """Dates and times written as text (ISO 8601 and what pandas reads, with or without a
        time or a UTC offset), whatever dtype the installed pandas gives text (object in 2.x,
        str in 3.x). Times with different UTC offsets (a summer and a winter offset) are
        normalised to UTC; a column that mixes times with and without an offset is refused,
        since which zone the bare ones are in is not said."""
        import pandas as pd

        name = col.name
        if pd.api.types.is_bool_dtype(col) or not (
            pd.api.types.is_string_dtype(col) or col.dtype == object
        ):
            raise _fail(self.path, f"time column {name!r} is neither numbers nor dates")
        text = col.astype(str).str.strip()
        zoned = text.str.contains(r"(?:Z|[+-]\d\d:?\d\d)$", regex=True)
        if zoned.any() and not zoned.all():
            i = int(np.flatnonzero(~zoned.to_numpy())[0])
            raise _fail(
                self.path,
                f"time column {name!r} mixes times with and without a UTC offset ({_row(i)} "
                "has none): give every time its offset, or none",
            )
        try:
            return pd.to_datetime(text, format="mixed", utc=bool(zoned.all()))
        except (ValueError, TypeError, OverflowError):
            bad = pd.to_datetime(text, format="mixed", errors="coerce", utc=bool(zoned.all()))
            i = int(np.flatnonzero(bad.isna().to_numpy())[0]) if bad.isna().any() else 0
            raise _fail(
                self.path,
                f"time column {name!r} is neither numbers nor dates ({_row(i)} holds "
                f"{str(text.iloc[i])[:40]!r})",
            ) from None

    # -- identity ---------------------------------------------------------------------------
    def _hash(self, df, key, timed: bool) -> str:
        """sha256 of the used columns' names and values as numbers, rows in (series, time)
        order: independent of the file's format and row order."""
        h = hashlib.sha256()
        h.update(json.dumps(sorted(df.columns.astype(str))).encode())
        for name in sorted(df.columns.astype(str)):
            h.update(b"\0" + name.encode() + b"\0")
            if name == self.choice.series_col:
                h.update("\0".join(key["s"]).encode())
            elif name == self.choice.time_col and timed:
                t = key["t"].to_numpy()  # numbers as float64, dates as int64 nanoseconds
                h.update(t.dtype.str.encode() + np.ascontiguousarray(t).tobytes())
            else:
                h.update(np.ascontiguousarray(df[name].to_numpy(np.float64), "<f8").tobytes())
        return h.hexdigest()

    # -- windows and split ------------------------------------------------------------------
    def _cut(self, df, key, timed: bool) -> None:
        c, path = self.choice, self.path
        T, h = c.seq_len, c.horizon
        ids = key["s"].to_numpy()
        bounds = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1], True])
        self.n_series = len(bounds) - 1
        t_all = key["t"].to_numpy(np.float64) if timed else None
        starts, target_rows, times = [], [], []
        for a, b in itertools.pairwise(bounds):
            n = b - a - T - h + 1
            if n < 1:
                name = f"series {ids[a]!r}" if c.series_col else "the series"
                raise _fail(
                    path,
                    f"{name} has {b - a} rows; a window of T = {T} and horizon {h} needs "
                    f"{T + h} (lower `set` seq_len)",
                )
            s = np.arange(a, a + n)
            starts.append(s)
            target_rows.append(s + T - 1 + h)
            times.append(t_all[s + T - 1 + h] if timed else (s - a + T - 1 + h).astype(float))
        starts, target_rows = np.concatenate(starts), np.concatenate(target_rows)
        times = np.concatenate(times)
        ranked = np.sort(times)
        n = len(ranked)
        cut_train = ranked[max(round(FRACTIONS[0] * n) - 1, 0)]
        cut_valid = ranked[max(round(sum(FRACTIONS) * n) - 1, 0)]
        part = np.where(times <= cut_train, 0, np.where(times <= cut_valid, 1, 2))
        names = ("train", "valid", "test")
        for i, s in enumerate(names):
            if not (part == i).any():
                raise _fail(
                    path,
                    f"{n} window(s) leave the {s} split empty when split by time "
                    "(60/20/20); give more rows or a shorter seq_len",
                )
        # train statistics: every row up to the last training target's time
        row_time = t_all if timed else _positions(bounds)
        fit = row_time <= cut_train
        cols = list(dict.fromkeys([*c.inputs, *c.y_cols]))
        raw = df[cols].to_numpy(np.float64)
        mean = raw[fit].mean(axis=0)
        std = raw[fit].std(axis=0)
        std[std == 0] = 1.0  # a constant column is only shifted
        z = (raw - mean) / std
        self.stats = {
            name: (float(m), float(sd)) for name, m, sd in zip(cols, mean, std, strict=True)
        }
        at = {name: i for i, name in enumerate(cols)}
        self.values = np.ascontiguousarray(z[:, [at[x] for x in c.inputs]], dtype=np.float32)
        ys = z[:, [at[y] for y in c.y_cols]].astype(np.float32)
        self.starts = {s: starts[part == i] for i, s in enumerate(names)}
        self.y = {s: ys[target_rows[part == i]] for i, s in enumerate(names)}
        self.last = {s: ys[target_rows[part == i] - h] for i, s in enumerate(names)}
        self.time_range = {
            s: (float(times[part == i].min()), float(times[part == i].max()))
            for i, s in enumerate(names)
        }
        self.D = self.values.shape[1]
        self.n_targets = len(c.y_cols)

    def windows(self, split: str, index) -> np.ndarray:
        """Inputs (n, T, D) of the split's windows `index` (a slice or positions)."""
        s = self.starts[split][index]
        return self.values[s[:, None] + np.arange(self.choice.seq_len)]

    def baselines(self) -> dict[str, float]:
        """Test MSE of the mean forecast (each target's train mean) and of persistence."""
        mean = self.y["train"].mean(axis=0, dtype=np.float64)
        test = self.y["test"].astype(np.float64)
        return {
            "mean": float(((test - mean) ** 2).mean()),
            "persistence": float(((test - self.last["test"]) ** 2).mean()),
        }


def _positions(bounds: np.ndarray) -> np.ndarray:
    """Each row's position within its series (the time of a table without a time column)."""
    out = np.empty(bounds[-1], dtype=np.float64)
    for a, b in itertools.pairwise(bounds):
        out[a:b] = np.arange(b - a)
    return out
