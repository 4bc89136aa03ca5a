"""Options shared across commands and the per-invocation state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from seqbench.store.store import Store


@dataclass
class AppState:
    db: str | None = None
    _store: Store | None = None

    def check_readable(self) -> None:
        """Validate the store before a command that only reads it: a SQLite store at head is
        checked read-only without importing SQLAlchemy; anything else opens it."""
        from seqbench.store.common import readable_sqlite

        if readable_sqlite(self.db) is None:
            self.store()

    def store(self) -> Store:
        if self._store is None:
            from seqbench.store.store import open_store

            self._store = open_store(self.db)
        return self._store


def state(ctx: typer.Context) -> AppState:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = AppState()
    return root.obj
