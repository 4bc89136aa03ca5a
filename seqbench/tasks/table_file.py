"""A table file as it comes, before it is cut (tasks/series.py cuts it): whether a data path
can be data at all (`stat_data_path`), which files are tables (`is_table`), and the table read
as a DataFrame (`read_table`: CSV through pandas, a large one in chunks that report progress to
the front end that asked, tasks/reading.py; Parquet through pyarrow). Every refusal is one
line naming the file (`TableError`). NumPy and pandas are imported when a table is read."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from seqbench.errors import SeqbenchError
from seqbench.tasks import reading

SUFFIXES = (".csv", ".parquet", ".pq")


class TableError(SeqbenchError):
    """A table that cannot be cut as asked: one line naming the file and what is wrong."""


def table_error(path: str, why: str) -> TableError:
    return TableError(f"data file {path!r}: {why}")


def is_table(path: str | Path) -> bool:
    return Path(path).suffix.lower() in SUFFIXES


SYSTEM_DIRS = ("/proc", "/sys", "/dev")  # the kernel's files: never data, often secrets


def stat_data_path(path: str, fail=None) -> os.stat_result:
    """The data path's stat, or one line saying why it cannot be data: missing, a symbolic
    link loop, unreadable, or one of the kernel's files (/proc, /sys, /dev: reading
    /proc/self/environ as a table echoed the process environment in its error). `fail`
    makes the error (path, why) -> exception: each kind of data file says it its way."""
    fail = fail or table_error
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise fail(path, "a loop of symbolic links") from None
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            raise fail(path, "no such file or directory") from None
        raise fail(path, e.strerror or "cannot be read") from None
    real = os.path.realpath(path)
    if any(real == d or real.startswith(d + "/") for d in SYSTEM_DIRS):
        raise fail(path, f"{real} is a system file, not data")
    return st


# A CSV past this many bytes is read in chunks of CHUNK_ROWS rows, each reported to the
# progress callback a front end installed (tasks/reading.py: the CLI's bar), if it did.
PROGRESS_BYTES = 32 * 2**20
CHUNK_ROWS = 500_000


def _read_csv(p: Path):
    """pd.read_csv, in chunks with progress where a large file and a callback ask for it: the
    columns come out as one read would give them (a chunk's ints beside another's floats
    are floats, as one read makes them)."""
    import pandas as pd

    report, size = reading.progress.get(), p.stat().st_size
    if report is None or size <= PROGRESS_BYTES:
        return pd.read_csv(p)
    with open(p, "rb") as f:
        chunks = []
        for chunk in pd.read_csv(f, chunksize=CHUNK_ROWS):
            chunks.append(chunk)
            report(min(f.tell(), size - 1), size)  # the end is reported once, below
    report(size, size)
    return pd.concat(chunks, ignore_index=True)


def read_table(path: str):
    """The table as a DataFrame (pandas; Parquet through pyarrow), or one line saying why not."""
    import pandas as pd

    p = Path(path)
    stat_data_path(path)  # missing, a link loop, a kernel file: one line each
    if not p.is_file():
        raise table_error(path, "a table must be a file")
    try:
        if p.suffix.lower() == ".csv":
            df = _read_csv(p)
            # pandas renames a repeated name (y, y.1): which one a model reads would be a guess
            head = [str(c) for c in pd.read_csv(p, header=None, nrows=1).iloc[0]]
            twice = sorted({c for c in head if head.count(c) > 1})
            if twice:
                raise table_error(path, f"column {twice[0]!r} appears more than once in the header")
            return df
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise table_error(path, "reading Parquet needs pyarrow: pip install pyarrow") from None
        return pd.read_parquet(p)
    except TableError:
        raise
    except pd.errors.EmptyDataError:
        raise table_error(path, "the file is empty") from None
    except UnicodeDecodeError:
        raise table_error(path, "not UTF-8 text (is it a CSV?)") from None
    except Exception as e:  # pandas' and pyarrow's many parse errors
        first = (str(e).splitlines() or [type(e).__name__])[0][:160]
        raise table_error(path, f"cannot be read as a table ({first})") from None
