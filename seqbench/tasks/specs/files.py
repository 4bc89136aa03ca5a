"""The user's own data: an array file or directory, or a CSV or Parquet series (tasks/files.py,
tasks/filedata.py, tasks/series.py), as a regression, classification or next-token task."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.tasks.spec import TaskSpec


def _check(c) -> None:
    if not c.path:
        raise UsageError(
            "the file tasks need a data file: `path` FILE.npz (or a directory, or a table)"
        )
    if c.subset is not None:
        raise UsageError("subset does not apply to a data file: cut the arrays instead")


# what every file task reads of the config (the split, kind and content hash are fixed from the
# file by resolution), and a table's cut, which only the regression task (a forecast) reads
FILE_READS = ("path", "target", "data_hash", "split_seed", "scale")
TABLE_READS = ("x_cols", "y_cols", "time_col", "series_col", "horizon", "split")

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
        reads=FILE_READS + (TABLE_READS if kind == "regression" else ()),
    )
    for kind, metric, note in (
        ("regression", "mse", "predict the train mean"),
        ("classification", "acc", "majority class of train"),
        ("next-token", "bpt", "unigram of train"),
    )
)
