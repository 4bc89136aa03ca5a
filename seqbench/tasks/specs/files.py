"""The user's own data: an array file or directory, or a CSV or Parquet series (tasks/files.py,
tasks/filedata.py, tasks/series.py), as a regression, classification or next-token task."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.options import TASK, Option
from seqbench.tasks.spec import PATH, TaskSpec


def _check(c) -> None:
    if not c.path:
        raise UsageError(
            "the file tasks need a data file: `path` FILE.npz (or a directory, or a table)"
        )
    if c.subset is not None:
        raise UsageError("subset does not apply to a data file: cut the arrays instead")


# A dataset from a file (tasks/filedata.py), filled in by resolution from the file itself: its
# kind (regression, classification, next-token), the sha256 of its content (which, not `path`,
# is the experiment: the same file elsewhere pools, another file never does), and the seed of
# the split it was cut into when it has no splits of its own; and what an array file's model
# sees: "standard" (inputs and regression targets standardised with the training split's
# mean and sd; the metric in those units: set by resolution) or "raw" (the values as they
# are, what runs before the option were fed). Every file task's options.
DATA_HASH = Option("data_hash", str, TASK, "the sha256 of the data file's content (resolution's)")
FILE_OPTIONS = (
    Option("target", str, TASK, "what the file is: regression, classification or next-token"),
    DATA_HASH,
    Option("split_seed", int, TASK, "the seed of the split of a file without splits of its own"),
    Option("scale", str, TASK, "what the model sees: standard or raw values (standard)"),
)
# A table (a CSV or Parquet time series, tasks/series.py): the columns it is cut from
# (comma-separated names; x_cols unset: the targets' own past), the time column it is sorted
# by and the series id, the forecast horizon (steps after the window's last row), and how it
# was split ("time": 60/20/20 by the target's time, set by resolution). The options of the
# regression task alone (a forecast).
TABLE_OPTIONS = (
    Option("x_cols", str, TASK, "a table's input columns, comma-separated (the targets' past)"),
    Option("y_cols", str, TASK, "a table's target columns, comma-separated"),
    Option("time_col", str, TASK, "a table's time column, which it is sorted by"),
    Option("series_col", str, TASK, "a table's series id column"),
    Option("horizon", int, TASK, "steps from a window's last row to its target (1)"),
    Option("split", str, TASK, "how a table is split (time: 60/20/20 by time)"),
)

SPECS = tuple(
    TaskSpec(
        f"file-{kind}",
        "seqbench.tasks.files:FileTask",
        "your own data (`path` FILE.npz, DIR of .npy"
        + (", or a CSV/Parquet series" if kind == "regression" else "")
        + f"), {kind} ({metric})",
        metric,
        0,  # T is the file's (resolution reads it)
        higher_is_better=kind == "classification",
        baseline_note=note,
        check=_check,
        defaults={"steps": 1000},
        reads=(),
        options=(PATH, *FILE_OPTIONS, *(TABLE_OPTIONS if kind == "regression" else ())),
    )
    for kind, metric, note in (
        ("regression", "mse", "predict the train mean"),
        ("classification", "acc", "majority class of train"),
        ("next-token", "bpt", "unigram of train"),
    )
)
