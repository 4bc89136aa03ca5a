"""Progress for long commands, on stderr: a rich bar on a terminal; elsewhere (CI, `| tee`,
nohup) a plain line every SEQBENCH_PROGRESS_EVERY seconds (default 30) and one at the end,
which a log keeps readable where a redrawn bar would print nothing or garbage."""

from __future__ import annotations

import os
import sys
import time

import typer


def interval() -> float:
    try:
        return max(0.0, float(os.environ.get("SEQBENCH_PROGRESS_EVERY", "30")))
    except ValueError:
        return 30.0


class Bar:
    """One counted task: `start(total)`, `advance(n=1, **fields)`/`update(done, **fields)`,
    `stop()`. `fields` are shown after the count (loss, valid, failed)."""

    def __init__(self, label: str, fields: tuple[str, ...] = ()):
        self.label, self.fields = label, fields
        self.values = dict.fromkeys(fields, "-")
        self.done = self.total = 0
        self.t0 = self.last = 0.0
        self.tty = sys.stderr.isatty()
        self._rich = None
        self._printed: tuple | None = None

    def start(self, total: int) -> None:
        self.total, self.t0 = total, time.monotonic()
        self.last = self.t0
        if self.tty:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            cols = [TextColumn(f"{f} {{task.fields[{f}]}}") for f in self.fields]
            self._rich = Progress(
                TextColumn(f"[bold]{self.label}"),
                BarColumn(),
                MofNCompleteColumn(),
                *cols,
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._rich.start()
            self._tid = self._rich.add_task(self.label, total=total, **self.values)
        else:
            self._line()

    def update(self, done: int, **fields) -> None:
        self.done = done
        self.values.update({k: v for k, v in fields.items() if k in self.values})
        if self._rich is not None:
            self._rich.update(self._tid, completed=done, **self.values)
        elif time.monotonic() - self.last >= interval():
            self._line()

    def advance(self, n: int = 1, **fields) -> None:
        self.update(self.done + n, **fields)

    def stop(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        elif self.t0:
            if self._printed != (self.done, tuple(self.values.values())):
                self._line()  # the final state, unless that was the last line printed
            self.t0 = 0.0

    def _line(self) -> None:
        self._printed = (self.done, tuple(self.values.values()))
        self.last = time.monotonic()
        elapsed = self.last - self.t0
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        eta = ""
        if 0 < self.done < self.total:
            eta = f", ~{_clock(elapsed * (self.total - self.done) / self.done)} left"
        shown = "".join(f" {k} {v}" for k, v in self.values.items())
        typer.echo(
            f"{self.label}: {self.done}/{self.total}{pct}{shown}, {_clock(elapsed)}{eta}", err=True
        )


def _clock(seconds: float) -> str:
    s = int(seconds)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


class TableBar:
    """The bar of a large table being read (tasks.series.reading_progress's callback): MiB
    read of the file's."""

    def __init__(self) -> None:
        self._bar: Bar | None = None

    def __call__(self, done: int, total: int) -> None:
        mib = 2**20
        if self._bar is None:
            self._bar = Bar("reading the table (MiB)")
            self._bar.start(-(-total // mib))
        self._bar.update(-(-done // mib) if done >= total else done // mib)
        if done >= total:
            self._bar.stop()
            self._bar = None
