"""Connecting to a results database: URLs and paths, engines for writers and read-only readers,
and reading a database's schema revision without changing it, each through the database's
Dialect (store/dialect.py: sqlite.py, postgresql.py). Opening a store (with its checks) is
`store.py`'s."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError

from seqbench.errors import StoreError
from seqbench.store import migrate
from seqbench.store.dialect import dialect_of
from seqbench.store.names import (
    DEFAULT_DB,
    HEAD_REVISION,
    LATER_TABLES,
    SEQBENCH_TABLES,
    VERSION_TABLE,
    VIEWS,
)


def resolve_url(db: str | os.PathLike | None) -> str:
    """A file path or a SQLAlchemy URL -> a SQLAlchemy URL. None means ./seqbench.db."""
    db = str(db) if db is not None else DEFAULT_DB
    if "://" in db:
        try:
            u = make_url(db)
        except ArgumentError as e:
            raise StoreError(f"not a valid database URL: {db!r}") from e
        if u.get_backend_name() == "sqlite":
            if u.database in (None, "", ":memory:") or "mode=memory" in db:
                raise StoreError(
                    f"{db!r} is an in-memory database: its results would vanish when the "
                    "command ends; give a file path"
                )
            if u.query:
                raise StoreError(
                    f"{db!r}: seqbench opens SQLite files itself and takes no URL options "
                    f"({', '.join(sorted(u.query))}); give the plain path (read commands never "
                    "write)"
                )
        return db
    # a plain path: percent-encoded in the URL, so '?', '#' and '%' stay part of the name
    path = str(Path(db).expanduser().resolve())
    return URL.create("sqlite", database=path).render_as_string(hide_password=False)


def sqlite_path(url: str) -> Path | None:
    """The file behind a sqlite URL, or None for other backends and in-memory databases."""
    u = make_url(url)
    if u.get_backend_name() != "sqlite" or u.database in (None, "", ":memory:"):
        return None
    return Path(u.database)


def where(url: str) -> str:
    """The store as an error message names it: the SQLite file, or the URL without its
    password."""
    path = sqlite_path(url)
    return str(path) if path else make_url(url).render_as_string(hide_password=True)


def _make_engine(url: str, readonly: bool = False) -> Engine:
    """The database's engine (its Dialect's): a writer, or a reader that cannot change it."""
    return dialect_of(url).engine(url, readonly=readonly)


def _foreign_tables(url: str) -> list[str]:
    """Tables in the database that are not seqbench's (another application's data)."""
    ours = SEQBENCH_TABLES | LATER_TABLES | {"sqlite_sequence", VERSION_TABLE, *VIEWS}
    tables = dialect_of(url).inspect(url)[1]
    return sorted(t for t in tables - ours if not t.startswith("sqlite_"))


def inspect_revision(url: str, *, writable: bool = True) -> tuple[str | None, bool]:
    """(current revision, whether the database holds seqbench tables), read-only.
    `writable=False` accepts a SQLite file the user may not write."""
    rev, tables = dialect_of(url).inspect(url, writable=writable)
    return rev, bool(tables & SEQBENCH_TABLES)


def _check_revision(rev: str | None, has_tables: bool, where: str) -> bool:
    """True if the database must be created (migrated from empty); raise if it is unusable."""
    if rev == HEAD_REVISION:  # the common case decided without reading the migration scripts
        return False
    head = migrate.head_revision()
    if rev is None:
        if has_tables:
            raise StoreError(
                f"{where} has seqbench tables but no {migrate.VERSION_TABLE} table; "
                "it was not created by seqbench"
            )
        return True
    if rev not in migrate.known_revisions():
        raise StoreError(
            f"{where} is at revision {rev}, unknown to this seqbench (head {head}); "
            "it was written by a newer seqbench: upgrade seqbench"
        )
    raise StoreError(
        f"{where} is at revision {rev}, behind this seqbench's {head}: "
        "run `seqbench db upgrade` (SQLite files are backed up first)"
    )


def check_readable(db: str | os.PathLike | None) -> str:
    """The URL of the store at `db` once it is known to be readable as it is: what
    open_store(db, "read") checks (a missing store, another revision, a file that is not
    seqbench's raise StoreError), without building a Store. Creates and changes nothing."""
    url = resolve_url(db)
    named = where(url)
    rev, has_tables = inspect_revision(url, writable=False)
    if _check_revision(rev, has_tables, named):
        raise StoreError(f"no seqbench database at {named}")
    return url


def integrity_problems(db: str | os.PathLike | None, *, quick: bool = False) -> list[str]:
    """What the database's own check (SQLite's integrity_check, or the cheaper quick_check)
    finds wrong in the store, read-only: [] when sound, and for a store not there yet."""
    url = resolve_url(db)
    return dialect_of(url).integrity(url, quick=quick)
