"""The seam between the store and the database under it: what differs between SQLite and
PostgreSQL, behind one protocol (Dialect), one module per backend (sqlite.py, postgresql.py).

engine.py makes engines and reads revisions through it, query.py runs user SQL through it and
results.py reads config fields through it; nothing else in the store asks which backend it is
on (the ORM's statements are the same on both). A new backend is a module with a Dialect and a
line in `dialect_of`. Standard library only at import: the lean read path imports no SQLAlchemy.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from seqbench.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy.engine import Engine


class Dialect(Protocol):
    """What a backend does its own way."""

    name: str  # SQLAlchemy's backend name: "sqlite", "postgresql"

    def engine(self, url: str, *, readonly: bool = False) -> Engine:
        """An engine for a writer, or one whose sessions cannot change the database."""

    def inspect(self, url: str, *, writable: bool = True) -> tuple[str | None, set[str]]:
        """(the schema revision, the table names), read without changing anything;
        `writable=False` accepts a database this process may only read."""

    def config_field(self, name: str, kind: str) -> str:
        """SQL for the config field `name` of the run `r` (runs AS r) as a value of `kind`
        (int, float, bool or str)."""

    def run_sql(
        self,
        url: str,
        sql: str,
        params: dict[str, Any],
        limits: Any,
        note: Callable[[str], None] | None = None,
        reader: Any = None,
    ) -> tuple[list[str], list[tuple]]:
        """One user statement behind the backend's own read-only walls, within `limits`
        (query._Limits: time, rows and bytes); `note` is told which wall holds, where the
        connected role could write. `reader` (a store's query.Reader) keeps the connection
        for its next statement, in its `connection`."""

    def backup(self, url: str) -> Path | None:
        """A copy of the store before a migration changes it (None: the server keeps its own)."""

    def integrity(self, url: str, *, quick: bool = False) -> list[str]:
        """What the database's own check finds wrong, read-only ([] when sound)."""


def backend_name(url: str) -> str:
    """The backend a SQLAlchemy URL names ("postgresql+psycopg://…" -> "postgresql"); a plain
    path is a SQLite file (as store.engine.resolve_url reads one; a lean reader keeps it so)."""
    if "://" not in url:
        return "sqlite"
    return url.partition(":")[0].partition("+")[0]


def dialect_of(url: str) -> Dialect:
    """The Dialect of the database at `url` (a resolved SQLAlchemy URL); StoreError for a
    backend seqbench does not support."""
    name = backend_name(url)
    if name == "sqlite":
        from seqbench.store.sqlite import SQLITE

        return SQLITE
    if name == "postgresql":
        from seqbench.store.postgresql import POSTGRESQL

        return POSTGRESQL
    raise StoreError(
        f"unsupported database URL {url!r}: a seqbench store is a SQLite file or a PostgreSQL "
        "database"
    )
