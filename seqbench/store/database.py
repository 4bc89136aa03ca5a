"""A database as a seqbench store (SQLite file or any SQLAlchemy URL): whether one is there,
opening it as a Store, and upgrading it to head.

Opening is careful: a path that is a directory, a file that is not SQLite, a database from a
newer seqbench, or one behind head all stop with a one-line :class:`StoreError` and leave the
file byte-for-byte unchanged (the checks read it through a read-only connection first).
A brand-new database is migrated to head. The way in is store/opening.open_store.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from seqbench.errors import StoreError
from seqbench.store import migrate
from seqbench.store.dialect import dialect_of
from seqbench.store.engine import (
    _check_revision,
    _foreign_tables,
    _make_engine,
    inspect_revision,
    integrity_problems,
    resolve_url,
    sqlite_path,
)
from seqbench.store.engine import where as store_where
from seqbench.store.names import HEAD_REVISION
from seqbench.store.store import Store


def store_exists(db: str | os.PathLike | None) -> bool:
    """Whether there is a seqbench store at `db` yet (nothing is created or changed)."""
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None:
        return path.exists() and path.stat().st_size > 0
    rev, has_tables = inspect_revision(url, writable=False)
    return rev is not None or has_tables


def open_database(
    db: str | os.PathLike | None = None,
    *,
    create: bool = True,
    readonly: bool = False,
    reap: bool | None = None,
) -> Store:
    """Open (and, if brand-new, create at head) the store at `db` as a Store (SQLAlchemy): a
    path or a SQLAlchemy URL. The way in is store/opening.open_store, which calls this.

    `readonly=True` (the commands that only read): never creates, never changes a byte, and
    accepts a file the user may not write. `reap` (default: when writable) marks the runs
    whose process died crashed (`Store.reap_stale`); the CLI's read commands ask for it too,
    the one write they make, and only when such a run is there. A database that holds another
    application's tables is not given seqbench's unless asked (`seqbench db upgrade`).
    Raises StoreError, leaving the file unchanged, if the database cannot be used as is.
    """
    url = resolve_url(db)
    where = store_where(url)
    rev, has_tables = inspect_revision(url, writable=not readonly)
    needs_create = _check_revision(rev, has_tables, where)
    if needs_create and (readonly or not create):
        raise StoreError(f"no seqbench database at {where}")
    if needs_create:
        foreign = _foreign_tables(url)
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise StoreError(
                f"{where} holds another application's tables ({shown}) and no seqbench schema; "
                "to add seqbench's tables to it, run `seqbench db upgrade`"
            )
    if not readonly and not needs_create:  # the database's own quick check
        problems = integrity_problems(url, quick=True)
        if problems:
            raise StoreError(
                f"the store {where} is damaged ({problems[0]}); nothing was written. "
                "`seqbench db check` lists the problems"
            )
    store = Store(url, readonly=readonly)
    if (not readonly if reap is None else reap) and not needs_create:
        store.reap_stale()  # runs whose process died: crashed, before anything else reads them
    if needs_create:
        try:
            migrate.upgrade(store.engine)
        except (OperationalError, IntegrityError, ProgrammingError) as e:
            if _created_by_another(url, e):
                return store
            store.dispose()
            raise StoreError(f"cannot create the database at {where}: {e.orig}") from e
        store._file_id = store._identity()  # the file exists now
    return store


def _created_by_another(url: str, error: Exception) -> bool:
    """Two processes that find the same new database (two sweep drivers started at once) both
    try to create it: the loser gets "database is locked" (SQLite, outside its busy handler)
    or a duplicate catalog entry (PostgreSQL's CREATE TABLE racing another). True once the
    winner's schema is there at head (waiting up to the busy timeout)."""
    import time

    text = str(getattr(error, "orig", error))
    if not any(w in text for w in ("locked", "duplicate key", "already exists")):
        return False
    from seqbench.store.sqlite import BUSY_TIMEOUT_S

    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if inspect_revision(url)[0] == HEAD_REVISION:
                return True
        except StoreError:
            pass
        time.sleep(0.1)
    return False


def upgrade_store(db: str | os.PathLike | None = None) -> tuple[str | None, str, Path | None]:
    """Upgrade a database to head, backing up a SQLite file first.

    Returns (revision before, revision after, backup path or None).
    """
    url = resolve_url(db)
    where = store_where(url)
    rev, has_tables = inspect_revision(url)
    head = migrate.head_revision()
    if rev is not None and rev not in migrate.known_revisions():
        raise StoreError(f"{where} is at revision {rev}, unknown to this seqbench (head {head})")
    if rev is None and has_tables:
        _check_revision(rev, has_tables, where)
    backup = None
    if rev is not None and rev != head:
        backup = dialect_of(url).backup(url)
    if rev != head:
        engine = _make_engine(url)
        try:
            migrate.upgrade(engine)
        finally:
            engine.dispose()
    return rev, head, backup
