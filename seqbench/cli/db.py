"""`seqbench db`: the schema version of the results store."""

from __future__ import annotations

import typer

from seqbench import api
from seqbench.cli._options import state
from seqbench.cli._output import Format, FormatOption, render

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
