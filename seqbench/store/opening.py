"""The one way into a store, for every entry point (the CLI, the api, the dashboard, scripts):
open_store(db, mode). Importing it costs nothing: the lean reader needs only the standard
library, and SQLAlchemy is imported when a Store is opened."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from seqbench.store.results import ReadStore

if TYPE_CHECKING:
    from seqbench.store.store import Store

MODES = ("write", "update", "read", "lean")
F = TypeVar("F", bound=Callable[..., Any])


def open_store(
    db: str | os.PathLike | None = None, mode: str = "write", *, reap: bool | None = None
) -> Store | ReadStore:
    """The store at `db` (a path or a SQLAlchemy URL; None: ./seqbench.db), opened for `mode`:

    - "write": a Store, the database created at head if brand-new;
    - "update": a Store that writes to a database that must already exist (naming a run,
      saving a baseline: on a path with no store, "no seqbench database", and no file made);
    - "read": a Store that never creates and never changes a byte, on a file the user may not
      write (a command that only reads and needs every read: a run by name, its config);
    - "lean": the fastest reader, a ReadStore over one read-only connection to a SQLite store
      at head, without SQLAlchemy (a read-only Store for anything else): what reports, the
      dashboard's pages and `query` read through.

    `reap` (default: when writing) marks the runs whose process died crashed
    (`Store.reap_stale`); the CLI's read commands ask for it too, the one write they make, and
    only when such a run is there. A database that holds another application's tables is not
    given seqbench's unless asked (`seqbench db upgrade`). Raises StoreError, leaving the file
    unchanged, if the database cannot be used as is. Close it with `dispose()` (or `with`)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "lean":
        from seqbench.store.query import Reader
        from seqbench.store.sqlite_file import open_readable_sqlite

        opened = open_readable_sqlite(db)
        if opened is not None:
            path, connection = opened
            return ReadStore(str(path), Reader(str(path), (path, connection), checked=True))
    from seqbench.store.database import open_database

    writes = mode in ("write", "update")
    return open_database(
        db, readonly=not writes, reap=reap if writes else bool(reap), create=mode == "write"
    )


def reads(fn: F) -> F:
    """A read over a store that also takes its place by path: `fn(store, ...)` may be given
    a store, a path or URL, or None (./seqbench.db) first; a store is used as it is, anything
    else is opened lean for the call and closed after it (sqlite-utils' shape: one function,
    called by the CLI with the store it opened and by a script with a path)."""

    @functools.wraps(fn)
    def read(db: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(db, ReadStore):
            return fn(db, *args, **kwargs)
        store = open_store(db, "lean")
        try:
            return fn(store, *args, **kwargs)
        finally:
            store.dispose()

    return read  # type: ignore[return-value]
