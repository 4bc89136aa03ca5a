"""`seqbench db`: the schema version of the results store."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._options import state
from seqbench.cli._output import Format, FormatOption, render
from seqbench.errors import StoreError, UsageError

app = typer.Typer(
    help="Inspect and upgrade the results store's schema (alembic migrations).",
    no_args_is_help=True,
)


@app.command()
def upgrade(ctx: typer.Context) -> None:
    """Upgrade the store to the newest schema. A SQLite file is backed up beside it first.

    Example: seqbench --db runs.db db upgrade
    """
    before, after, backup = api.upgrade_store(state(ctx).db)
    if before == after:
        typer.echo(f"already at head ({after})")
        return
    if backup is not None:
        typer.echo(f"backed up to {backup}")
    typer.echo(f"upgraded {before or 'empty database'} -> {after}")


@app.command()
def current(ctx: typer.Context) -> None:
    """Print the store's schema revision (creates a new store at head if there is none).

    Example: seqbench db current
    """
    rev, head = api.store_revision(state(ctx).store())
    typer.echo(f"{rev} (head)" if rev == head else f"{rev} (head is {head})")


@app.command()
def history(ctx: typer.Context, fmt: FormatOption = Format.table) -> None:
    """List the schema revisions this seqbench knows, oldest first.

    Example: seqbench db history --format markdown
    """
    rows = [(r.revision, r.down_revision or "", r.message, r.is_head) for r in api.schema_history()]
    render(["revision", "down_revision", "message", "head"], rows, fmt)


PasswordEnv = Annotated[
    str | None,
    typer.Option(help="Set the role's password from this environment variable."),
]
PrintSql = Annotated[bool, typer.Option("--print-sql", help="Print the SQL and change nothing.")]
ConnectionLimit = Annotated[
    int, typer.Option(help="Sessions the role may hold at once (the writers keep the rest).")
]
TempFileLimit = Annotated[
    str, typer.Option(help="Temporary-file space per session (a spilled sort or hash).")
]
WorkMem = Annotated[str, typer.Option(help="Memory per sort or hash before it spills (a default).")]
StatementTimeout = Annotated[
    str, typer.Option(help="A statement is stopped after this long (a default).")
]
IdleTimeout = Annotated[
    str,
    typer.Option(
        help="A session idle this long inside a transaction is ended, its locks released "
        "(a default)."
    ),
]
LockTimeout = Annotated[
    str, typer.Option(help="A statement waits this long for a lock (a default).")
]
LockOthers = Annotated[
    bool,
    typer.Option(
        "--lock-other-databases",
        help="Revoke CONNECT on the server's other databases from PUBLIC, granting it to each "
        "login role that had it, so that the reader alone loses them (a superuser).",
    ),
]


Role = Annotated[str, typer.Argument(help="The role to create (or re-grant).")]


@app.command("reader-role")
def reader_role(
    ctx: typer.Context,
    role: Role = "seqbench_reader",
    password_env: PasswordEnv = None,
    print_sql: PrintSql = False,
    connection_limit: ConnectionLimit = 10,
    temp_file_limit: TempFileLimit = "256MB",
    work_mem: WorkMem = "16MB",
    statement_timeout: StatementTimeout = "5min",
    idle_in_transaction_timeout: IdleTimeout = "1min",
    lock_timeout: LockTimeout = "10s",
    lock_other_databases: LockOthers = False,
) -> None:
    """Create a least-privilege reader role on a PostgreSQL store, to hand to analysts: it may
    log in and SELECT seqbench's tables and views, its sessions are read-only, and it holds no
    other right (through any client it cannot write a table or make a temporary one, nor
    cancel or terminate the writers' sessions). Functions whose effects outlive a rolled-back
    transaction (WAL messages, notifications, advisory locks, large objects, xid assignment)
    are revoked from PUBLIC in this database (seqbench's writers call none of them); that
    needs a superuser, and the command says which stay callable when it was not one. The
    server bounds what the role may take of it: --connection-limit sessions,
    --temp-file-limit of temporary files per session (a superuser's setting the role cannot
    change), no temporary tables; --work-mem, --statement-timeout, --idle-in-transaction-timeout
    and --lock-timeout are defaults of its sessions (a careless query keeps them; PostgreSQL
    lets a role SET its own). The reader must reach this database alone: PUBLIC may connect
    to every database of a server (`postgres` included), so the command refuses, changing
    nothing, until --lock-other-databases (or an administrator) has revoked that.
    Run it as a superuser (or as the store's owner with CREATEROLE, and have a superuser set
    the temp-file limit); --print-sql gives the statements to run by hand instead.

    Example: READER_PW=s3cret seqbench --db postgresql+psycopg://admin@db/seqbench \\
    db reader-role analyst --password-env READER_PW --lock-other-databases
    """
    password = None
    if password_env is not None:
        password = os.environ.get(password_env)
        if not password:
            raise UsageError(f"--password-env {password_env}: that variable is not set")
    sql = api.reader_role(
        state(ctx).db,
        role,
        password,
        execute=not print_sql,
        connection_limit=connection_limit,
        temp_file_limit=temp_file_limit,
        work_mem=work_mem,
        statement_timeout=statement_timeout,
        idle_in_transaction_timeout=idle_in_transaction_timeout,
        lock_timeout=lock_timeout,
        lock_other_databases=lock_other_databases,
    )
    if print_sql:
        typer.echo("\n".join(sql))
    else:
        typer.echo(f"reader role {role!r} can now log in and read the store (SELECT only)")
        _reader_role_notes(ctx, role)


def _reader_role_notes(ctx: typer.Context, role: str) -> None:
    """What the server kept from the role: said in notes on stderr."""
    if api.reader_role_limits_left(state(ctx).db, role):
        typer.echo(
            f"note: {role!r} has no temp-file limit (a superuser's setting): run this "
            "command again as one",
            err=True,
        )
    left = api.reader_role_effects_left(state(ctx).db, role)
    if left:
        typer.echo(
            f"note: the server kept {len(left)} function(s) with effects outside a "
            f"transaction callable by {role!r} ({', '.join(left[:4])}"
            f"{', ...' if len(left) > 4 else ''}): only a superuser can revoke them; run "
            "this command again as one",
            err=True,
        )


@app.command()
def check(ctx: typer.Context) -> None:
    """Check a SQLite store's pages (PRAGMA integrity_check, read-only): exit 0 and "ok", or
    exit 1 with the first problem. Every command that writes a SQLite store runs the cheaper
    quick_check when it opens it.

    Example: seqbench --db runs.db db check
    """
    problems = api.check_store(state(ctx).db)
    if problems:
        raise StoreError(
            f"the store is damaged: {problems[0]} ({len(problems)} problem(s)); restore a "
            "backup, or copy what is readable with sqlite3's .recover"
        )
    typer.echo("ok")
