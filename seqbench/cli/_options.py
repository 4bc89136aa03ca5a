"""Options shared across commands and the per-invocation state."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from seqbench import api

T = TypeVar("T")

if TYPE_CHECKING:
    from seqbench.store.results import ReadStore
    from seqbench.store.store import Store


@dataclass
class AppState:
    db: str | None = None
    _open: dict[str, ReadStore] = field(default_factory=dict)

    def store(self, mode: str = "write") -> Store | ReadStore:
        """The invocation's store at --db, opened once per mode by api.open_store: "write"
        (created if new), "update" (written, never created), "read" (never created, never
        changed) or "lean" (one read-only connection, no SQLAlchemy, for the commands that
        only read reports and queries). A read command marks the runs whose process died
        crashed, the one write it makes."""
        if mode not in self._open:
            reap = None if mode in ("write", "update") else True
            self._open[mode] = api.open_store(self.db, mode, reap=reap)
        return self._open[mode]

    def dispose(self) -> None:
        for store in {id(s): s for s in self._open.values()}.values():
            store.dispose()
        self._open.clear()


def state(ctx: typer.Context) -> AppState:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = AppState()
    return root.obj


class Terminated(KeyboardInterrupt):
    """SIGTERM (what `kill`, `docker stop` and job schedulers send), raised where Ctrl-C's
    KeyboardInterrupt would be so that the same code records the run as interrupted."""


EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


def interrupt_exit_code(e: KeyboardInterrupt) -> int:
    return EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED


def resumable(what: str, name: str, call: Callable[[], T], stop: Callable[[], None]) -> T:
    """call() with SIGTERM as an interrupt, and stop() after it however it ends. Interrupted,
    it says that the same command resumes `what name` and exits 130 (Ctrl-C) or 143 (SIGTERM)."""
    try:
        with sigterm_as_interrupt():
            return call()
    except KeyboardInterrupt as e:
        code = interrupt_exit_code(e)
    finally:
        stop()
    typer.echo(f"{what} {name!r} interrupted: the same command resumes it", err=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within the block, SIGTERM raises Terminated (a KeyboardInterrupt) in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated()

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def joined(values: list[str] | None) -> str | None:
    """A list flag's values as one comma list: `--models rnn,lstm` and `--models rnn --models
    lstm` (and the singular spelling, `--model`) are the same thing everywhere."""
    if not values:
        return None
    return ",".join(api.split_list(values))


ThreadsOption = Annotated[
    int | None,
    typer.Option(
        "--threads",
        help="Torch CPU threads (default: SEQBENCH_THREADS, OMP_NUM_THREADS, else seqbench's "
        "choice: the cores no other process is using; 1 for small RNN/LSTM/GRU steps).",
    ),
]

QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
WorkersOption = Annotated[
    int | None, typer.Option(help="Parallel runs on CPU (default: one per usable core).")
]
ExecutorOption = Annotated[str, typer.Option(help="local or ray.")]
AddressOption = Annotated[str, typer.Option(help="Ray: auto, local (start one here) or HOST:PORT.")]
RetryFailedOption = Annotated[bool, typer.Option("--retry-failed", help="Run failed points again.")]
