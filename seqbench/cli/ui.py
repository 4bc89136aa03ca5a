"""`seqbench ui`: the read-only results dashboard in a browser."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench.cli._flags import flags
from seqbench.cli._options import state


def register(app: typer.Typer) -> None:
    app.command("ui", short_help="Browse the store in a local web dashboard.")(ui)


def ui(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free one).")] = 8000,
    host: Annotated[
        str, typer.Option(help="Address to bind: loopback unless you mean to share it.")
    ] = "127.0.0.1",
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Another name the browser may reach it by (repeatable): requests whose Host "
            "header names anything but loopback, --host or these are refused (421)."
        ),
    ] = None,
) -> None:
    """Browse the store in a web browser: runs (filter, sort, search, select), one run, the
    --compare table and its plot for chosen runs or a sweep, curves grouped over seeds,
    sweeps filling in (points in flight with their latest metric), stress runs and checks.

    Read-only: it answers GET only and reads as `seqbench query` does. Everything it shows is
    served from this process (no CDN). Stop it with Ctrl-C or SIGTERM.

    Example: seqbench ui --port 8000   (then open http://127.0.0.1:8000/)
    """
    if not 0 <= port <= 65535:
        from seqbench.errors import UsageError

        raise UsageError(f"--port must be in 0..65535, got {port}")

    def ready(url: str) -> None:
        typer.echo(f"seqbench ui: serving {url} (read-only; Ctrl-C to stop)", err=True)

    from seqbench.ui.server import serve_ui  # the other front end, started from this one

    try:
        serve_ui(
            state(ctx).db,
            host=host,
            port=port,
            ready=ready,
            allow_hosts=tuple(allow_host or ()),
            words=flags,
        )
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)
