"""The progress of reading a large table, as a front end asks to see it: a context variable
that tasks/table_file.py reports to while it reads a CSV in chunks. Its own module, free of numpy
and pandas, so that a command that never reads a table pays nothing for installing it."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

Report = Callable[[int, int], None]  # (bytes read, the file's bytes)

progress: contextvars.ContextVar[Report | None] = contextvars.ContextVar(
    "seqbench_table_progress", default=None
)


@contextlib.contextmanager
def reading_progress(callback: Report) -> Iterator[None]:
    """Within the block, reading a CSV of more than table_file.PROGRESS_BYTES calls
    `callback(bytes_read, file_bytes)` after each chunk, and once at the end."""
    token = progress.set(callback)
    try:
        yield
    finally:
        progress.reset(token)
