"""The seam between the store and the database under it: what differs between SQLite and
PostgreSQL, behind one protocol (Dialect), one module per backend (sqlite.py, postgresql.py).

engine.py makes engines and reads revisions through it, query.py runs user SQL through it, and
results.py and records.py read config fields and tags through it; nothing else in the store
asks which backend it is on (the ORM's statements are the same on both). A new backend is one
module, named as SQLAlchemy names the backend, whose `DIALECT` is its Dialect. Standard library
only at import: the lean read path imports no SQLAlchemy.
"""

from __future__ import annotations

import importlib
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

    def tag_equals(self, key: str, value: str, name: str) -> tuple[str, dict[str, str]]:
        """(SQL, its parameters, each named `name` and a suffix) that the run `r` has the tag
        `key` with the text `value`."""

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
    """The Dialect of the database at `url` (a resolved SQLAlchemy URL): the `DIALECT` of the
    store's module named for the backend (store/sqlite.py, store/postgresql.py); StoreError
    for a backend seqbench does not support."""
    name = backend_name(url)
    module = None
    if name.isidentifier() and name.islower():
        try:
            module = importlib.import_module(f"seqbench.store.{name}")
        except ModuleNotFoundError as e:  # no such module; a module it imports is a real error
            if e.name != f"seqbench.store.{name}":
                raise
    dialect = getattr(module, "DIALECT", None)
    if dialect is None or getattr(dialect, "name", None) != name:
        raise StoreError(
            f"unsupported database URL {url!r}: a seqbench store is a SQLite file or a "
            "PostgreSQL database"
        )
    return dialect
