"""The store's names: its default file, the table alembic keeps its revision in and the newest
revision (compared against a store's without importing alembic), a run's statuses and kinds,
and the names people give (runs, sweeps, baselines, answers). Standard library only."""

from __future__ import annotations

import re

from seqbench.errors import UsageError

DEFAULT_DB = "seqbench.db"
VERSION_TABLE = "seqbench_alembic_version"
# The newest migration in migrations/versions (tests/store/test_migrations.py checks that this
# equals alembic's head): compared against a store's revision without importing alembic.
HEAD_REVISION = "0008"

SEQBENCH_TABLES = {"runs", "metrics", "summaries", "curves", "sweeps", "baselines"}
LATER_TABLES = {"sweep_points", "answers", "answer_runs"}  # added by revisions 0003 and 0008
VIEWS = ("v_results", "v_results_all", "v_summaries")
# every relation a reader needs: `open_store` reads the version table, users the rest
READ_TABLES = (*sorted(SEQBENCH_TABLES | LATER_TABLES), VERSION_TABLE)

# crashed: the process running it died (a signal, the OOM killer), not the config's fault; a
# plain re-run of the sweep runs it again
RUN_STATUSES = ("running", "completed", "failed", "diverged", "interrupted", "crashed")
RUN_KINDS = ("train", "stress", "bench")


# -- names people give to what the store keeps ----------------------------------------------------
def check_label(what: str, name: str) -> str:
    """A name people give (a run, a sweep, a baseline, an answer): 1-200 printable characters
    (the store's name columns hold 200), not all spaces; else a one-line UsageError."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or not name.isprintable():
        raise UsageError(f"a {what} name is 1-200 printable characters, got {name!r}")
    return name


def check_run_name(name: str | None) -> str | None:
    """A run name as given, or a one-line error: a label, not only digits (a number names a
    run by its id) and not hex and dashes alone (that names a run by its uuid prefix)."""
    if name is None:
        return None
    check_label("run", name)
    if name.isascii() and name.isdecimal():
        raise UsageError(f"a run name cannot be a number ({name!r} would read as a run id)")
    if re.fullmatch(r"[0-9a-fA-F-]+", name):
        raise UsageError(
            f"a run name cannot look like a uuid prefix ({name!r} could name another run by "
            "its uuid): add a letter outside a-f"
        )
    return name
