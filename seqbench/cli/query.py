"""`seqbench query`: read-only SQL over the store."""

from __future__ import annotations

import signal
import sys
import time
from contextlib import contextmanager
from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._flags import flags
from seqbench.cli._options import state
from seqbench.cli._output import Format, FormatOption, render


def register(app: typer.Typer) -> None:
    app.command("query")(query)


def query(
    ctx: typer.Context,
    sql: Annotated[str, typer.Argument(help="One SQL statement, or - to read it from stdin.")],
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            "-p",
            help="A bound parameter NAME=VALUE for :NAME in the SQL (repeatable).",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(help="Stop the statement after this many seconds.")
    ] = 60.0,
    max_rows: Annotated[
        int, typer.Option(help="Refuse results of more rows than this (add a LIMIT).")
    ] = 100_000,
    max_bytes: Annotated[
        int | None,
        typer.Option(
            help="Refuse results whose values pass this many bytes (text and blobs by length, "
            "numbers as 8); default 32 MiB."
        ),
    ] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Run one read-only SQL statement over the results. The database keeps it read-only:
    SQLite through a read-only connection and an authorizer, PostgreSQL through one statement
    per call in a read-only transaction (use a reader role for shared stores: seqbench db
    reader-role). Comments may precede the statement.

    Tables: runs, metrics, summaries, curves, sweeps, sweep_points, baselines, answers,
    answer_runs (docs/schema.md); views: v_results (archived runs left out), v_results_all,
    v_summaries.

    Example: seqbench query "SELECT model, AVG(test_metric) FROM v_results \\
    WHERE task = :task GROUP BY model" -p task=adding --format csv
    """
    if sql == "-":  # bytes, so that text that is not UTF-8 is one line from run_query
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        sql = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
    params = {}
    for p in param or []:
        name, value = api.split_assignment(p, "--param", "NAME=VALUE")
        params[name] = api.coerce_param(value)
    started = time.monotonic()
    # the store checked and opened for reading (one read-only connection to a SQLite store
    # at head); never the crash reaping of the other read commands: query writes nothing
    with api.open_store(state(ctx).db, "lean") as store:
        cols, rows = store.query(
            sql,
            params,
            timeout=timeout,
            max_rows=max_rows,
            **({} if max_bytes is None else {"max_bytes": max_bytes}),  # its own default
            note=lambda line: typer.echo(f"note: {flags(line)}", err=True),
        )
    # the timeout covers printing too: a table of long values can take longer than the query
    with printing_deadline(timeout - (time.monotonic() - started), timeout):
        render(cols, rows, fmt, json_columns=True)


@contextmanager
def printing_deadline(left: float, timeout: float):
    """Stop printing the result once the query's timeout has passed (SIGALRM: a table's
    rendering is one call into rich)."""
    from seqbench.errors import StoreError

    def fire(_signum, _frame):
        raise StoreError(
            f"the query and its printing ran longer than {timeout:g} s and were stopped; "
            "raise --timeout, or print as --format csv"
        )

    if left <= 0:
        fire(None, None)
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
