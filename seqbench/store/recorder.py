"""Recording one run: the interface every producer of runs writes through (the training loop,
`stress`, `bench`), and its two implementations: StoreRecorder writes to the store as the run
goes; BufferRecorder keeps everything in memory, for a sweep worker that must not touch the
store and sends its record back to the driver (whose claim created the run's row).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from seqbench.store.liveness import STALE_BEATS, heartbeat_interval
from seqbench.store.values import utcnow

Curves = Mapping[str, tuple[Iterable[float], Iterable[float]]]


class RunRecorder(Protocol):
    """start -> (log_metrics | heartbeat)* -> finish. A run that is over before it is recorded
    (stress, bench) calls finish alone: its row, summaries and curves are then written at once.
    """

    run_id: int | None

    def start(self, **fields: Any) -> int:
        """Create the run (kind, model, task, config, ...); return its id."""

    def log_metrics(self, rows: Iterable[tuple[str, int, float]]) -> None:
        """Append (key, step, value) rows to the run's history."""

    def heartbeat(self) -> None:
        """Say that the run is still alive."""

    def finish(
        self,
        status: str,
        *,
        metrics: Iterable[tuple[str, int, float]] = (),
        summaries: Mapping[str, float] | None = None,
        curves: Curves | None = None,
        **fields: Any,
    ) -> int:
        """End the run with `status` and its last metrics, summaries, curves and fields (error,
        wall_seconds, checkpoint, ...), together; return its id."""


class StoreRecorder:
    """A RunRecorder over a Store: `finish` writes its parts in one transaction, so a run is
    never left completed without its summaries; a run that never started is created there."""

    def __init__(self, store):
        self.store = store
        self.run_id: int | None = None
        self._beating: threading.Event | None = None  # set: the heartbeat thread stops
        self._beater: threading.Thread | None = None

    def start(self, **fields: Any) -> int:
        """Create the run, with its process and stale limit in its environment, and start a
        thread that keeps its heartbeat while the process lives (a slow step or a long
        evaluation does not make it stale; kill -9 does)."""
        every = heartbeat_interval()
        env = {
            **(fields.get("environment") or {}),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "stale_after": STALE_BEATS * every,
        }
        self.run_id = self.store.create_run(**{**fields, "environment": env}).id
        self._beating = threading.Event()
        self._beater = threading.Thread(
            target=self._beat, args=(self._beating, every), daemon=True, name="seqbench-heartbeat"
        )
        self._beater.start()
        return self.run_id

    def _beat(self, stop: threading.Event, every: float) -> None:
        while not stop.wait(every):
            try:
                self.store.heartbeat(self.run_id)
            except Exception:  # a full disk or a lost server: the run's own writes say so
                continue

    def _stop_beating(self) -> None:
        if self._beating is not None:
            self._beating.set()
            self._beater.join(timeout=60)  # a beat in flight lands before the run's end

    def log_metrics(self, rows: Iterable[tuple[str, int, float]]) -> None:
        self.store.log_metrics(self.run_id, rows)

    def heartbeat(self) -> None:
        self.store.heartbeat(self.run_id)

    def finish(self, status, *, metrics=(), summaries=None, curves=None, **fields) -> int:
        fields = {"finished_at": utcnow(), **fields, "status": status}
        self._stop_beating()
        self.run_id = self.store.write_run(
            self.run_id, fields, metrics=metrics, summaries=summaries or {}, curves=curves
        )
        self.store.ensure_present()  # a deleted store file takes writes silently
        return self.run_id

    def fail(self, error: str, attempts: int = 3, wait: float = 1.0) -> bool:
        """End the run `failed` after a write failed (a full disk, a lost server): only the
        status and the error, tried `attempts` times `wait` s apart. False if even that could
        not be written: the run stays `running`, its heartbeat stops, and the next command
        marks it crashed."""
        self._stop_beating()
        for i in range(attempts):
            try:
                self.store.update_run(
                    self.run_id, status="failed", error=error, finished_at=utcnow()
                )
                return True
            except Exception:
                if i + 1 < attempts:
                    time.sleep(wait)
        return False


class BufferRecorder:
    """A RunRecorder in memory for the run `run_id` (created by the sweep driver's claim): the
    record travels back to the driver, which writes it (Store.write_point_result). With a
    `stream` (a queue to the driver), metrics go to the driver as they are logged, so the
    store has them while the point runs and keeps them when it is interrupted."""

    def __init__(self, run_id: int, stream=None):
        self.run_id = run_id
        self.stream = stream
        self.fields: dict[str, Any] = {}
        self.metrics: list[tuple[str, int, float]] = []
        self.summaries: dict[str, float] = {}

    def start(self, **fields: Any) -> int:
        self.fields.update(fields)
        return self.run_id

    def log_metrics(self, rows: Iterable[tuple[str, int, float]]) -> None:
        rows = [(k, int(s), float(v)) for k, s, v in rows]
        if self.stream is not None and rows:
            self.stream.put((self.run_id, rows))
        else:
            self.metrics.extend(rows)

    def heartbeat(self) -> None:
        """The driver keeps the heartbeat of the points in flight."""

    def finish(self, status, *, metrics=(), summaries=None, curves=None, **fields) -> int:
        if curves:
            raise ValueError("a sweep point records no curves")
        self.metrics.extend(metrics)
        self.summaries.update(summaries or {})
        self.fields.update(fields, status=status, finished_at=utcnow())
        return self.run_id

    def record(self) -> dict:
        return {"fields": self.fields, "metrics": self.metrics, "summaries": self.summaries}
