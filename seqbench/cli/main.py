"""The root `seqbench` command: global options, error mapping, and the command groups."""

from __future__ import annotations

import os
import re
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from seqbench import __version__, api
from seqbench.cli import bench, catalog, db, memory, query, report, runs, stress, sweep, train, ui
from seqbench.cli._flags import flags, use
from seqbench.cli._options import AppState, interrupt_exit_code, sigterm_as_interrupt, state
from seqbench.cli._progress import TableBar
from seqbench.errors import SeqbenchError, StoreUnwritableError

try:  # typer 0.2x carries its own copy of click; older ones use click itself
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover
    from click.exceptions import NoArgsIsHelpError, UsageError


class _SeqbenchGroup(TyperGroup):
    """Maps SeqbenchError (a user mistake) to one line on stderr and its exit code, and
    SIGTERM to what Ctrl-C does (exit 143 instead of 130)."""

    def get_command(self, ctx, cmd_name):
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            _quiet_types(cmd)
        return cmd

    def format_help(self, ctx, formatter):
        _quiet_types(self)
        return super().format_help(ctx, formatter)

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as e:  # a bad root option: `seqbench --bogus`
            _usage_error(e)

    def invoke(self, ctx):
        try:
            with sigterm_as_interrupt(), api.table_progress(TableBar()):
                return super().invoke(ctx)
        except UsageError as e:  # a bad option or value of a command: one line too
            _usage_error(e)
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM where no command recorded it
            typer.echo(
                "interrupted: every write is one transaction, nothing half-written was kept",
                err=True,
            )
            raise typer.Exit(interrupt_exit_code(e)) from None
        except SeqbenchError as e:
            typer.echo(f"Error: {one_line(flags(str(e)))}", err=True)
            if _unwritable(e):  # closing the store now would be a SIGBUS: end here
                _end_without_closing_the_store(e.exit_code)
            raise typer.Exit(e.exit_code) from None
        except Exception as e:
            why = _database_error(e)
            if why is None:
                raise
            typer.echo(f"Error: {one_line(why)}", err=True)
            raise typer.Exit(1) from None
        finally:
            # close the store's connections before returning: SQLite checkpoints its WAL
            # into the file now, not whenever the engine happens to be collected
            if isinstance(ctx.obj, AppState):
                ctx.obj.dispose()


def _end_without_closing_the_store(code: int) -> None:
    """Exit now, leaving SQLite's connections open (closing one writes to the -shm file, a
    SIGBUS once it is immutable): multiprocessing's exit work first (its workers stopped, its
    semaphores released, as at a normal exit), then os._exit, which runs no finalizer."""
    import multiprocessing.util

    multiprocessing.util._exit_function()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _unwritable(e: BaseException | None) -> bool:
    """Whether `e`, or an error it was raised from, says the store became unwritable."""
    seen = 0
    while e is not None and seen < 10:
        if isinstance(e, StoreUnwritableError):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


def _quiet_types(cmd) -> None:
    """Help without type noise: flags and text options show no `<bool>` / `<str>` column (their
    help says what they take); numbers keep `<int>` / `<float>`, which says something. And
    each example kept as written (below)."""
    for p in getattr(cmd, "params", []):
        if getattr(p, "param_type_name", "") == "option" and p.metavar is None:
            try:
                label = p.display_type(None)
            except Exception:  # a parameter type that needs a context: leave it
                continue
            if label in ("<bool>", "<str>", "<list[str]>") or p.is_flag:
                p.metavar = ""
        elif getattr(p, "param_type_name", "") == "argument":
            try:
                label = p.display_type(None)
            except Exception:
                continue
            if label in ("<str>", "<list[str]>"):
                p.display_type_rich = lambda ctx: ""  # the Arguments section's type column
    help_text = getattr(cmd, "help", None)
    if isinstance(help_text, str) and not getattr(cmd, "_examples_kept", False):
        # an example is printed as written, not re-wrapped at the terminal's width: a command
        # broken over two lines would run as two when pasted (click's \b keeps a paragraph)
        cmd.help = re.sub(r"(?m)^(Example: )", "\b\n\\1", help_text)
        cmd._examples_kept = True
    if not getattr(cmd, "_quiet_help", False) and hasattr(cmd, "get_help_option"):
        made = cmd.get_help_option  # --help is made on demand: quiet it as it is made

        def get_help_option(ctx, made=made):
            opt = made(ctx)
            if opt is not None and opt.metavar is None:
                opt.metavar = ""
            return opt

        cmd.get_help_option, cmd._quiet_help = get_help_option, True
    for sub in getattr(cmd, "commands", {}).values():
        _quiet_types(sub)


def _usage_error(e: UsageError):
    """A usage error (an unknown option, a value of the wrong type) as one line on stderr and
    exit 2, where click draws a box under the usage text. `seqbench` and its groups given no
    arguments still print their help."""
    if isinstance(e, NoArgsIsHelpError):
        raise e
    where = e.ctx.command_path if e.ctx is not None else "seqbench"
    typer.echo(f"Error: {one_line(e.format_message())} (see '{where} --help')", err=True)
    raise typer.Exit(e.exit_code)


# an error line's most characters: a 1 MB column name in a CSV's header made a 1 MB line
MAX_ERROR_CHARS = 1000


def one_line(message: str) -> str:
    """An error message as one printable line: control characters a user's input brought in
    (newlines, \x1e, ...) are shown escaped, and a line past MAX_ERROR_CHARS is cut in the
    middle (its start says what failed, its end what to do)."""
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    if len(line) <= MAX_ERROR_CHARS:
        return line
    half = MAX_ERROR_CHARS // 2
    return f"{line[:half]} … ({len(line) - 2 * half:,} characters left out) … {line[-half:]}"


def _database_error(e: BaseException) -> str | None:
    """One line for a failure of the database or the disk under it (store/failures.py tells
    them apart); None for anything else (a bug: the traceback)."""
    return api.describe_database_error(e)


app = typer.Typer(
    cls=_SeqbenchGroup,
    name="seqbench",
    help=(
        "Does my sequence task need a recurrent model, or does a feedforward model with a "
        "finite context k do as well? Train, stress-test and sweep models; every run is saved "
        "in a SQL store.\n\n"
        "Example: seqbench train --model indrnn --task adding --seq-len 100"
    ),
    no_args_is_help=True,
    # help in click's plain layout, as click-based tools print it (sqlite-utils, MLflow): one
    # line per command, and 0.1 s sooner than typer's rich panels, whose import (markdown-it,
    # rich's traceback and pretty printers) costs that much (benchmarks/cli_start.py)
    rich_markup_mode=None,
    add_completion=True,  # seqbench --install-completion: bash, zsh, fish, PowerShell
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"seqbench {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            envvar="SEQBENCH_DB",
            help="Results store: a file path or a SQLAlchemy URL "
            "(sqlite:///runs.db, postgresql+psycopg://user@host/db). Default: ./seqbench.db",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    state(ctx).db = db


app.add_typer(db.app, name="db", short_help="Inspect and upgrade the store's schema; reader roles.")
app.add_typer(bench.app, name="bench")
app.add_typer(sweep.app, name="sweep", short_help="Run a grid of training runs (resumable).")
memory.register(app)
runs.register(app)
query.register(app)
catalog.register(app)
train.register(app)
stress.register(app)
report.register(app)
ui.register(app)
use(app)  # library text names a parameter; these commands' flags are what it shows


def main() -> None:
    app()
