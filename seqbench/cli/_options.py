"""Options shared across commands and the per-invocation state."""

from __future__ import annotations

import contextlib
import signal
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from seqbench import api

if TYPE_CHECKING:
    from seqbench.store.results import ReadStore
    from seqbench.store.store import Store


@dataclass
class AppState:
    db: str | None = None
    _store: Store | None = None
    _reader: Store | None = None
    _read: ReadStore | None = None

    def read_only(self) -> ReadStore:
        """The store for a command that only reads, validated before it is read: a SQLite
        store at head is opened read-only once, without SQLAlchemy, and read over that one
        connection; anything else is opened read-only by open_store, which checks it (runs
        whose process died are marked crashed, the one write a read command makes)."""
        if self._read is None:
            self._read = api.open_reads(self.db, reap=True)
        return self._read

    def reader(self) -> Store:
        """The store for a command that only reads: never created, never changed."""
        if self._reader is None:
            # runs whose process died are marked crashed, the one write a read command makes
            self._reader = api.open_store(self.db, readonly=True, reap=True)
        return self._reader

    def dispose(self) -> None:
        for store in {id(s): s for s in (self._store, self._reader, self._read) if s}.values():
            store.dispose()
        self._store = self._reader = self._read = None

    def store(self) -> Store:
        if self._store is None:
            self._store = api.open_store(self.db)
        return self._store


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
